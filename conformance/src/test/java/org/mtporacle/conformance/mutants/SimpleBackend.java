package org.mtporacle.conformance.mutants;

import org.mtporacle.api.DraftModel;
import org.mtporacle.api.DraftRows;
import org.mtporacle.api.DraftSampling;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MlpWeights;
import org.mtporacle.api.MtpConfig;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.MtpWeights;
import org.mtporacle.api.RowCheckpoint;
import org.mtporacle.api.RowContract;
import org.mtporacle.api.RouterChoices;
import org.mtporacle.reference.kernels.KernelMode;
import org.mtporacle.reference.kernels.Kernels;
import org.mtporacle.reference.sampling.DraftSampler;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * A second, independent and deliberately plain implementation of the row contract (one row at a time, one position
 * at a time, KV as lists), used by the kit's own tests: with {@link Mutation#NONE} it must pass lockstep; with any
 * other mutation the kit must catch it.
 */
public final class SimpleBackend implements DraftModel {
    private final MtpModel model;
    private final MtpConfig c;
    private final MtpWeights w;
    private final Kernels k = new Kernels(KernelMode.SCALAR, 1);
    private final Mutation bug;
    private volatile boolean modelClosed;
    private final boolean tiesToHigherIndex;
    /** The MoE router choices of the current call, and the row and position being forwarded (spec §12.5). */
    private final List<RouterChoices.Choice> routing = new ArrayList<>();
    private int routedRow;
    private int routedPosition;

    public SimpleBackend(MtpModel model, Mutation bug) {
        this(model, bug, false);
    }

    /**
     * With {@code tiesToHigherIndex} the router breaks exactly equal probabilities towards the higher expert index,
     * against spec §12.3 step 3: the kit must accept it as a router near-tie of gap 0 (conformance/SPEC.md).
     */
    public SimpleBackend(MtpModel model, Mutation bug, boolean tiesToHigherIndex) {
        this.tiesToHigherIndex = tiesToHigherIndex;
        this.model = model;
        this.c = model.config();
        this.w = bug == Mutation.NORM_FOLD_APPLIED_TWICE ? foldAgain(model.weights()) : model.weights();
        this.bug = bug;
    }

    @Override
    public MtpModel model() {
        return model;
    }

    @Override
    public String numerics() {
        return "simple f32 (" + bug + ")";
    }

    @Override
    public DraftRows openRows(List<RowCheckpoint> checkpoints) {
        Rows rows = new Rows();
        rows.append(checkpoints);
        return rows;
    }

    @Override
    public void close() {
        modelClosed = true;
        k.close();
    }

    /** One row: KV per position {@code [nKV·D]}, retained hidden, drafts of the open round. */
    private static final class Row {
        final List<float[]> keys = new ArrayList<>();
        final List<float[]> values = new ArrayList<>();
        float[] hidden;
        int[] drafts = new int[0];
        int roundStart;
    }

    private final class Rows implements DraftRows, RouterChoices {
        @Override
        public List<RouterChoices.Choice> lastRouterChoices() {
            return List.copyOf(routing);
        }

        List<Row> rows = new ArrayList<>();
        boolean round;
        int depth;
        boolean closed;
        final java.util.concurrent.atomic.AtomicReference<String> busy = new java.util.concurrent.atomic.AtomicReference<>();

        /** One call at a time, none after the model closed (spec §11.11); written apart from the shared skeleton. */
        private <T> T guarded(String call, java.util.function.Supplier<T> body) {
            if (!busy.compareAndSet(null, call)) {
                throw MtpException.illegalState(call + ": " + busy.get() + " is in progress on this group");
            }
            try {
                if (modelClosed && !closed && bug != Mutation.MODEL_CLOSE_IGNORED) {
                    throw MtpException.illegalState(call + ": the model is closed");
                }
                return body.get();
            } finally {
                busy.set(null);
            }
        }

