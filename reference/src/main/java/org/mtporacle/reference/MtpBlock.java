package org.mtporacle.reference;

import org.mtporacle.api.MtpConfig;
import org.mtporacle.api.MtpWeights;
import org.mtporacle.reference.kernels.Kernels;

/**
 * The MTP draft block (spec §1.4–§1.5): input merge, one gated full-attention Qwen3.5 decoder layer, output norm.
 * A forward appends {@code S} KV positions to each row's own cache and computes each row over only its visible keys,
 * so a batched forward equals one-at-a-time forwards exactly (spec §10.1.3).
 */
public final class MtpBlock implements BlockForward {
    private final MtpConfig c;
    private final MtpWeights w;
    private final Kernels k;

    public MtpBlock(MtpConfig config, MtpWeights weights, Kernels kernels) {
        this.c = config;
        this.w = weights;
        this.k = kernels;
    }

    public MtpConfig config() {
        return c;
    }

    /**
     * {@code Y = forward(E, Hin)} for {@code B = kvs.length} rows of {@code S} new positions each.
     *
     * @param e     {@code [B·S, H]} target token embeddings, row {@code b} at {@code [b·S, (b+1)·S)}
     * @param hin   {@code [B·S, H]} true target taps or chained MTP outputs
     * @param kvs   each row's cache; gets {@code S} positions appended at RoPE positions {@code length … length+S−1}
     * @param trace records intermediates when non-null
     * @return {@code [B·S, H]}
     */
    @Override
    public float[] forward(float[] e, float[] hin, RowKv[] kvs, int s, ForwardTrace trace) {
        int hSize = c.hiddenSize();
        int n = kvs.length * s;
        double eps = c.rmsNormEps();

        // 1–3. u = concat(RMSNorm(E), RMSNorm(Hin)), embedding half first; x = u · W_fcᵀ
        float[] en = new float[n * hSize];
        float[] gn = new float[n * hSize];
        k.rmsNorm(en, 0, e, 0, w.preFcNormEmbedding(), hSize, n, eps);
        k.rmsNorm(gn, 0, hin, 0, w.preFcNormHidden(), hSize, n, eps);
        float[] u = new float[n * 2 * hSize];
        for (int r = 0; r < n; r++) {
            System.arraycopy(en, r * hSize, u, r * 2 * hSize, hSize);
            System.arraycopy(gn, r * hSize, u, r * 2 * hSize + hSize, hSize);
        }
        float[] x = new float[n * hSize];
        k.matmul(x, 0, w.fc(), u, 0, n);

        // 5–6. a = RMSNorm(x); gated attention; 7. h1 = x + r
        float[] a = new float[n * hSize];
        k.rmsNorm(a, 0, x, 0, w.inputNorm(), hSize, n, eps);
        float[] r = attention(a, kvs, s, trace);
        float[] h1 = new float[n * hSize];
        for (int i = 0; i < h1.length; i++) {
            h1[i] = x[i] + r[i];
        }

        // 8–9. y = h1 + down(silu(gate(n)) ⊙ up(n)), n = RMSNorm(h1)
        int inter = c.intermediateSize();
        float[] nrm = new float[n * hSize];
        k.rmsNorm(nrm, 0, h1, 0, w.postAttentionNorm(), hSize, n, eps);
        float[] gate = new float[n * inter];
        float[] up = new float[n * inter];
        k.matmul(gate, 0, w.gateProj(), nrm, 0, n);
        k.matmul(up, 0, w.upProj(), nrm, 0, n);
        for (int i = 0; i < gate.length; i++) {
            float z = gate[i];
            gate[i] = z * sigmoid(z) * up[i];
        }
        float[] mlp = new float[n * hSize];
        k.matmul(mlp, 0, w.downProj(), gate, 0, n);
        float[] y = new float[n * hSize];
        for (int i = 0; i < y.length; i++) {
            y[i] = h1[i] + mlp[i];
        }

        // 10. Y = RMSNorm(y, w_norm)
        float[] out = new float[n * hSize];
        k.rmsNorm(out, 0, y, 0, w.finalNorm(), hSize, n, eps);
        if (trace != null) {
            trace.put("e", en);
            trace.put("g", gn);
            trace.put("x", x);
            trace.put("attn_in", a);
            trace.put("h1", h1);
            trace.put("mlp_in", nrm);
            trace.put("mlp_act", gate);
            trace.put("mlp_out", mlp);
            trace.put("h2", y);
        }
        return out;
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
        float[] probs = trace == null ? null : new float[n * nH * maxLength(kvs)];
        int tMax = maxLength(kvs);
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
                    float[] keys = kv.keys(g);
                    float[] vals = kv.values(g);
                    int qOff = (row * nH + j) * d;
                    float max = Float.NEGATIVE_INFINITY;
                    for (int p = 0; p < visible; p++) {
                        scores[p] = k.dot(q, qOff, keys, p * d, d) * scale;
                        max = Math.max(max, scores[p]);
                    }
                    float sum = 0f;
                    for (int p = 0; p < visible; p++) {
                        scores[p] = (float) Math.exp(scores[p] - max);
                        sum += scores[p];
                    }
                    float inv = 1f / sum;
                    for (int p = 0; p < visible; p++) {
                        float pr = scores[p] * inv;
                        if (probs != null) {
                            probs[(row * nH + j) * tMax + p] = pr;
                        }
                        for (int i = 0; i < d; i++) {
                            o[qOff + i] += pr * vals[p * d + i];
                        }
                    }
                }
            }
        }

        // 8. o ⊙ σ(gate), head-major, then · W_oᵀ
        float[] gated = new float[o.length];
        for (int i = 0; i < o.length; i++) {
            gated[i] = o[i] * sigmoid(gate[i]);
        }
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

    private static int maxLength(RowKv[] kvs) {
        int m = 0;
        for (RowKv kv : kvs) {
            m = Math.max(m, kv.length());
        }
        return m;
    }

    static float sigmoid(float z) {
        return (float) (1.0 / (1.0 + Math.exp(-z)));
    }
}
