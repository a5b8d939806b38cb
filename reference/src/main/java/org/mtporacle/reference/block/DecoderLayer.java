package org.mtporacle.reference.block;

import org.mtporacle.api.LinearWeight;
import org.mtporacle.api.MlpWeights;
import org.mtporacle.api.MtpConfig;
import org.mtporacle.api.MtpWeights;
import org.mtporacle.reference.kernels.Kernels;

/**
 * One gated full-attention Qwen3.5 decoder layer (spec §1.4 steps 5–9, §1.5): the MTP block's inner layer, and each
 * layer of the reference target. Rows attend to their own cache only.
 */
public final class DecoderLayer {
    private final MtpConfig c;
    private final Weights w;
    private final Kernels k;
    private final Mlp mlp;

    /** The layer's weights, norms in full-gain form; the MLP dense or MoE (spec §12). */
    public record Weights(float[] inputNorm, LinearWeight qProj, LinearWeight kProj, LinearWeight vProj, LinearWeight oProj,
                   float[] qNorm, float[] kNorm, float[] postAttentionNorm, MlpWeights mlp) {
        /** A layer with a dense MLP. */
        public Weights(float[] inputNorm, LinearWeight qProj, LinearWeight kProj, LinearWeight vProj,
                       LinearWeight oProj, float[] qNorm, float[] kNorm, float[] postAttentionNorm,
                       LinearWeight gateProj, LinearWeight upProj, LinearWeight downProj) {
            this(inputNorm, qProj, kProj, vProj, oProj, qNorm, kNorm, postAttentionNorm,
                    new MlpWeights.Dense(gateProj, upProj, downProj));
        }

        public static Weights of(MtpWeights m) {
            return new Weights(m.inputNorm(), m.qProj(), m.kProj(), m.vProj(), m.oProj(), m.qNorm(), m.kNorm(),
                    m.postAttentionNorm(), m.mlp());
        }
    }

    public DecoderLayer(MtpConfig config, Weights weights, Kernels kernels) {
        this.c = config;
        this.w = weights;
        this.k = kernels;
        this.mlp = Mlp.of(weights.mlp(), config.hiddenSize(), kernels);
    }

    /** {@code y = h1 + MLP(RMSNorm(h1))}, {@code h1 = x + attention(RMSNorm(x))} for {@code x [B·S, H]}. */
    public float[] forward(float[] x, RowKv[] kvs, int s, ForwardTrace trace) {
        return forward(x, kvs, s, trace, null);
    }

    /** As {@link #forward(float[], RowKv[], int, ForwardTrace)}; a MoE MLP's choices go through {@code hook}. */
    public float[] forward(float[] x, RowKv[] kvs, int s, ForwardTrace trace, RouterHook hook) {
        return forward(x, kvs, s, trace, hook, null);
    }

    /**
     * As {@link #forward(float[], RowKv[], int, ForwardTrace)}; a MoE MLP's choices go through {@code hook} by
     * forward row (the hybrid target's layers, spec §13.1).
     */
    public float[] forwardRouted(float[] x, RowKv[] kvs, int s, ForwardTrace trace, TokenRouterHook hook) {
        return forward(x, kvs, s, trace, null, hook);
    }

    private float[] forward(float[] x, RowKv[] kvs, int s, ForwardTrace trace, RouterHook hook,
                            TokenRouterHook byRow) {
        int hSize = c.hiddenSize();
        int n = kvs.length * s;
        double eps = c.rmsNormEps();

        // 5–6. a = RMSNorm(x); gated attention; 7. h1 = x + r
        float[] a = new float[n * hSize];
        k.rmsNorm(a, 0, x, 0, w.inputNorm(), hSize, n, eps);
        float[] r = attention(a, kvs, s, trace);
        float[] h1 = new float[n * hSize];
        for (int i = 0; i < h1.length; i++) {
            h1[i] = x[i] + r[i];
        }

        // 8–9. y = h1 + MLP(n), n = RMSNorm(h1); the MLP dense (§1.4 step 8) or MoE (§12.3)
        float[] nrm = new float[n * hSize];
        k.rmsNorm(nrm, 0, h1, 0, w.postAttentionNorm(), hSize, n, eps);
        float[] m = byRow != null ? mlp.forward(nrm, n, trace, byRow) : mlp.forward(nrm, kvs, s, trace, hook);
        float[] y = new float[n * hSize];
        for (int i = 0; i < y.length; i++) {
            y[i] = h1[i] + m[i];
        }
        if (trace != null) {
            trace.put("attn_in", a);
            trace.put("h1", h1);
            trace.put("mlp_in", nrm);
            trace.put("h2", y);
        }
        return y;
    }

