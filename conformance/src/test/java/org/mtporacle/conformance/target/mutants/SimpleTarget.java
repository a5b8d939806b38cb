package org.mtporacle.conformance.target.mutants;

import org.mtporacle.api.DType;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.LoadedTarget;
import org.mtporacle.api.MlpWeights;
import org.mtporacle.api.MtpConfig;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.TargetCheckpoint;
import org.mtporacle.api.TargetConfig;
import org.mtporacle.api.TargetModel;
import org.mtporacle.api.TargetOutput;
import org.mtporacle.api.TargetRows;
import org.mtporacle.api.TargetWeights;
import org.mtporacle.conformance.target.lockstep.TargetStateExport;
import org.mtporacle.conformance.target.lockstep.TargetStateLayout;
import org.mtporacle.reference.kernels.KernelMode;
import org.mtporacle.reference.kernels.Kernels;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A second, standalone and deliberately plain implementation of the target rows (spec §13.3), sharing no code with
 * {@code AbstractTargetRows} or the reference's target: its own argument checks, bookkeeping and failure atomicity
 * (compute on copies, assign at the end), one row at a time, layer by layer, the GDN mixer written out from spec §13.2
 * (only the chunked delta rule of a prefill, and the linear algebra, come from the reference kernels, scalar mode),
 * and a routed MoE MLP written out from spec §12.3.
 * It stores the state the way vLLM and transformers do, the recurrent state {@code [Hv, Dv, Dk]} and a conv window of
 * {@code K} columns, and declares so ({@link TargetStateExport}). Two rollback designs (research §2): per-position
 * snapshots selected at commit, or the pre-verify state replayed over the kept tokens.
 *
 * <p>With {@link TargetMutation#NONE} it must pass lockstep against the reference; with any other mutation the kit
 * must catch it.
 */
public final class SimpleTarget implements LoadedTarget {
    /** How a commit rolls a row back (research/gdn-anchors.md §2). */
    public enum Rollback {
        /** (a) keep the state after every verified token, select the one after the last kept token. */
        SNAPSHOTS,
        /** (b) keep the pre-verify state and re-run the kept tokens. */
        REPLAY
    }

    /** The chunk of the chunked prefill (transformers' 64). */
    static final int CHUNK = 64;

    private final TargetModel model;
    private final TargetConfig c;
    private final MtpConfig a;
    private final TargetConfig.Gdn g;
    private final TargetWeights w;
    private final TargetMutation bug;
    private final Rollback rollback;
    private final Kernels k = new Kernels(KernelMode.SCALAR, 1);
    private final int nGdn;
    private final int nFull;
    private volatile boolean closed;

    public SimpleTarget(TargetModel model, TargetMutation bug, Rollback rollback) {
        this.model = model;
        this.c = model.config();
        this.a = c.shape();
        this.g = c.gdn();
        this.w = model.weights();
        this.bug = bug;
        this.rollback = rollback;
        this.nGdn = c.count(TargetConfig.LayerType.LINEAR_ATTENTION);
        this.nFull = c.count(TargetConfig.LayerType.FULL_ATTENTION);
    }

    public SimpleTarget(TargetModel model, TargetMutation bug) {
        this(model, bug, bug.rollback());
    }

    @Override
    public TargetModel model() {
        return model;
    }

    @Override
    public String numerics() {
        return "simple f32 scalar, " + rollback.name().toLowerCase() + " rollback (" + bug + ")";
    }

    /** The layout this target declares: the truth, except for the transposed-state mutant. */
    public TargetStateLayout declaredLayout() {
        return new TargetStateLayout(bug == TargetMutation.TRANSPOSED_STATE ? TargetStateLayout.Orientation.DK_DV
                : TargetStateLayout.Orientation.DV_DK, TargetStateLayout.ConvColumns.K);
    }

    @Override
    public TargetRows openRows(List<TargetCheckpoint> checkpoints) {
        if (closed) {
            throw MtpException.illegalState("openRows: the simple target is closed");
        }
        Rows rows = new Rows();
        rows.append(checkpoints);
        return rows;
    }

    @Override
    public void close() {
        closed = true;
    }

    // ---- one row's state -------------------------------------------------------------------------------------------

    /** One row: P, per GDN layer its window {@code [C, K]} and state {@code [Hv, Dv, Dk]}, per full layer its KV. */
    private final class Row {
        int p;
        float[][] conv = new float[nGdn][g.convDim() * g.convKernel()];
        float[][] rec = new float[nGdn][g.stateSize()];
        List<List<float[]>> keys = new ArrayList<>();   // [nFull][P][nKV·D]
        List<List<float[]>> values = new ArrayList<>();
        /** The last verify's per-position states: [t][nGdn][·]. */
        float[][][] convSlots;
        float[][][] recSlots;

        Row() {
            for (int i = 0; i < nFull; i++) {
                keys.add(new ArrayList<>());
                values.add(new ArrayList<>());
            }
        }

        Row copy() {
            Row r = new Row();
            r.p = p;
            for (int l = 0; l < nGdn; l++) {
                r.conv[l] = conv[l].clone();
                r.rec[l] = rec[l].clone();
            }
            for (int i = 0; i < nFull; i++) {
                r.keys.set(i, new ArrayList<>(keys.get(i)));
                r.values.set(i, new ArrayList<>(values.get(i)));
            }
            r.convSlots = convSlots;
            r.recSlots = recSlots;
            return r;
        }

        void truncateKv(int positions) {
            for (int i = 0; i < nFull; i++) {
                keys.set(i, new ArrayList<>(keys.get(i).subList(0, positions)));
                values.set(i, new ArrayList<>(values.get(i).subList(0, positions)));
            }
        }
    }

    // ---- the rows --------------------------------------------------------------------------------------------------

    private final class Rows implements TargetRows, TargetStateExport {
        List<Row> rows = new ArrayList<>();
        boolean round;
        int width;
        List<Row> beforeRound;
        int[][] roundTokens;
        boolean groupClosed;
        final AtomicReference<String> busy = new AtomicReference<>();

        /** One call at a time, none after close or after the target closed (spec §11.11), written plainly. */
        private <T> T guarded(String call, java.util.function.Supplier<T> body) {
            if (!busy.compareAndSet(null, call)) {
                throw MtpException.illegalState(call + ": " + busy.get() + " is in progress on this group");
            }
            try {
                if (groupClosed) {
                    throw MtpException.illegalState(call + ": the group is closed");
                }
                if (closed) {
                    throw MtpException.illegalState(call + ": the simple target is closed");
                }
                return body.get();
            } finally {
                busy.set(null);
            }
        }

        private void noRound(String call) {
            if (round) {
                throw MtpException.illegalState(call + ": a verify round is open");
            }
        }

        @Override
        public int rowCount() {
            return rows.size();
        }

        @Override
        public int[] processedTokens() {
            return rows.stream().mapToInt(r -> r.p).toArray();
        }

        @Override
        public void append(List<TargetCheckpoint> cps) {
            guarded("append", () -> {
                noRound("append");
                if (cps == null) {
                    throw MtpException.invalidArgument("append: null list");
                }
                List<Row> added = new ArrayList<>();
                for (int i = 0; i < cps.size(); i++) {
                    added.add(cps.get(i) == null ? new Row() : restore(i, cps.get(i)));
                }
                rows.addAll(added);
                return null;
            });
        }

        @Override
        public void filterRows(int[] keep) {
            guarded("filterRows", () -> {
                noRound("filterRows");
                if (keep == null) {
                    throw MtpException.invalidArgument("filterRows: keep is null");
                }
                Set<Integer> seen = new HashSet<>();
                for (int i : keep) {
                    if (i < 0 || i >= rows.size() || !seen.add(i)) {
                        throw MtpException.invalidArgument("filterRows: bad or repeated index " + i);
                    }
                }
                List<Row> kept = new ArrayList<>();
                for (int i : keep) {
                    kept.add(rows.get(i));
                }
                rows = kept;
                return null;
            });
        }

        @Override
        public TargetOutput prefill(HostTensor tokens) {
            return guarded("prefill", () -> {
                noRound("prefill");
                if (rows.isEmpty()) {
                    throw MtpException.illegalState("prefill: no rows");
                }
                int[][] ids = ids("prefill", tokens);
                int len = ids[0].length;
                List<Row> next = new ArrayList<>();
                float[][] logits = new float[rows.size()][];
                float[][][] taps = new float[2][rows.size()][];
                for (int r = 0; r < rows.size(); r++) {
                    Row row = rows.get(r).copy();
                    Out o = forward(row, ids[r], len > 1, false);
                    logits[r] = Arrays.copyOfRange(o.logits, (len - 1) * a.vocabSize(), len * a.vocabSize());
                    taps[0][r] = o.pre;
                    taps[1][r] = o.post;
                    next.add(row);
                }
                rows = next;
                return output(logits, taps, 1, len);
            });
        }

        @Override
        public TargetOutput verify(HostTensor tokens) {
            return guarded("verify", () -> {
                noRound("verify");
                if (rows.isEmpty()) {
                    throw MtpException.illegalState("verify: no rows");
                }
                int[][] ids = ids("verify", tokens);
                int wd = ids[0].length;
                if (wd > 65) {
                    throw MtpException.invalidArgument("verify: width " + wd + " > 65");
                }
                for (int r = 0; r < rows.size(); r++) {
                    if (rows.get(r).p == 0) {
                        throw MtpException.illegalState("verify: row " + r + " is empty; prefill it first");
                    }
                }
                List<Row> before = new ArrayList<>(rows);
                List<Row> next = new ArrayList<>();
                float[][] logits = new float[rows.size()][];
                float[][][] taps = new float[2][rows.size()][];
                for (int r = 0; r < rows.size(); r++) {
                    Row row = rows.get(r).copy();
                    Out o = forward(row, ids[r], false, true);
                    logits[r] = o.logits;
                    taps[0][r] = o.pre;
                    taps[1][r] = o.post;
                    if (bug == TargetMutation.ZERO_DRAFT_STALE_SLOT && wd == 1) {
                        // the width-1 path writes the live state only; the slots keep the last spec step's
                        Row old = rows.get(r);
                        row.convSlots = old.convSlots != null ? old.convSlots : new float[][][] {old.conv};
                        row.recSlots = old.recSlots != null ? old.recSlots : new float[][][] {old.rec};
                    }
                    next.add(row);
                }
                rows = next;
                beforeRound = before;
                roundTokens = ids;
                width = wd;
                round = true;
                return output(logits, taps, wd, wd);
            });
        }

        @Override
        public void commit(int[] accepted) {
            guarded("commit", () -> {
                if (!round) {
                    throw MtpException.illegalState("commit: no verify round is open");
                }
                if (accepted == null || accepted.length != rows.size()) {
                    throw MtpException.invalidArgument("commit: accepted must have one entry per row");
                }
                for (int x : accepted) {
                    if (x < 0 || x >= width) {
                        throw MtpException.invalidArgument("commit: accepted " + x + " outside [0, " + (width - 1)
                                + "]");
                    }
                }
                rows = rollback == Rollback.SNAPSHOTS ? selectSnapshots(accepted) : replay(accepted);
                round = false;
                beforeRound = null;
                roundTokens = null;
                return null;
            });
        }

        private List<Row> selectSnapshots(int[] accepted) {
            List<Row> next = new ArrayList<>();
            for (int r = 0; r < rows.size(); r++) {
                Row verified = rows.get(r);
                Row row = verified.copy();
                int keep = accepted[r] + 1;
                int slot = bug == TargetMutation.SNAPSHOT_OFF_BY_ONE ? Math.min(keep, width - 1) : keep - 1;
                slot = Math.min(slot, verified.recSlots.length - 1);
                for (int l = 0; l < nGdn; l++) {
                    if (bug != TargetMutation.CONV_NOT_ROLLED_BACK) {
                        row.conv[l] = verified.convSlots[slot][l].clone();
                    }
                    if (bug != TargetMutation.STATE_NOT_ROLLED_BACK) {
                        row.rec[l] = verified.recSlots[slot][l].clone();
                    }
                }
                row.p = beforeRound.get(r).p + keep;
                row.truncateKv(row.p);
                next.add(row);
            }
            return next;
        }

        private List<Row> replay(int[] accepted) {
            int longest = 0;
            for (int x : accepted) {
                longest = Math.max(longest, x + 1);
            }
            List<Row> next = new ArrayList<>();
            for (int r = 0; r < rows.size(); r++) {
                Row row = beforeRound.get(r).copy();
                int keep = accepted[r] + 1;
                int fed = bug == TargetMutation.PADS_DECAY_STATE ? longest : keep;
                int[] ids = new int[fed]; // pads: id 0
                System.arraycopy(roundTokens[r], 0, ids, 0, keep);
                forward(row, ids, false, false);
                row.p = beforeRound.get(r).p + keep; // the pads are masked out of the attention …
                row.truncateKv(row.p);               // … but not out of the GDN state
                next.add(row);
            }
            return next;
        }

        @Override
        public TargetCheckpoint capture(int row) {
            return guarded("capture", () -> {
                noRound("capture");
                if (row < 0 || row >= rows.size()) {
                    throw MtpException.invalidArgument("capture: row " + row + " out of range");
                }
                Row r = rows.get(row);
                if (r.p == 0) {
                    throw MtpException.illegalState("capture: row " + row + " is empty");
                }
                NativeState s = state(r);
                TargetStateLayout layout = declaredLayout();
                return TargetCheckpoint.sealed(r.p, model.identity(),
                        nGdn == 0 ? null : HostTensor.ofFloats(layout.convToReference(s.conv(), nGdn, g), nGdn,
                                g.convDim(), g.convKernel() - 1),
                        nGdn == 0 ? null : HostTensor.ofFloats(layout.stateToReference(s.recurrent(), nGdn, g), nGdn,
                                g.numValueHeads(), g.keyHeadDim(), g.valueHeadDim()),
                        nFull == 0 ? null : HostTensor.ofFloats(s.keys(), nFull, a.numKvHeads(), r.p, a.headDim()),
                        nFull == 0 ? null : HostTensor.ofFloats(s.values(), nFull, a.numKvHeads(), r.p, a.headDim()));
            });
        }

        @Override
        public TargetStateLayout stateLayout() {
            return declaredLayout();
        }

        @Override
        public NativeState nativeState(int row) {
            return state(rows.get(row));
        }

        private NativeState state(Row r) {
            return new NativeState(r.p, join(r.conv), join(r.rec), kv(r.keys, r.p), kv(r.values, r.p));
        }

        @Override
        public boolean isClosed() {
            return groupClosed;
        }

        @Override
        public void close() {
            groupClosed = true;
            rows = new ArrayList<>();
        }

        /** Tokens {@code [B, L]} checked: I32/I64, one row per group row, L ≥ 1, ids in the vocabulary. */
        private int[][] ids(String call, HostTensor t) {
            if (t == null || (t.dtype() != DType.I32 && t.dtype() != DType.I64) || t.rank() != 2
                    || t.dim(0) != rows.size() || t.dim(1) < 1) {
                throw MtpException.invalidArgument(call + ": tokens must be [" + rows.size() + ", L ≥ 1] integers");
            }
            int[][] out = new int[t.dim(0)][t.dim(1)];
            for (int r = 0; r < out.length; r++) {
                for (int i = 0; i < out[r].length; i++) {
                    long id = t.getLong((long) r * out[r].length + i);
                    if (id < 0 || id >= a.vocabSize()) {
                        throw MtpException.invalidArgument(call + ": token " + id + " outside the vocabulary");
                    }
                    out[r][i] = (int) id;
                }
            }
            return out;
        }

        private TargetOutput output(float[][] logits, float[][][] taps, int n, int len) {
            int b = logits.length;
            int h = a.hiddenSize();
            boolean swap = bug == TargetMutation.WRONG_TAP;
            return new TargetOutput(HostTensor.ofFloats(join(logits), b, n, a.vocabSize()),
                    HostTensor.ofFloats(join(taps[swap ? 1 : 0]), b, len, h),
                    HostTensor.ofFloats(join(taps[swap ? 0 : 1]), b, len, h));
        }
    }

    /** A row's state rebuilt from a checkpoint, checked plainly (spec §13.3). */
    private Row restore(int i, TargetCheckpoint cp) {
        String where = "append: checkpoint " + i;
        if (!TargetCheckpoint.SCHEMA.equals(cp.schema()) || !model.identity().equals(cp.modelIdentity())) {
            throw MtpException.incompatibleCheckpoint(where + " is of another schema or target");
        }
        int p = cp.processedTokens();
        if (p < 1 || p > 1 << 20) {
            throw MtpException.incompatibleCheckpoint(where + ": P = " + p);
        }
        float[] conv = tensor(where, cp.convWindows(), nGdn, nGdn, g.convDim(), g.convKernel() - 1);
        float[] rec = tensor(where, cp.recurrentStates(), nGdn, nGdn, g.numValueHeads(), g.keyHeadDim(),
                g.valueHeadDim());
        float[] keys = tensor(where, cp.keys(), nFull, nFull, a.numKvHeads(), p, a.headDim());
        float[] values = tensor(where, cp.values(), nFull, nFull, a.numKvHeads(), p, a.headDim());
        if (cp.digest() == null || !cp.digest().equals(cp.contentDigest())) {
            throw MtpException.incompatibleCheckpoint(where + ": digest missing or wrong");
        }
        Row r = new Row();
        r.p = p;
        TargetStateLayout layout = declaredLayout();
        float[] nc = nGdn == 0 ? new float[0] : layout.convFromReference(conv, nGdn, g);
        float[] nr = nGdn == 0 ? new float[0] : layout.stateFromReference(rec, nGdn, g);
        for (int l = 0; l < nGdn; l++) {
            r.conv[l] = Arrays.copyOfRange(nc, l * r.conv[l].length, (l + 1) * r.conv[l].length);
            r.rec[l] = Arrays.copyOfRange(nr, l * g.stateSize(), (l + 1) * g.stateSize());
        }
        int d = a.headDim();
        int nKv = a.numKvHeads();
        for (int f = 0; f < nFull; f++) {
            for (int t = 0; t < p; t++) {
                float[] kk = new float[nKv * d];
                float[] vv = new float[nKv * d];
                for (int hd = 0; hd < nKv; hd++) {
                    System.arraycopy(keys, ((f * nKv + hd) * p + t) * d, kk, hd * d, d);
                    System.arraycopy(values, ((f * nKv + hd) * p + t) * d, vv, hd * d, d);
                }
                r.keys.get(f).add(kk);
                r.values.get(f).add(vv);
            }
        }
        return r;
    }

    private static float[] tensor(String where, HostTensor t, int layers, int... shape) {
        if (layers == 0) {
            if (t != null) {
                throw MtpException.incompatibleCheckpoint(where + ": a tensor the target has no layer for");
            }
            return new float[0];
        }
        if (t == null || t.dtype() != DType.F32 || !Arrays.equals(t.shape(), shape)) {
            throw MtpException.incompatibleCheckpoint(where + ": tensor " + (t == null ? "missing" : t.describe())
                    + ", expected F32 " + Arrays.toString(shape));
        }
        float[] v = t.toFloatArray();
        for (float x : v) {
            if (!Float.isFinite(x)) {
                throw MtpException.incompatibleCheckpoint(where + ": a non-finite element");
            }
        }
        return v;
    }

    // ---- the forward: one row, layer by layer -------------------------------------------------------------------

    /** A forward's logits {@code [s, V]} and taps {@code [s, H]}. */
    private record Out(float[] logits, float[] pre, float[] post) {
    }

    /**
     * Feeds {@code ids} to {@code row} (updated in place). {@code chunked}: the GDN recurrence in chunks of 64 (a
     * prefill); {@code slots}: keep every token's GDN state in the row's slots (a verify).
     */
    private Out forward(Row row, int[] ids, boolean chunked, boolean slots) {
        int s = ids.length;
        int h = a.hiddenSize();
        float[] x = new float[s * h];
        for (int t = 0; t < s; t++) {
            k.embed(x, t * h, w.embedding(), ids[t]);
        }
        if (slots) {
            row.convSlots = new float[s][nGdn][];
            row.recSlots = new float[s][nGdn][];
        }
        for (int l = 0; l < c.layerCount(); l++) {
            TargetWeights.Layer lw = w.layers().get(l);
            int slot = c.slot(l);
            float[] mixed = lw.mixer() instanceof TargetWeights.Gdn gdn
                    ? gdn(row, slot, gdn, lw, x, s, chunked, slots)
                    : attention(row, slot, (TargetWeights.Attention) lw.mixer(), lw, x, s);
            float[] hh = new float[s * h];
            for (int i = 0; i < hh.length; i++) {
                hh[i] = x[i] + mixed[i];
            }
            float[] n = new float[s * h];
            k.rmsNorm(n, 0, hh, 0, lw.postAttentionNorm(), h, s, a.rmsNormEps());
            float[] y = new float[s * h];
            for (int t = 0; t < s; t++) {
                float[] m = mlp(lw.mlp(), Arrays.copyOfRange(n, t * h, (t + 1) * h));
                for (int i = 0; i < h; i++) {
                    y[t * h + i] = hh[t * h + i] + m[i];
                }
            }
            x = y;
        }
        row.p += s;
        float[] post = new float[s * h];
        k.rmsNorm(post, 0, x, 0, w.finalNorm(), h, s, a.rmsNormEps());
        float[] logits = new float[s * a.vocabSize()];
        k.matmul(logits, 0, w.head(), post, 0, s);
        return new Out(logits, x, post);
    }

    /** Spec §13.2 for one row over {@code s} tokens; updates the row's window and state of GDN layer {@code slot}. */
    private float[] gdn(Row row, int slot, TargetWeights.Gdn m, TargetWeights.Layer lw, float[] x, int s,
                        boolean chunked, boolean slots) {
        int h = a.hiddenSize();
        int cd = g.convDim();
        int kk = g.convKernel();
        int hk = g.numKeyHeads();
        int hv = g.numValueHeads();
        int dk = g.keyHeadDim();
        int dv = g.valueHeadDim();
        float[] in = new float[s * h];
        k.rmsNorm(in, 0, x, 0, lw.inputNorm(), h, s, a.rmsNormEps());
        float[] qkv = new float[s * cd];
        float[] z = new float[s * hv * dv];
        float[] bb = new float[s * hv];
        float[] aa = new float[s * hv];
        k.matmul(qkv, 0, m.inProjQkv(), in, 0, s);
        k.matmul(z, 0, m.inProjZ(), in, 0, s);
        k.matmul(bb, 0, m.inProjB(), in, 0, s);
        k.matmul(aa, 0, m.inProjA(), in, 0, s);

        // 2. causal conv: u = the K-column window then the new inputs; window after t tokens = the last K of u
        float[] win = row.conv[slot];
        float[] conved = new float[s * cd];
        for (int t = 0; t < s; t++) {
            for (int ch = 0; ch < cd; ch++) {
                double sum = 0;
                for (int j = 0; j < kk; j++) {
                    int i = t - (kk - 1) + j; // input index; negative: the window
                    float u = i >= 0 ? qkv[i * cd + ch] : win[ch * kk + kk + i];
                    sum += (double) m.conv()[ch * kk + j] * u;
                }
                conved[t * cd + ch] = silu((float) sum);
            }
            if (slots) {
                row.convSlots[t][slot] = window(win, qkv, t + 1);
            }
        }
        row.conv[slot] = window(win, qkv, s);

        // 3. q̂, k̂ per key head; 4. gates per value head
        float[] q = new float[s * hk * dk];
        float[] kn = new float[s * hk * dk];
        float[] v = new float[s * hv * dv];
        float[] gate = new float[s * hv];
        float[] beta = new float[s * hv];
        for (int t = 0; t < s; t++) {
            for (int hd = 0; hd < hk; hd++) {
                l2norm(q, (t * hk + hd) * dk, conved, t * cd + hd * dk, dk, 1 / Math.sqrt(dk));
                l2norm(kn, (t * hk + hd) * dk, conved, t * cd + hk * dk + hd * dk, dk, 1);
            }
            System.arraycopy(conved, t * cd + 2 * hk * dk, v, t * hv * dv, hv * dv);
            for (int j = 0; j < hv; j++) {
                beta[t * hv + j] = (float) (1 / (1 + Math.exp(-(double) bb[t * hv + j])));
                double sp = (double) aa[t * hv + j] + m.dtBias()[j];
                sp = sp > 20 ? sp : Math.log1p(Math.exp(sp));
                gate[t * hv + j] = (float) (-Math.exp(m.aLog()[j]) * sp);
            }
        }

        // 5. the recurrence, token by token on the native [Hv, Dv, Dk] state, or chunked (a prefill)
        float[] core = new float[s * hv * dv];
        float[] state = row.rec[slot].clone();
        if (chunked) {
            state = chunkedRecurrence(core, state, q, kn, v, gate, beta, s);
        } else {
            for (int t = 0; t < s; t++) {
                recurrentStep(core, t, state, q, kn, v, gate, beta);
                if (slots) {
                    row.recSlots[t][slot] = state.clone();
                }
            }
        }
        row.rec[slot] = state;

        // 6. gated RMSNorm per value head with the plain gain, then out_proj
        float[] normed = new float[s * hv * dv];
        for (int t = 0; t < s; t++) {
            for (int j = 0; j < hv; j++) {
                int o = (t * hv + j) * dv;
                double ss = 0;
                for (int e = 0; e < dv; e++) {
                    ss += (double) core[o + e] * core[o + e];
                }
                float inv = (float) (1 / Math.sqrt(ss / dv + a.rmsNormEps()));
                for (int e = 0; e < dv; e++) {
                    normed[o + e] = m.norm()[e] * (core[o + e] * inv) * silu(z[o + e]);
                }
            }
        }
        float[] out = new float[s * h];
        k.matmul(out, 0, m.outProj(), normed, 0, s);
        return out;
    }

    /** The window {@code [C, K]} after the first {@code n} of the new inputs: the last K of (window, inputs). */
    private float[] window(float[] win, float[] qkv, int n) {
        int cd = g.convDim();
        int kk = g.convKernel();
        float[] next = new float[cd * kk];
        for (int ch = 0; ch < cd; ch++) {
            for (int j = 0; j < kk; j++) {
                int i = n - kk + j;
                next[ch * kk + j] = i >= 0 ? qkv[i * cd + ch] : win[ch * kk + kk + i];
            }
        }
        return next;
    }

    /** One token of the gated delta rule on {@code S [Hv, Dv, Dk]}: decay, read, write, read out (spec §13.2 step 5). */
    private void recurrentStep(float[] core, int t, float[] st, float[] q, float[] kn, float[] v, float[] gate,
                               float[] beta) {
        int hk = g.numKeyHeads();
        int hv = g.numValueHeads();
        int dk = g.keyHeadDim();
        int dv = g.valueHeadDim();
        int r = hv / hk;
        for (int j = 0; j < hv; j++) {
            int kh = bug == TargetMutation.V_HEADS_TILED ? j % hk : j / r;
            int qo = (t * hk + kh) * dk;
            float alpha = (float) Math.exp(gate[t * hv + j]);
            float b = beta[t * hv + j];
            int base = j * dv * dk;
            for (int e = 0; e < dv; e++) {
                int rowOff = base + e * dk;
                float mem = 0;
                for (int i = 0; i < dk; i++) {
                    st[rowOff + i] *= alpha;
                    mem += st[rowOff + i] * kn[qo + i];
                }
                float delta = b * (v[(t * hv + j) * dv + e] - mem);
                float o = 0;
                for (int i = 0; i < dk; i++) {
                    st[rowOff + i] += kn[qo + i] * delta;
                    o += st[rowOff + i] * q[qo + i];
                }
                core[(t * hv + j) * dv + e] = o;
            }
        }
    }

    /**
     * The chunked form over chunks of {@link #CHUNK} tokens (the reference's chunked kernel per chunk, on the state
     * transposed to its {@code [Hv, Dk, Dv]}); returns the native state after the last token.
     */
    private float[] chunkedRecurrence(float[] core, float[] nativeState, float[] q, float[] kn, float[] v,
                                      float[] gate, float[] beta, int s) {
        TargetStateLayout nat = new TargetStateLayout(TargetStateLayout.Orientation.DV_DK,
                TargetStateLayout.ConvColumns.K);
        float[] st = nat.stateToReference(nativeState, 1, g);
        int hk = g.numKeyHeads();
        int hv = g.numValueHeads();
        int dk = g.keyHeadDim();
        int dv = g.valueHeadDim();
        int start = 0;
        while (start < s) {
            int n = Math.min(CHUNK, s - start);
            k.deltaRuleChunked(core, start * hv * dv, st, 0, q, start * hk * dk, kn, start * hk * dk, v,
                    start * hv * dv, gate, start * hv, beta, start * hv, n, hk, hv, dk, dv);
            int nextStart = start + n;
            if (bug == TargetMutation.CHUNK_BOUNDARY_OFF_BY_ONE && nextStart < s) {
                nextStart--; // the next chunk starts one token early: the boundary token is fed twice
            }
            start = nextStart;
        }
        return nat.stateFromReference(st, 1, g);
    }

    /** Spec §1.5 for one row over {@code s} tokens: q/k norms, partial RoPE at the row's positions, gated output. */
    private float[] attention(Row row, int slot, TargetWeights.Attention at, TargetWeights.Layer lw, float[] x, int s) {
        int h = a.hiddenSize();
        int nH = a.numHeads();
        int nKv = a.numKvHeads();
        int d = a.headDim();
        double eps = a.rmsNormEps();
        float[] out = new float[s * h];
        List<float[]> keys = row.keys.get(slot);
        List<float[]> values = row.values.get(slot);
        for (int t = 0; t < s; t++) {
            float[] in = new float[h];
            k.rmsNorm(in, 0, x, t * h, lw.inputNorm(), h, 1, eps);
            float[] qg = new float[nH * 2 * d];
            float[] kk = new float[nKv * d];
            float[] vv = new float[nKv * d];
            k.matmul(qg, 0, at.qProj(), in, 0, 1);
            k.matmul(kk, 0, at.kProj(), in, 0, 1);
            k.matmul(vv, 0, at.vProj(), in, 0, 1);
            int pos = row.p + t;
            float[] q = new float[nH * d];
            boolean ropeFirst = bug == TargetMutation.QK_NORM_AFTER_ROPE;
            for (int j = 0; j < nH; j++) {
                if (ropeFirst) {
                    System.arraycopy(qg, j * 2 * d, q, j * d, d);
                    k.rope(q, j * d, a.rotaryDims(), a.ropeTheta(), pos);
                    k.rmsNorm(q, j * d, q, j * d, at.qNorm(), d, 1, eps);
                } else {
                    k.rmsNorm(q, j * d, qg, j * 2 * d, at.qNorm(), d, 1, eps);
                    k.rope(q, j * d, a.rotaryDims(), a.ropeTheta(), pos);
                }
            }
            for (int hd = 0; hd < nKv; hd++) {
                if (ropeFirst) {
                    k.rope(kk, hd * d, a.rotaryDims(), a.ropeTheta(), pos);
                    k.rmsNorm(kk, hd * d, kk, hd * d, at.kNorm(), d, 1, eps);
                } else {
                    k.rmsNorm(kk, hd * d, kk, hd * d, at.kNorm(), d, 1, eps);
                    k.rope(kk, hd * d, a.rotaryDims(), a.ropeTheta(), pos);
                }
            }
            keys.add(kk);
            values.add(vv);
            float[] o = new float[nH * d];
            float scale = (float) a.attentionScale();
            int n = keys.size();
            for (int j = 0; j < nH; j++) {
                int kv = j / (nH / nKv);
                double[] sc = new double[n];
                double max = Double.NEGATIVE_INFINITY;
                for (int p = 0; p < n; p++) {
                    sc[p] = k.dot(q, j * d, keys.get(p), kv * d, d) * scale;
                    max = Math.max(max, sc[p]);
                }
                double sum = 0;
                for (int p = 0; p < n; p++) {
                    sc[p] = Math.exp(sc[p] - max);
                    sum += sc[p];
                }
                for (int p = 0; p < n; p++) {
                    float pr = (float) (sc[p] / sum);
                    for (int i = 0; i < d; i++) {
                        o[j * d + i] += pr * values.get(p)[kv * d + i];
                    }
                }
                for (int i = 0; i < d; i++) {
                    o[j * d + i] *= (float) (1 / (1 + Math.exp(-qg[j * 2 * d + d + i])));
                }
            }
            k.matmul(out, t * h, at.oProj(), o, 0, 1);
        }
        return out;
    }

    /** A layer's MLP for one token: dense SwiGLU, or the routed experts of spec §12.3. */
    private float[] mlp(MlpWeights mlp, float[] n) {
        return mlp instanceof MlpWeights.Moe moe ? moe(moe, n) : swiglu((MlpWeights.Dense) mlp, n);
    }

    /**
     * Spec §12.3 for one token, written plainly: the router's softmax in f64 rounded to f32, top-k by repeated scans
     * (the lower index on exact ties), renormalised when the model says so, plus the sigmoid-gated shared expert.
     */
    private float[] moe(MlpWeights.Moe moe, float[] n) {
        int e = moe.numExperts();
        float[] logits = new float[e];
        k.matmul(logits, 0, moe.router(), n, 0, 1);
        double max = Double.NEGATIVE_INFINITY;
        for (float l : logits) {
            max = Math.max(max, l);
        }
        double[] z = new double[e];
        double sum = 0;
        for (int i = 0; i < e; i++) {
            z[i] = Math.exp(logits[i] - max);
            sum += z[i];
        }
        float[] p = new float[e];
        for (int i = 0; i < e; i++) {
            p[i] = (float) (z[i] / sum);
        }
        boolean[] taken = new boolean[e];
        int[] chosen = new int[moe.topK()];
        float total = 0;
        for (int j = 0; j < chosen.length; j++) {
            int best = -1;
            for (int i = 0; i < e; i++) {
                if (!taken[i] && (best < 0 || p[i] > p[best])) {
                    best = i;
                }
            }
            taken[best] = true;
            chosen[j] = best;
            total += p[best];
        }
        float[] out = new float[a.hiddenSize()];
        boolean renormalise = bug == TargetMutation.MOE_NORM_TOPK_FLAG_IGNORED
                || moe.normTopK() && bug != TargetMutation.MOE_TOPK_NOT_RENORMALISED;
        for (int slot = 0; slot < chosen.length; slot++) {
            int expert = chosen[slot];
            int weighted = bug == TargetMutation.MOE_EXPERT_WEIGHTS_REVERSED ? chosen[chosen.length - 1 - slot]
                    : expert;
            float weight = renormalise ? p[weighted] / total : p[weighted];
            float[] y = swiglu(moe.experts().get(expert), n);
            for (int i = 0; i < out.length; i++) {
                out[i] += weight * y[i];
            }
        }
        float[] gateLogit = new float[1];
        k.matmul(gateLogit, 0, moe.sharedExpertGate(), n, 0, 1);
        float g = bug == TargetMutation.MOE_SHARED_GATE_MISSING ? 1f
                : (float) (1 / (1 + Math.exp(-(double) gateLogit[0])));
        float[] shared = swiglu(moe.sharedExpert(), n);
        for (int i = 0; i < out.length; i++) {
            out[i] += g * shared[i];
        }
        return out;
    }

    /** {@code (silu(n·W_gateᵀ) ⊙ (n·W_upᵀ)) · W_downᵀ} for one token. */
    private float[] swiglu(MlpWeights.Dense mlp, float[] n) {
        int inter = mlp.width();
        float[] gt = new float[inter];
        float[] up = new float[inter];
        k.matmul(gt, 0, mlp.gateProj(), n, 0, 1);
        k.matmul(up, 0, mlp.upProj(), n, 0, 1);
        for (int i = 0; i < inter; i++) {
            gt[i] = silu(gt[i]) * up[i];
        }
        float[] m = new float[a.hiddenSize()];
        k.matmul(m, 0, mlp.downProj(), gt, 0, 1);
        return m;
    }

    /** {@code out = x / sqrt(Σx² + 1e-6) · scale} (ε inside the root). */
    private static void l2norm(float[] out, int outOff, float[] x, int xOff, int n, double scale) {
        double ss = 0;
        for (int i = 0; i < n; i++) {
            ss += (double) x[xOff + i] * x[xOff + i];
        }
        double f = scale / Math.sqrt(ss + 1e-6);
        for (int i = 0; i < n; i++) {
            out[outOff + i] = (float) (x[xOff + i] * f);
        }
    }

    private static float silu(float x) {
        return (float) (x / (1 + Math.exp(-(double) x)));
    }

    private static float[] join(float[][] parts) {
        int n = 0;
        for (float[] p : parts) {
            n += p.length;
        }
        float[] out = new float[n];
        int o = 0;
        for (float[] p : parts) {
            System.arraycopy(p, 0, out, o, p.length);
            o += p.length;
        }
        return out;
    }

    /** Per-position vectors {@code [nFull][P][nKV·D]} → {@code [nFull, nKV, P, D]}. */
    private float[] kv(List<List<float[]>> layers, int p) {
        int d = a.headDim();
        int nKv = a.numKvHeads();
        float[] out = new float[layers.size() * nKv * p * d];
        for (int f = 0; f < layers.size(); f++) {
            for (int t = 0; t < p; t++) {
                for (int hd = 0; hd < nKv; hd++) {
                    System.arraycopy(layers.get(f).get(t), hd * d, out, ((f * nKv + hd) * p + t) * d, d);
                }
            }
        }
        return out;
    }
}
