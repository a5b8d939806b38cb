package org.mtporacle.reference.block;

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
    private final DecoderLayer layer;

    public MtpBlock(MtpConfig config, MtpWeights weights, Kernels kernels) {
        this.c = config;
        this.w = weights;
        this.k = kernels;
        this.layer = new DecoderLayer(config, DecoderLayer.Weights.of(weights), kernels);
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
        return forward(e, hin, kvs, s, trace, null);
    }

    /** As {@link #forward(float[], float[], RowKv[], int, ForwardTrace)}; a MoE layer's choices go through {@code hook}. */
    @Override
    public float[] forward(float[] e, float[] hin, RowKv[] kvs, int s, ForwardTrace trace, RouterHook hook) {
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

        // 5–9. the decoder layer: y = h1 + MLP(RMSNorm(h1)), h1 = x + attention(RMSNorm(x))
        float[] y = layer.forward(x, kvs, s, trace, hook);

        // 10. Y = RMSNorm(y, w_norm)
        float[] out = new float[n * hSize];
        k.rmsNorm(out, 0, y, 0, w.finalNorm(), hSize, n, eps);
        if (trace != null) {
            trace.put("e", en);
            trace.put("g", gn);
            trace.put("x", x);
        }
        return out;
    }
}