        @Override
        public void append(List<RowCheckpoint> cps) {
            guarded("append", () -> {
                doAppend(cps);
                return null;
            });
        }
        @Override
        public void filterRows(int[] keep) {
            guarded("filterRows", () -> {
                doFilterRows(keep);
                return null;
            });
        }
        @Override
        public void prefill(HostTensor tokens, HostTensor context) {
            guarded("prefill", () -> {
                doPrefill(tokens, context);
                return null;
            });
        }
        @Override
        public int[][] draft(int[] pending, int d, long[] steps, DraftSampling sampling) {
            return guarded("draft", () -> doDraft(pending, d, steps, sampling));
        }
        @Override
        public void commit(int[] accepted, HostTensor context) {
            guarded("commit", () -> {
                doCommit(accepted, context);
                return null;
            });
        }
        @Override
        public RowCheckpoint capture(int row) {
            return guarded("capture", () -> doCapture(row));
        }

        @Override
        public int rowCount() {
            return rows.size();
        }

        private void doAppend(List<RowCheckpoint> cps) {
            RowContract.checkUsable("append", closed && bug != Mutation.APPEND_AFTER_CLOSE, null);
            RowContract.checkNoOpenRound("append", round);
            if (bug != Mutation.BAD_APPEND_HALF_MUTATES) {
                RowContract.checkpoints("append", cps, model);
            } else if (cps == null) {
                throw MtpException.invalidArgument("append: checkpoint list is null");
            }
            for (int i = 0; i < cps.size(); i++) {
                RowCheckpoint cp = cps.get(i);
                if (bug == Mutation.BAD_APPEND_HALF_MUTATES && cp != null) {
                    RowContract.checkpoint("append", i, cp, model);
                }
                Row r = new Row();
                if (cp != null) {
                    int n = cp.processedTokens() - 1;
                    float[] kk = n == 0 ? new float[0] : cp.keys().toFloatArray();
                    float[] vv = n == 0 ? new float[0] : cp.values().toFloatArray();
                    for (int p = 0; p < n; p++) {
                        r.keys.add(gatherPosition(kk, n, p));
                        r.values.add(gatherPosition(vv, n, p));
                    }
                    r.hidden = cp.hidden().toFloatArray();
                }
                rows.add(r);
            }
        }

        private void doFilterRows(int[] keep) {
            RowContract.checkUsable("filterRows", closed, null);
            RowContract.checkNoOpenRound("filterRows", round);
            RowContract.keep(keep, rows.size());
            List<Row> next = new ArrayList<>();
            for (int i = 0; i < keep.length; i++) {
                Row src = rows.get(keep[i]);
                if (bug == Mutation.FILTER_REORDERS_HIDDEN_NOT_KV) {
                    Row kvFrom = rows.get(i < rows.size() ? i : keep[i]);
                    Row r = new Row();
                    r.keys.addAll(kvFrom.keys);
                    r.values.addAll(kvFrom.values);
                    r.hidden = src.hidden;
                    next.add(r);
                } else {
                    next.add(src);
                }
            }
            rows = next;
        }

        private void doPrefill(HostTensor tokens, HostTensor context) {
            routing.clear();
            RowContract.checkUsable("prefill", closed, null);
            RowContract.checkNoOpenRound("prefill", round);
            RowContract.checkHasRows("prefill", rows.size());
            int[][] ids = RowContract.tokens("prefill", tokens, rows.size(), c.vocabSize());
            int len = ids[0].length;
            int h = c.hiddenSize();
            RowContract.context("prefill", context, rows.size(), len, h, "same L");
            float[] ctx = context.toFloatArray();
            for (int b = 0; b < rows.size(); b++) {
                Row r = rows.get(b);
                routedRow = b;
                if (r.hidden != null && bug != Mutation.MISSING_BRIDGE_ROW) {
                    forward(r, ids[b][0], r.hidden);
                }
                for (int p = 0; p + 1 < len; p++) {
                    forward(r, ids[b][p + 1], Arrays.copyOfRange(ctx, (b * len + p) * h, (b * len + p + 1) * h));
                }
                r.hidden = Arrays.copyOfRange(ctx, (b * len + len - 1) * h, (b * len + len) * h);
            }
        }

