package org.mtporacle.reference.target;

import org.mtporacle.api.TargetConfig;
import org.mtporacle.api.TargetWeights;
import org.mtporacle.reference.block.Mlp;
import org.mtporacle.reference.block.TokenRouterHook;
import org.mtporacle.reference.kernels.Kernels;

/**
 * A Gated DeltaNet decoder layer (spec §13.2): {@code h = x + GDN(RMSNorm(x)); y = h + MLP(RMSNorm(h))}. The mixer
 * projects {@code q|k|v}, {@code z}, {@code b} and {@code a}; convolves {@code q|k|v} causally over each row's window
 * and applies SiLU; normalises q and k; computes the gates; runs the recurrence per value head, token by token (the
 * normative form) or chunked (a prefill's second kernel); applies the gated norm with its plain gain; and projects out.
 */
final class GdnLayer {
    private final TargetConfig.Gdn g;
    private final TargetWeights.Layer w;
    private final TargetWeights.Gdn m;
    private final Kernels k;
    private final Mlp mlp;
    private final int hSize;
    private final double eps;

    /** The states a forward leaves per row: after every token ({@code [B][s][·]}) or after the last ({@code [B][1][·]}). */
    record States(float[][][] conv, float[][][] rec) {
    }

    GdnLayer(TargetConfig c, TargetWeights.Layer weights, Kernels kernels) {
        this.g = c.gdn();
        this.w = weights;
        this.m = (TargetWeights.Gdn) weights.mixer();
        this.k = kernels;
        this.hSize = c.shape().hiddenSize();
        this.eps = c.shape().rmsNormEps();
        this.mlp = Mlp.of(weights.mlp(), hSize, kernels);
    }

    /**
     * The layer over {@code x [B·s, H]}; row {@code b} starts from {@code conv[b]} and {@code rec[b]} (never written).
     * With {@code everyToken} the states after each token are kept in {@code out}, else the last; {@code chunked}
     * runs the chunked recurrence (only without {@code everyToken}); a MoE MLP's choices go through {@code router}
     * when it is set.
     */
    float[] forward(float[] x, int s, float[][] conv, float[][] rec, boolean everyToken, boolean chunked,
                    States out, StateArrays arrays, TargetTrace trace, int layer, TokenRouterHook router) {
        int b = conv.length;
        int n = b * s;
        int c = g.convDim();
        int kd = g.keyDim();
        int vd = g.valueDim();
        int hv = g.numValueHeads();

        // 1. projections of a = RMSNorm(x)
        float[] a = new float[n * hSize];
        k.rmsNorm(a, 0, x, 0, w.inputNorm(), hSize, n, eps);
        float[] qkv = new float[n * c];
        float[] z = new float[n * vd];
        float[] bl = new float[n * hv];
        float[] al = new float[n * hv];
        k.matmul(qkv, 0, m.inProjQkv(), a, 0, n);
        k.matmul(z, 0, m.inProjZ(), a, 0, n);
        k.matmul(bl, 0, m.inProjB(), a, 0, n);
        k.matmul(al, 0, m.inProjA(), a, 0, n);

        // 2. causal conv over each row's window, then SiLU; the windows after the tokens
        float[] conved = new float[n * c];
        for (int r = 0; r < b; r++) {
            k.causalConv(conved, r * s * c, qkv, r * s * c, conv[r], 0, m.conv(), c, g.convKernel(), s);
            int kept = everyToken ? s : 1;
            out.conv()[r] = new float[kept][g.windowSize()];
            for (int t = 0; t < kept; t++) {
                int steps = everyToken ? t + 1 : s;
                Kernels.convWindow(out.conv()[r][t], 0, conv[r], 0, qkv, r * s * c, c, g.convKernel(), steps);
            }
        }

        // 3. q̂ = l2norm(q)·Dk^-½, k̂ = l2norm(k), v; 4. gates β = σ(b), g = −exp(A_log)·softplus(a + dt_bias)
        float[] q = new float[n * kd];
        float[] kk = new float[n * kd];
        float[] v = new float[n * vd];
        float scale = (float) (1.0 / StrictMath.sqrt(g.keyHeadDim()));
        for (int t = 0; t < n; t++) {
            k.l2Norm(q, t * kd, conved, t * c, g.keyHeadDim(), g.numKeyHeads(), scale);
            k.l2Norm(kk, t * kd, conved, t * c + kd, g.keyHeadDim(), g.numKeyHeads(), 1f);
            System.arraycopy(conved, t * c + 2 * kd, v, t * vd, vd);
        }
        float[] gate = new float[n * hv];
        float[] beta = new float[n * hv];
        for (int t = 0; t < n; t++) {
            k.gdnGates(gate, t * hv, beta, t * hv, al, t * hv, bl, t * hv, m.aLog(), m.dtBias(), hv);
        }

        // 5. the recurrence per row from its published state (copied: the published one is never written)
        float[] core = new float[n * vd];
        for (int r = 0; r < b; r++) {
            recur(core, r, s, rec[r], q, kk, v, gate, beta, everyToken, chunked, out, arrays);
        }

        // 6. gated RMSNorm per value head (plain gain), 7. out_proj, residual, MLP
        float[] normed = new float[n * vd];
        k.gatedRmsNorm(normed, 0, core, 0, z, 0, m.norm(), g.valueHeadDim(), n * hv, eps);
        float[] mixed = new float[n * hSize];
        k.matmul(mixed, 0, m.outProj(), normed, 0, n);
        float[] h = new float[n * hSize];
        for (int i = 0; i < h.length; i++) {
            h[i] = x[i] + mixed[i];
        }
        float[] post = new float[n * hSize];
        k.rmsNorm(post, 0, h, 0, w.postAttentionNorm(), hSize, n, eps);
        float[] mo = mlp.forward(post, n, null, router);
        float[] y = new float[n * hSize];
        for (int i = 0; i < y.length; i++) {
            y[i] = h[i] + mo[i];
        }
        if (trace != null) {
            String[] names = {"gdn_qkv_raw", "gdn_qkv_conv", "gdn_q", "gdn_k", "gdn_v", "gdn_z", "gdn_a", "gdn_b",
                "gdn_beta", "gdn_g", "gdn_core", "gdn_normed", "gdn_out", "mixer_residual", "mlp_out"};
            float[][] values = {qkv, conved, q, kk, v, z, al, bl, beta, gate, core, normed, mixed, h, mo};
            for (int i = 0; i < names.length; i++) {
                trace.put(layer, names[i], values[i]);
            }
        }
        return y;
    }