    /** Gated attention (spec §1.5) on {@code a [B·S, H]}; appends K/V to each row; returns {@code r [B·S, H]}. */
    private float[] attention(float[] a, RowKv[] kvs, int s, ForwardTrace trace) {
        int n = kvs.length * s;
        int nH = c.numHeads();
        int nKv = c.numKvHeads();
        int d = c.headDim();
        float eps = (float) c.rmsNormEps();

        // 1–2. projections; q and gate interleaved per head: head j = [j·2D, j·2D+D) query, then D gate features
        float[] qg = new float[n * nH * 2 * d];
        float[] kk = new float[n * nKv * d];
        float[] vv = new float[n * nKv * d];
        k.matmul(qg, 0, w.qProj(), a, 0, n);
        k.matmul(kk, 0, w.kProj(), a, 0, n);
        k.matmul(vv, 0, w.vProj(), a, 0, n);
        float[] q = new float[n * nH * d];
        float[] gate = new float[n * nH * d];
        for (int t = 0; t < n; t++) {
            for (int j = 0; j < nH; j++) {
                System.arraycopy(qg, (t * nH + j) * 2 * d, q, (t * nH + j) * d, d);
                System.arraycopy(qg, (t * nH + j) * 2 * d + d, gate, (t * nH + j) * d, d);
            }
        }

        // 3. per-head RMSNorm of q and k over D, before RoPE; v is not normalised
        k.rmsNorm(q, 0, q, 0, w.qNorm(), d, n * nH, eps);
        k.rmsNorm(kk, 0, kk, 0, w.kNorm(), d, n * nKv, eps);
        float[] qNormed = trace == null ? null : q.clone();
        float[] kNormed = trace == null ? null : kk.clone();

        // 5. RoPE at logical positions offset_b + t; 6. append to each row's cache
        for (int b = 0; b < kvs.length; b++) {
            RowKv kv = kvs[b];
            int offset = kv.length();
            kv.reserve(s);
            for (int t = 0; t < s; t++) {
                int row = b * s + t;
                for (int j = 0; j < nH; j++) {
                    k.rope(q, (row * nH + j) * d, c.rotaryDims(), c.ropeTheta(), offset + t);
                }
                for (int g = 0; g < nKv; g++) {
                    k.rope(kk, (row * nKv + g) * d, c.rotaryDims(), c.ropeTheta(), offset + t);
                    kv.put(g, offset + t, kk, (row * nKv + g) * d, vv, (row * nKv + g) * d);
                }
            }
            kv.setLength(offset + s);
        }

        // 7. softmax((q·kᵀ)·D^-½) over each row's visible keys, GQA head j → KV head j / (nH/nKV)
        float[] o = new float[n * nH * d];
        int tMax = 0;
        for (RowKv kv : kvs) {
            tMax = Math.max(tMax, kv.length());
        }
        float[] probs = trace == null ? null : new float[n * nH * tMax];
        float scale = (float) c.attentionScale();
        float[] scores = new float[tMax];
        for (int b = 0; b < kvs.length; b++) {
            RowKv kv = kvs[b];
            int offset = kv.length() - s;
            for (int t = 0; t < s; t++) {
                int row = b * s + t;
                int visible = offset + t + 1;
                for (int j = 0; j < nH; j++) {
                    int g = j / c.groupSize();
                    int qOff = (row * nH + j) * d;
                    k.attention(o, qOff, scores, q, qOff, kv.keys(g), kv.values(g), d, visible, scale);
                    if (probs != null) {
                        System.arraycopy(scores, 0, probs, (row * nH + j) * tMax, visible);
                    }
                }
            }
        }

        // 8. o ⊙ σ(gate), head-major, then · W_oᵀ
        float[] gated = new float[o.length];
        k.sigmoid(gated, 0, gate, 0, o, 0, o.length);
        float[] r = new float[n * c.hiddenSize()];
        k.matmul(r, 0, w.oProj(), gated, 0, n);
        if (trace != null) {
            trace.put("q_proj", qg);
            trace.put("gate", gate);
            trace.put("q_normed", qNormed);
            trace.put("k_normed", kNormed);
            trace.put("q_rope", q);
            trace.put("v", vv);
            trace.put("attn_probs", probs);
            trace.put("attn_out", o);
            trace.put("gated", gated);
            trace.put("attn_proj", r);
        }
        return r;
    }
}