        private int[][] doDraft(int[] pending, int d, long[] steps, DraftSampling sampling) {
            routing.clear();
            RowContract.checkUsable("draft", closed, null);
            RowContract.checkNoOpenRound("draft", round);
            RowContract.checkHasRows("draft", rows.size());
            RowContract.draftArguments(pending, d, steps, sampling, rows.size(), c.vocabSize());
            for (int b = 0; b < rows.size(); b++) {
                if (rows.get(b).hidden == null) {
                    throw MtpException.illegalState("draft: row " + b + " has no retained hidden");
                }
            }
            int[][] out = new int[rows.size()][d];
            for (int b = 0; b < rows.size(); b++) {
                Row r = rows.get(b);
                routedRow = b;
                r.roundStart = r.keys.size();
                int id = pending[b];
                float[] hin = r.hidden;
                int positions = Math.max(1, d);
                for (int t = 0; t < positions; t++) {
                    float[] y = forward(r, id, hin);
                    if (t >= d) {
                        break;
                    }
                    float[] logits = new float[c.vocabSize()];
                    k.matmul(logits, 0, w.head(), y, 0, 1);
                    float[] lp = new float[logits.length];
                    k.logSoftmax(lp, 0, logits, 0, logits.length);
                    long step = steps[b] + t + (bug == Mutation.SAMPLER_STEP_OFF_BY_ONE ? 1 : 0);
                    id = DraftSampler.sample(lp, 0, lp.length, sampling.row(b), step);
                    out[b][t] = id;
                    hin = y;
                }
                r.drafts = out[b];
                r.hidden = null;
            }
            round = true;
            depth = d;
            return out;
        }

        private void doCommit(int[] accepted, HostTensor context) {
            routing.clear();
            RowContract.checkUsable("commit", closed, null);
            if (!round) {
                throw MtpException.illegalState("commit: no draft round is open");
            }
            RowContract.accepted(accepted, rows.size(), depth);
            int h = c.hiddenSize();
            int width = depth + 1;
            RowContract.context("commit", context, rows.size(), width, h, "depth + 1");
            float[] ctx = context.toFloatArray();
            for (int b = 0; b < rows.size(); b++) {
                Row r = rows.get(b);
                routedRow = b;
                int appended = Math.max(1, depth);
                int kept = Math.min(accepted[b] + (bug == Mutation.OFF_BY_ONE_KEPT_COUNT ? 0 : 1), appended);
                while (r.keys.size() > r.roundStart + kept) {
                    r.keys.removeLast();
                    r.values.removeLast();
                }
                if (depth > 0 && accepted[b] == depth && bug != Mutation.EXTRA_ROW_MISSING_ON_FULL_ACCEPTANCE) {
                    forward(r, r.drafts[depth - 1], Arrays.copyOfRange(ctx, (b * width + depth - 1) * h,
                            (b * width + depth) * h));
                }
                int at = bug == Mutation.STALE_HIDDEN_AFTER_COMMIT ? 0 : accepted[b];
                r.hidden = Arrays.copyOfRange(ctx, (b * width + at) * h, (b * width + at + 1) * h);
                r.drafts = new int[0];
            }
            round = false;
            depth = 0;
        }

