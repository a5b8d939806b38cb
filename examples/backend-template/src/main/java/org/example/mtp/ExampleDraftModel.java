package org.example.mtp;

import java.util.List;
import org.mtporacle.api.DraftModel;
import org.mtporacle.api.DraftRows;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.MtpWeights;
import org.mtporacle.api.RowCheckpoint;
import org.mtporacle.reference.block.MtpBlock;
import org.mtporacle.reference.block.TargetHead;
import org.mtporacle.reference.kernels.KernelMode;
import org.mtporacle.reference.kernels.Kernels;

/**
 * The model loaded into the backend: its weights in the engine's form (here the reference's block and head over
 * scalar kernels), and the row groups opened on it.
 */
final class ExampleDraftModel implements DraftModel {
    private final MtpModel model;
    private final Kernels kernels = new Kernels(KernelMode.SCALAR, 1);
    private final MtpBlock block;
    private final TargetHead head;
    private volatile boolean closed;

    ExampleDraftModel(MtpModel model) {
        this.model = model;
        MtpWeights resident = Kernels.offHeap(model.weights()); // the engine's copy of the weights
        this.block = new MtpBlock(model.config(), resident, kernels);
        this.head = new TargetHead(resident, kernels);
    }

    @Override
    public MtpModel model() {
        return model;
    }

    @Override
    public String numerics() {
        return "example: f32, the reference's scalar kernels";
    }

    @Override
    public DraftRows openRows(List<RowCheckpoint> checkpoints) {
        if (closed) {
            throw MtpException.illegalState("openRows: the model is closed");
        }
        ExampleDraftRows rows = new ExampleDraftRows(this);
        rows.append(checkpoints);
        return rows;
    }

    boolean isClosed() {
        return closed;
    }

    MtpBlock block() {
        return block;
    }

    TargetHead head() {
        return head;
    }

    @Override
    public void close() {
        closed = true;
        kernels.close();
    }
}
