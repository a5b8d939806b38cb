package org.mtporacle.reference.target;

import java.util.Arrays;
import java.util.List;

import org.mtporacle.api.AbstractTargetRows;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MtpConfig;
import org.mtporacle.api.TargetCheckpoint;
import org.mtporacle.api.TargetConfig;
import org.mtporacle.api.TargetRouterChoices;
import org.mtporacle.reference.block.RowKv;

/**
 * The reference target rows (spec §13.3) on the shared {@link AbstractTargetRows} skeleton. Each row owns its unpadded
 * state ({@link TargetRowState}). A verify keeps the GDN conv window and recurrent state after every verified token
 * (the snapshot design engines call "per-position states"), and a commit selects the one after the row's last kept
 * token; the attention caches need no snapshot, since a row's processed count decides which positions are read.
 */
public final class ReferenceTargetRows extends AbstractTargetRows<ReferenceTargetRows.Rows>
        implements TargetRouterChoices {
    private final ReferenceTarget target;
    private final HybridTarget forward;
    private final TargetConfig c;
    private final StateArrays arrays;
    private TargetTrace nextTrace;
    /** MoE router choices of the last prefill or verify, and the chooser armed for the next one (spec §12.5). */
    private final java.util.ArrayList<TargetRouterChoices.Choice> routed = new java.util.ArrayList<>();
    private ExpertChooser nextChooser;
    private ExpertChooser chooser;

    /**
     * Fault injection for tests (package-private, null in production): consulted at every internal step of the
     * mutating calls, so a test can make each step throw in turn and prove that a failure leaves the group unchanged.
     */
    FaultPoints faultPoints;

    /** A test hook called at each internal step; it may throw anything to simulate a failure there. */
    @FunctionalInterface
    interface FaultPoints {
        void reached(String call, String step);
    }

    /**
     * Every row's state, replaced (never changed) by each call except for cache positions past the processed counts.
     *
     * @param rows  [B] each row's state after its processed tokens (during a round: after the whole verify)
     * @param round during a round, the GDN states after each verified token, by GDN layer; else null
     */
    record Rows(TargetRowState[] rows, GdnLayer.States[] round) {
    }

    ReferenceTargetRows(ReferenceTarget target) {
        super(target.model(), new Rows(new TargetRowState[0], null));
        this.target = target;
        this.forward = target.forward();
        this.c = target.model().config();
        this.arrays = new StateArrays(c.gdn().stateSize());
    }

    /** Records the intermediates of the next computing call's (last) forward into {@code trace}. */
    public void traceNextCall(TargetTrace trace) {
        this.nextTrace = trace;
    }

    /** Picks a MoE layer's experts for one token (spec §12.5): usually {@code chosen}, the reference's own top-k. */
    @FunctionalInterface
    public interface ExpertChooser {
        /**
         * @param row      the contract row
         * @param position the token's position in its row
         * @param layer    the decoder layer
         * @param probs    the router probabilities {@code [E]} (a copy)
         * @param chosen   the reference's top-k in slot order (a copy)
         * @return {@code K} distinct experts in {@code [0, E)}
         */
        int[] choose(int row, int position, int layer, float[] probs, int[] chosen);
    }

    @Override
    public List<TargetRouterChoices.Choice> lastRouterChoices() {
        return List.copyOf(routed);
    }

    /**
     * For the next {@code prefill} or {@code verify} only: every MoE layer's experts at every token come from
     * {@code next} (the kit continues on a backend's choices, spec §12.5).
     */
    public void chooseExpertsNextCall(ExpertChooser next) {
        this.nextChooser = next;
    }

    /** Records each MoE layer's experts per token and applies the armed chooser. */
    private ExpertChooser routing() {
        ExpertChooser c = chooser;
        return (row, position, layer, probs, chosen) -> {
            int[] used = c == null ? chosen : c.choose(row, position, layer, probs, chosen);
            routed.add(new TargetRouterChoices.Choice(row, position, layer, used));
            return used;
        };
    }

    @Override
    protected boolean modelClosed() {
        return target.isClosed();
    }

    @Override
    protected Rows appendRows(Rows s, List<TargetCheckpoint> checkpoints) {
        int b = s.rows().length;
        TargetRowState[] rows = Arrays.copyOf(s.rows(), b + checkpoints.size());
        for (int i = 0; i < checkpoints.size(); i++) {
            fault("append", "build row");
            TargetCheckpoint cp = checkpoints.get(i);
            rows[b + i] = cp == null ? forward.empty() : restore(cp);
        }
        return new Rows(rows, null);
    }

    /** A row's state copied out of a (validated) checkpoint. */
    private TargetRowState restore(TargetCheckpoint cp) {
        TargetConfig.Gdn g = c.gdn();
        MtpConfig a = c.shape();
        int nGdn = c.count(TargetConfig.LayerType.LINEAR_ATTENTION);
        int nFull = c.count(TargetConfig.LayerType.FULL_ATTENTION);
        int p = cp.processedTokens();
        float[][] conv = split(nGdn == 0 ? null : cp.convWindows().toFloatArray(), nGdn, g.windowSize());
        float[][] rec = split(nGdn == 0 ? null : cp.recurrentStates().toFloatArray(), nGdn, g.stateSize());
        int kvSize = a.numKvHeads() * p * a.headDim();
        float[][] keys = split(nFull == 0 ? null : cp.keys().toFloatArray(), nFull, kvSize);
        float[][] values = split(nFull == 0 ? null : cp.values().toFloatArray(), nFull, kvSize);
        RowKv[] kv = new RowKv[nFull];
        for (int i = 0; i < nFull; i++) {
            kv[i] = RowKv.of(a.numKvHeads(), a.headDim(), p, keys[i], values[i]);
        }
        return new TargetRowState(conv, rec, kv);
    }

    @Override
    protected Rows keepRows(Rows s, int[] keep) {
        TargetRowState[] rows = new TargetRowState[keep.length];
        for (int i = 0; i < keep.length; i++) {
            fault("filterRows", "keep row");
            rows[i] = s.rows()[keep[i]];
        }
        return new Rows(rows, null);
    }

    @Override
    protected Forwarded<Rows> forward(Rows s, int[] at, int[] ids, int n, Pass pass) {
        boolean verify = pass == Pass.VERIFY;
        fault(verify ? "verify" : "prefill", "target forward");
        TargetTrace trace = nextTrace;
        arrays.begin();
        HybridTarget.Result r = forward.forward(s.rows(), at, ids, n, verify,
                !verify && n > 1 && target.prefillForm() == ReferenceTarget.PrefillForm.CHUNKED, verify, arrays, trace,
                routing());
        int b = s.rows().length;
        TargetRowState[] rows = new TargetRowState[b];
        for (int i = 0; i < b; i++) {
            rows[i] = select(s.rows()[i], r.states(), i, verify ? n : 1);
        }
        int v = c.shape().vocabSize();
        int h = c.shape().hiddenSize();
        return new Forwarded<>(HostTensor.ofFloats(r.logits(), b, verify ? n : 1, v),
                HostTensor.ofFloats(r.preNorm(), b, n, h), HostTensor.ofFloats(r.postNorm(), b, n, h),
                new Rows(rows, verify ? r.states() : null));
    }

    @Override
    protected Rows rollback(Rows verified, int[] before, int[] keep) {
        int b = verified.rows().length;
        TargetRowState[] rows = new TargetRowState[b];
        for (int i = 0; i < b; i++) {
            fault("commit", "select state");
            rows[i] = select(verified.rows()[i], verified.round(), i, keep[i]);
        }
        return new Rows(rows, null);
    }

    /** Row {@code i}'s state with every GDN layer's window and state after its {@code kept}-th token of the forward. */
    private static TargetRowState select(TargetRowState row, GdnLayer.States[] states, int i, int kept) {
        float[][] conv = new float[states.length][];
        float[][] rec = new float[states.length][];
        for (int l = 0; l < states.length; l++) {
            float[][] cs = states[l].conv()[i];
            float[][] rs = states[l].rec()[i];
            conv[l] = cs[Math.min(kept, cs.length) - 1];
            rec[l] = rs[Math.min(kept, rs.length) - 1];
        }
        return new TargetRowState(conv, rec, row.kv());
    }

    @Override
    protected RowState export(Rows s, int row, int processed) {
        TargetConfig.Gdn g = c.gdn();
        MtpConfig a = c.shape();
        TargetRowState r = s.rows()[row];
        int nGdn = r.conv().length;
        int nFull = r.kv().length;
        HostTensor conv = nGdn == 0 ? null : HostTensor.ofFloats(join(r.conv()), nGdn, g.convDim(),
                g.convKernel() - 1);
        HostTensor rec = nGdn == 0 ? null : HostTensor.ofFloats(join(r.rec()), nGdn, g.numValueHeads(),
                g.keyHeadDim(), g.valueHeadDim());
        float[][] keys = new float[nFull][];
        float[][] values = new float[nFull][];
        for (int i = 0; i < nFull; i++) {
            keys[i] = r.kv()[i].export(true, processed);
            values[i] = r.kv()[i].export(false, processed);
        }
        HostTensor k = nFull == 0 ? null : HostTensor.ofFloats(join(keys), nFull, a.numKvHeads(), processed,
                a.headDim());
        HostTensor v = nFull == 0 ? null : HostTensor.ofFloats(join(values), nFull, a.numKvHeads(), processed,
                a.headDim());
        return new RowState(conv, rec, k, v);
    }

    @Override
    protected <T> T onBackend(String call, java.util.function.Supplier<T> work) {
        boolean computes = call.equals("prefill") || call.equals("verify");
        if (computes) {
            routed.clear();
            chooser = nextChooser;
            nextChooser = null;
        }
        try {
            return work.get();
        } finally {
            nextTrace = null;
            if (computes) {
                chooser = null;
            }
        }
    }

    @Override
    protected void discard(Rows superseded, Rows current) {
        arrays.reclaim(superseded, current);
    }

    @Override
    protected void release(Rows s) {
        // heap arrays only
    }

    @Override
    protected void reached(String call, String step) {
        fault(call, step);
    }

    private void fault(String call, String step) {
        if (faultPoints != null) {
            faultPoints.reached(call, step);
        }
    }

    private static float[][] split(float[] all, int parts, int size) {
        float[][] out = new float[parts][];
        for (int i = 0; i < parts; i++) {
            out[i] = Arrays.copyOfRange(all, i * size, (i + 1) * size);
        }
        return out;
    }

    private static float[] join(float[][] parts) {
        int size = parts.length == 0 ? 0 : parts[0].length;
        float[] out = new float[parts.length * size];
        for (int i = 0; i < parts.length; i++) {
            System.arraycopy(parts[i], 0, out, i * size, size);
        }
        return out;
    }
}