        private RowCheckpoint doCapture(int row) {
            RowContract.checkUsable("capture", closed, null);
            RowContract.checkNoOpenRound("capture", round);
            RowContract.row("capture", row, rows.size());
            Row r = rows.get(row);
            if (r.hidden == null) {
                throw MtpException.illegalState("capture: row " + row + " has consumed no target token");
            }
            int n = r.keys.size();
            int nKv = c.numKvHeads();
            int d = c.headDim();
            int offset = bug == Mutation.CHECKPOINT_OFFSET_OFF_BY_ONE ? n + 1 : n;
            return RowCheckpoint.sealed(RowCheckpoint.SCHEMA, n + 1, offset, model.identity(),
                    n == 0 ? null : HostTensor.ofFloats(scatter(r.keys), 1, nKv, n, d),
                    n == 0 ? null : HostTensor.ofFloats(scatter(r.values), 1, nKv, n, d),
                    HostTensor.ofFloats(r.hidden, 1, 1, c.hiddenSize()));
        }

        @Override
        public boolean isClosed() {
            return closed;
        }

        @Override
        public void close() {
            closed = true;
            rows.clear();
        }

        private float[] gatherPosition(float[] kv, int n, int p) {
            int d = c.headDim();
            float[] out = new float[c.numKvHeads() * d];
            for (int g = 0; g < c.numKvHeads(); g++) {
                System.arraycopy(kv, (g * n + p) * d, out, g * d, d);
            }
            return out;
        }

        private float[] scatter(List<float[]> pos) {
            int d = c.headDim();
            int n = pos.size();
            float[] out = new float[c.numKvHeads() * n * d];
            for (int p = 0; p < n; p++) {
                for (int g = 0; g < c.numKvHeads(); g++) {
                    System.arraycopy(pos.get(p), g * d, out, (g * n + p) * d, d);
                }
            }
            return out;
        }
    }

    /** One position of spec §1.4–§1.5 for one row; appends its K and V; returns Y. */
    private float[] forward(Row r, int token, float[] hidden) {
        int h = c.hiddenSize();
        int nH = c.numHeads();
        int nKv = c.numKvHeads();
        int d = c.headDim();
        double eps = c.rmsNormEps();
        float[] e = new float[h];
        k.embed(e, 0, w.embedding(), token);
        float[] u = new float[2 * h];
        k.rmsNorm(u, 0, e, 0, w.preFcNormEmbedding(), h, 1, eps);
        k.rmsNorm(u, h, hidden, 0, w.preFcNormHidden(), h, 1, eps);
        float[] x = new float[h];
        k.matmul(x, 0, w.fc(), u, 0, 1);
        float[] a = new float[h];
        k.rmsNorm(a, 0, x, 0, w.inputNorm(), h, 1, eps);
        float[] qg = new float[nH * 2 * d];
        float[] kk = new float[nKv * d];
        float[] vv = new float[nKv * d];
        k.matmul(qg, 0, w.qProj(), a, 0, 1);
        k.matmul(kk, 0, w.kProj(), a, 0, 1);
        k.matmul(vv, 0, w.vProj(), a, 0, 1);
        routedPosition = r.keys.size();
        int pos = r.keys.size() + (bug == Mutation.WRONG_ROPE_POSITION ? 1 : 0);
        float[] q = new float[nH * d];
        boolean normAfterRope = bug == Mutation.QK_NORM_AFTER_ROPE;
        for (int j = 0; j < nH; j++) {
            if (normAfterRope) {
                k.rope(qg, j * 2 * d, c.rotaryDims(), c.ropeTheta(), pos);
                k.rmsNorm(q, j * d, qg, j * 2 * d, w.qNorm(), d, 1, eps);
            } else {
                k.rmsNorm(q, j * d, qg, j * 2 * d, w.qNorm(), d, 1, eps);
                k.rope(q, j * d, c.rotaryDims(), c.ropeTheta(), pos);
            }
        }
        for (int g = 0; g < nKv; g++) {
            if (normAfterRope) {
                k.rope(kk, g * d, c.rotaryDims(), c.ropeTheta(), pos);
                k.rmsNorm(kk, g * d, kk, g * d, w.kNorm(), d, 1, eps);
            } else {
                k.rmsNorm(kk, g * d, kk, g * d, w.kNorm(), d, 1, eps);
                k.rope(kk, g * d, c.rotaryDims(), c.ropeTheta(), pos);
            }
        }
        r.keys.add(kk);
        r.values.add(vv);
        float[] o = new float[nH * d];
        float scale = (float) c.attentionScale();
        for (int j = 0; j < nH; j++) {
            int g = bug == Mutation.WRONG_GQA_HEAD_MAPPING ? j % nKv : j / (nH / nKv);
            int t = r.keys.size();
            float[] s = new float[t];
            float max = Float.NEGATIVE_INFINITY;
            for (int p = 0; p < t; p++) {
                s[p] = k.dot(q, j * d, r.keys.get(p), g * d, d) * scale;
                max = Math.max(max, s[p]);
            }
            float sum = 0;
            for (int p = 0; p < t; p++) {
                s[p] = (float) Math.exp(s[p] - max);
                sum += s[p];
            }
            for (int p = 0; p < t; p++) {
                float pr = s[p] * (1f / sum);
                for (int i = 0; i < d; i++) {
                    o[j * d + i] += pr * r.values.get(p)[g * d + i];
                }
            }
            if (bug != Mutation.GATE_NOT_APPLIED) {
                for (int i = 0; i < d; i++) {
                    o[j * d + i] *= (float) (1 / (1 + Math.exp(-qg[j * 2 * d + d + i])));
                }
            }
        }
        float[] attn = new float[h];
        k.matmul(attn, 0, w.oProj(), o, 0, 1);
        float[] h1 = new float[h];
        for (int i = 0; i < h; i++) {
            h1[i] = x[i] + attn[i];
        }
        float[] n = new float[h];
        k.rmsNorm(n, 0, h1, 0, w.postAttentionNorm(), h, 1, eps);
        float[] m = w.mlp() instanceof MlpWeights.Moe moe ? moe(moe, n) : swiglu(w.denseMlp(), n);
        float[] y = new float[h];
        for (int i = 0; i < h; i++) {
            y[i] = h1[i] + m[i];
        }
        float[] out = new float[h];
        k.rmsNorm(out, 0, y, 0, w.finalNorm(), h, 1, eps);
        return out;
    }

