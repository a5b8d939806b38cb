package org.mtporacle.reference.target;

import java.util.List;

import org.mtporacle.api.LoadedTarget;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.TargetCheckpoint;
import org.mtporacle.api.TargetModel;
import org.mtporacle.api.TargetRows;
import org.mtporacle.api.TargetWeights;
import org.mtporacle.api.TargetConfig;
import org.mtporacle.api.LinearWeight;
import org.mtporacle.api.MlpWeights;
import org.mtporacle.reference.kernels.Kernels;

import java.util.ArrayList;

/**
 * A hybrid target loaded into the reference (spec §13): the forward over the caller's weights (in-memory tensors
 * copied off-heap once, {@link Kernels#offHeap}), and the row groups on it. A verify always runs the recurrent form,
 * the normative one; a prefill runs the recurrent form too unless the target is opened with {@link PrefillForm#CHUNKED}.
 */
public final class ReferenceTarget implements LoadedTarget {
    /** Which GDN kernel a prefill runs (spec §13.2); verifies always run the recurrent form. */
    public enum PrefillForm {
        /** Token by token: the normative form, the same arithmetic as a verify. */
        RECURRENT,
        /** Chunks of 64 tokens (transformers' prefill form): equal up to f32 reassociation. */
        CHUNKED
    }

    private final TargetModel model;
    private final Kernels kernels;
    private final HybridTarget forward;
    private final PrefillForm prefillForm;
    private volatile boolean closed;

    public ReferenceTarget(TargetModel model, Kernels kernels, PrefillForm prefillForm) {
        this.model = model;
        this.kernels = kernels;
        this.prefillForm = prefillForm;
        this.forward = new HybridTarget(new TargetModel(model.config(), resident(model.weights()), model.identity(),
                model.source(), model.layout(), model.warnings()), kernels);
    }

    /** A target with recurrent prefills. */
    public ReferenceTarget(TargetModel model, Kernels kernels) {
        this(model, kernels, PrefillForm.RECURRENT);
    }

    @Override
    public TargetModel model() {
        return model;
    }

    @Override
    public String numerics() {
        return "f32 (" + kernels.describe() + "), prefill " + prefillForm.name().toLowerCase();
    }

    public PrefillForm prefillForm() {
        return prefillForm;
    }

    @Override
    public TargetRows openRows(List<TargetCheckpoint> checkpoints) {
        return openReferenceRows(checkpoints);
    }

    /** {@link #openRows} typed as the reference group, which also offers traced forwards. */
    public ReferenceTargetRows openReferenceRows(List<TargetCheckpoint> checkpoints) {
        if (closed) {
            throw MtpException.illegalState("openRows: the target is closed");
        }
        ReferenceTargetRows rows = new ReferenceTargetRows(this);
        rows.append(checkpoints);
        return rows;
    }

    HybridTarget forward() {
        return forward;
    }

    public boolean isClosed() {
        return closed;
    }

    public Kernels kernels() {
        return kernels;
    }

    @Override
    public void close() {
        if (!closed) {
            closed = true;
            kernels.close();
        }
    }

    /** {@code w} with every linear in native memory (the embedding and a tied head stay one object). */
    private static TargetWeights resident(TargetWeights w) {
        LinearWeight embedding = Kernels.offHeap(w.embedding());
        LinearWeight head = w.tied() ? embedding : Kernels.offHeap(w.head());
        List<TargetWeights.Layer> layers = new ArrayList<>();
        for (TargetWeights.Layer l : w.layers()) {
            TargetWeights.Mixer mixer = switch (l.mixer()) {
                case TargetWeights.Gdn g -> new TargetWeights.Gdn(Kernels.offHeap(g.inProjQkv()),
                        Kernels.offHeap(g.inProjZ()), Kernels.offHeap(g.inProjB()), Kernels.offHeap(g.inProjA()),
                        g.conv(), g.aLog(), g.dtBias(), g.norm(), Kernels.offHeap(g.outProj()));
                case TargetWeights.Attention a -> new TargetWeights.Attention(Kernels.offHeap(a.qProj()),
                        Kernels.offHeap(a.kProj()), Kernels.offHeap(a.vProj()), Kernels.offHeap(a.oProj()), a.qNorm(),
                        a.kNorm());
            };
            MlpWeights mlp = Kernels.offHeap(l.mlp());
            layers.add(new TargetWeights.Layer(l.inputNorm(), mixer, l.postAttentionNorm(), mlp));
        }
        return new TargetWeights(embedding, layers, w.finalNorm(), head);
    }
}
