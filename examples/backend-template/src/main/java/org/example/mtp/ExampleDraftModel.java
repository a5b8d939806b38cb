package org.example.mtp;

import java.util.List;
import org.mtporacle.api.DraftModel;
import org.mtporacle.api.DraftRows;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.RowCheckpoint;
import org.mtporacle.reference.ReferenceBackend;
import org.mtporacle.reference.ReferenceDraftModel;
import org.mtporacle.reference.kernels.KernelMode;

/**
 * The model loaded into the backend. This template computes with the reference's scalar kernels: replace the
 * delegate with your engine's weights and row groups.
 */
final class ExampleDraftModel implements DraftModel {
    private final ReferenceDraftModel engine;

    ExampleDraftModel(MtpModel model) {
        this.engine = ReferenceBackend.load(model, KernelMode.SCALAR, 1);
    }

    @Override
    public MtpModel model() {
        return engine.model();
    }

    @Override
    public String numerics() {
        return "example: f32, the reference's scalar kernels";
    }

    @Override
    public DraftRows openRows(List<RowCheckpoint> checkpoints) {
        return engine.openRows(checkpoints);
    }

    @Override
    public void close() {
        engine.close();
    }
}