    /** {@code (silu(n·W_gateᵀ) ⊙ (n·W_upᵀ)) · W_downᵀ} for one row. */
    private float[] swiglu(MlpWeights.Dense mlp, float[] n) {
        int inter = mlp.width();
        float[] gate = new float[inter];
        float[] up = new float[inter];
        k.matmul(gate, 0, mlp.gateProj(), n, 0, 1);
        k.matmul(up, 0, mlp.upProj(), n, 0, 1);
        for (int i = 0; i < inter; i++) {
            gate[i] = gate[i] * (float) (1 / (1 + Math.exp(-gate[i]))) * up[i];
        }
        float[] m = new float[c.hiddenSize()];
        k.matmul(m, 0, mlp.downProj(), gate, 0, 1);
        return m;
    }

    /**
     * Spec §12.3 for one row, written plainly: softmax in f64 rounded to f32, top-k by repeated scans (lower index
     * first on ties), renormalised, plus the sigmoid-gated shared expert.
     */
    private float[] moe(MlpWeights.Moe moe, float[] n) {
        int h = c.hiddenSize();
        int e = moe.numExperts();
        float[] logits = new float[e];
        k.matmul(logits, 0, moe.router(), n, 0, 1);
        float[] p = bug == Mutation.MOE_ROUTER_SOFTMAX_BF16 ? softmaxBf16(logits) : softmax(logits);
        boolean[] taken = new boolean[e];
        int[] chosen = new int[moe.topK()];
        float total = 0;
        for (int j = 0; j < chosen.length; j++) {
            int best = -1;
            for (int i = 0; i < e; i++) {
                if (!taken[i] && (best < 0 || p[i] > p[best] || tiesToHigherIndex && p[i] == p[best])) {
                    best = i;
                }
            }
            taken[best] = true;
            chosen[j] = best;
            total += p[best];
        }
        final int row = routedRow;
        final int position = routedPosition;
        routing.removeIf(x -> x.row() == row && x.position() == position);
        routing.add(new RouterChoices.Choice(row, position, chosen));
        float[] out = new float[h];
        for (int slot = 0; slot < chosen.length; slot++) {
            int expert = chosen[slot];
            int weighted = bug == Mutation.MOE_EXPERT_WEIGHTS_REVERSED ? chosen[chosen.length - 1 - slot] : expert;
            boolean renormalise = moe.normTopK() || bug == Mutation.MOE_NORM_TOPK_FLAG_IGNORED;
            float weight = renormalise && bug != Mutation.MOE_TOPK_NOT_RENORMALISED ? p[weighted] / total
                    : p[weighted];
            weight = bug == Mutation.MOE_ROUTER_SOFTMAX_BF16 ? bf16(weight) : weight;
            int used = bug == Mutation.MOE_EXPERTS_OFF_BY_ONE ? (expert + 1) % e : expert;
            float[] y = swiglu(moe.experts().get(used), n);
            for (int i = 0; i < h; i++) {
                out[i] += weight * y[i];
            }
        }
        float[] gateLogit = new float[1];
        k.matmul(gateLogit, 0, moe.sharedExpertGate(), n, 0, 1);
        float g = bug == Mutation.MOE_SHARED_GATE_MISSING ? 1f : (float) (1 / (1 + Math.exp(-gateLogit[0])));
        float[] shared = swiglu(moe.sharedExpert(), n);
        for (int i = 0; i < h; i++) {
            out[i] += g * shared[i];
        }
        return out;
    }