    /**
     * Row {@code r}'s recurrence over its {@code s} tokens, writing {@code core} and its states into {@code out}. The
     * published state is only read: the first token steps out of it into another array (no copy first), and a verify
     * steps every token into another array, so the state after each token is kept without copying it. The arrays come
     * from {@code arrays} (stale contents: a step writes every element).
     */
    private void recur(float[] core, int r, int s, float[] published, float[] q, float[] kk, float[] v, float[] gate,
                       float[] beta, boolean everyToken, boolean chunked, States out, StateArrays arrays) {
        int kd = g.keyDim();
        int vd = g.valueDim();
        int hk = g.numKeyHeads();
        int hv = g.numValueHeads();
        int dk = g.keyHeadDim();
        int dv = g.valueHeadDim();
        int t0 = r * s;
        if (chunked && !everyToken) {
            float[] state = arrays.take();
            System.arraycopy(published, 0, state, 0, state.length);
            k.deltaRuleChunked(core, t0 * vd, state, 0, q, t0 * kd, kk, t0 * kd, v, t0 * vd, gate, t0 * hv, beta,
                    t0 * hv, s, hk, hv, dk, dv);
            out.rec()[r] = new float[][] {state};
            return;
        }
        out.rec()[r] = new float[everyToken ? s : 1][];
        float[] state = published;
        for (int t = 0; t < s; t++) {
            int i = t0 + t;
            float[] next = everyToken || t == 0 ? arrays.take() : state;
            k.deltaRuleStep(core, i * vd, next, 0, state, 0, q, i * kd, kk, i * kd, v, i * vd, gate, i * hv, beta,
                    i * hv, hk, hv, dk, dv);
            state = next;
            if (everyToken) {
                out.rec()[r][t] = state;
            }
        }
        if (!everyToken) {
            out.rec()[r][0] = state;
        }
    }
}
