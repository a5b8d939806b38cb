package org.mtporacle.reference.block;

import java.util.Arrays;

import org.mtporacle.api.MlpWeights;
import org.mtporacle.api.MtpException;
import org.mtporacle.reference.kernels.Kernels;

/**
 * The routed MoE MLP with a gated shared expert (spec §12.3): per row, the router's top-k experts mixed by their
 * weights, plus {@code σ(n·W_sharedGateᵀ)} times the shared expert. Each expert runs once per forward over the rows
 * that chose it, and only chosen experts' weights are read; every output is computed with the same arithmetic as
 * when its row is alone (spec §10.1.3).
 */
final class MoeMlp implements Mlp {
    private final MlpWeights.Moe w;
    private final int hSize;
    private final Kernels k;

    MoeMlp(MlpWeights.Moe weights, int hiddenSize, Kernels kernels) {
        this.w = weights;
        this.hSize = hiddenSize;
        this.k = kernels;
    }

    @Override
    public float[] forward(float[] n, RowKv[] kvs, int s, ForwardTrace trace, RouterHook hook) {
        TokenRouterHook byRow = hook == null ? null : (r, probs, chosen) -> {
            RowKv kv = kvs[r / s];
            int position = kv.length() - s + r % s;
            int[] used = hook.route(kv, position, probs, chosen);
            checkChoice(used, "at position " + position);
            return used;
        };
        return route(n, kvs.length * s, trace, byRow);
    }

    @Override
    public float[] forward(float[] n, int rows, ForwardTrace trace, TokenRouterHook hook) {
        TokenRouterHook checked = hook == null ? null : (r, probs, chosen) -> {
            int[] used = hook.route(r, probs, chosen);
            checkChoice(used, "for forward row " + r);
            return used;
        };
        return route(n, rows, trace, checked);
    }

    /** Steps 1–8 of spec §12.3 over {@code rows} rows of {@code n}; {@code hook} (checked) may replace a choice. */
    private float[] route(float[] n, int rows, ForwardTrace trace, TokenRouterHook hook) {
        int e = w.numExperts();
        int topK = w.topK();

        // 1–4. router logits, f32 softmax, top-k (lower index first on ties), renormalised weights
        float[] logits = new float[rows * e];
        k.matmul(logits, 0, w.router(), n, 0, rows);
        float[] probs = new float[rows * e];
        int[] chosen = new int[rows * topK];
        float[] weights = new float[rows * topK];
        int[] slotExperts = new int[topK];
        float[] slotWeights = new float[topK];
        for (int r = 0; r < rows; r++) {
            k.route(probs, r * e, slotExperts, slotWeights, logits, r * e, e, topK, w.normTopK());
            if (hook != null) {
                int[] used = hook.route(r, Arrays.copyOfRange(probs, r * e, (r + 1) * e), slotExperts.clone());
                if (!Arrays.equals(used, slotExperts)) {
                    System.arraycopy(used, 0, slotExperts, 0, topK);
                    k.routeWeights(slotWeights, probs, r * e, slotExperts, topK, w.normTopK());
                }
            }
            System.arraycopy(slotExperts, 0, chosen, r * topK, topK);
            System.arraycopy(slotWeights, 0, weights, r * topK, topK);
        }

        // 5. each chosen expert once, over the rows (slots) that chose it, in expert order
        float[] expertOut = new float[rows * topK * hSize]; // [N, K, H], unweighted
        runExperts(n, rows, chosen, expertOut);

        // 6. routed = Σ_j w_j · expert_j, slots in order, product then sum
        float[] routed = new float[rows * hSize];
        for (int r = 0; r < rows; r++) {
            for (int j = 0; j < topK; j++) {
                float wj = weights[r * topK + j];
                int src = (r * topK + j) * hSize;
                for (int i = 0; i < hSize; i++) {
                    routed[r * hSize + i] = routed[r * hSize + i] + wj * expertOut[src + i];
                }
            }
        }

        // 7–8. shared expert, gated by one sigmoid per row; moe = routed + gate · shared
        MlpWeights.Dense sh = w.sharedExpert();
        float[] sharedAct = new float[rows * sh.width()];
        float[] shared = DenseMlp.swiglu(k, sh, n, rows, hSize, sharedAct);
        float[] gateLogit = new float[rows];
        k.matmul(gateLogit, 0, w.sharedExpertGate(), n, 0, rows);
        float[] gate = new float[rows];
        k.sigmoid(gate, 0, gateLogit, 0, null, 0, rows);
        float[] out = new float[rows * hSize];
        for (int r = 0; r < rows; r++) {
            for (int i = 0; i < hSize; i++) {
                out[r * hSize + i] = routed[r * hSize + i] + gate[r] * shared[r * hSize + i];
            }
        }
        if (trace != null) {
            float[] idx = new float[chosen.length];
            for (int i = 0; i < chosen.length; i++) {
                idx[i] = chosen[i];
            }
            trace.put("router_logits", logits);
            trace.put("router_probs", probs);
            trace.put("topk_indices", idx);
            trace.put("topk_weights", weights);
            trace.put("expert_out", expertOut);
            trace.put("routed_out", routed);
            trace.put("shared_act", sharedAct);
            trace.put("shared_out", shared);
            trace.put("shared_gate_logit", gateLogit);
            trace.put("shared_gate", gate);
            trace.put("moe_out", out);
            trace.put("mlp_out", out);
        }
        return out;
    }

    private void checkChoice(int[] used, String where) {
        boolean ok = used != null && used.length == w.topK();
        for (int j = 0; ok && j < used.length; j++) {
            ok = used[j] >= 0 && used[j] < w.numExperts();
            for (int i = 0; ok && i < j; i++) {
                ok = used[i] != used[j];
            }
        }
        if (!ok) {
            throw MtpException.invalidArgument("router: the chooser returned " + Arrays.toString(used) + " " + where
                    + ", expected " + w.topK() + " distinct experts in [0, " + w.numExperts()
                    + ") (spec §12.5)");
        }
    }

    /** For each expert chosen by some row, gathers those rows, runs the expert, scatters into {@code out [N, K, H]}. */
    private void runExperts(float[] n, int rows, int[] chosen, float[] out) {
        int topK = w.topK();
        int[] slots = new int[rows * topK];
        boolean[] hit = new boolean[w.numExperts()];
        for (int c : chosen) {
            hit[c] = true;
        }
        for (int e = 0; e < hit.length; e++) {
            if (!hit[e]) {
                continue;
            }
            int m = 0;
            for (int slot = 0; slot < chosen.length; slot++) {
                if (chosen[slot] == e) {
                    slots[m++] = slot;
                }
            }
            float[] x = new float[m * hSize];
            for (int i = 0; i < m; i++) {
                System.arraycopy(n, (slots[i] / topK) * hSize, x, i * hSize, hSize);
            }
            MlpWeights.Dense ex = w.experts().get(e);
            float[] y = DenseMlp.swiglu(k, ex, x, m, hSize, new float[m * ex.width()]);
            for (int i = 0; i < m; i++) {
                System.arraycopy(y, i * hSize, out, slots[i] * hSize, hSize);
            }
        }
    }

    /** {@code (silu(x·W_gateᵀ) ⊙ (x·W_upᵀ)) · W_downᵀ}; {@code act [rows, I]} receives the down projection's input. */
}