    private static float[] softmax(float[] logits) {
        double max = Double.NEGATIVE_INFINITY;
        for (float l : logits) {
            max = Math.max(max, l);
        }
        double sum = 0;
        double[] z = new double[logits.length];
        for (int i = 0; i < z.length; i++) {
            z[i] = Math.exp(logits[i] - max);
            sum += z[i];
        }
        float[] p = new float[z.length];
        for (int i = 0; i < z.length; i++) {
            p[i] = (float) (z[i] / sum);
        }
        return p;
    }

    /** Every step rounded to bf16, as a bf16 device softmax computes: logits, exponentials, the running sum, p. */
    private static float[] softmaxBf16(float[] logits) {
        float max = Float.NEGATIVE_INFINITY;
        for (float l : logits) {
            max = Math.max(max, bf16(l));
        }
        float sum = 0;
        float[] z = new float[logits.length];
        for (int i = 0; i < z.length; i++) {
            z[i] = bf16((float) Math.exp(bf16(bf16(logits[i]) - max)));
            sum = bf16(sum + z[i]);
        }
        float[] p = new float[z.length];
        for (int i = 0; i < z.length; i++) {
            p[i] = bf16(z[i] / sum);
        }
        return p;
    }

    private static float bf16(float x) {
        return org.mtporacle.api.FloatFormats.roundToBf16(x);
    }

    private static MtpWeights foldAgain(MtpWeights m) {
        return new MtpWeights(m.fc(), plusOne(m.preFcNormEmbedding()), plusOne(m.preFcNormHidden()),
                plusOne(m.inputNorm()), m.qProj(), m.kProj(), m.vProj(), m.oProj(), plusOne(m.qNorm()),
                plusOne(m.kNorm()), plusOne(m.postAttentionNorm()), m.mlp(), plusOne(m.finalNorm()), m.embedding(),
                m.head());
    }

    private static float[] plusOne(float[] g) {
        float[] out = new float[g.length];
        for (int i = 0; i < g.length; i++) {
            out[i] = g[i] + 1f;
        }
        return out;
    }
}
