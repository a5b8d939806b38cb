package org.mtporacle.reference.target;

import org.mtporacle.api.TargetConfig;
import org.mtporacle.api.TargetModel;
import org.mtporacle.api.TargetWeights;
import org.mtporacle.reference.block.DecoderLayer;
import org.mtporacle.reference.block.ForwardTrace;
import org.mtporacle.reference.block.RowKv;
import org.mtporacle.reference.block.TokenRouterHook;
import org.mtporacle.reference.kernels.Kernels;

/**
 * The hybrid target's forward (spec §13.1): token embedding; per layer a Gated DeltaNet ({@link GdnLayer}) or gated
 * full-attention ({@link DecoderLayer}, the MTP block's layer) decoder layer, each row over its own state; the final
 * norm; the logits head. Both taps are returned: the last layer's output (pre-norm) and the final norm's (post-norm).
 * Each row's result is the same whether it runs alone or batched, in one forward of {@code s} tokens or {@code s}
 * forwards of one (the recurrent form; spec §13.4's exact speculative == plain property rests on it).
 */
public final class HybridTarget {
    private final TargetConfig c;
    private final TargetWeights w;
    private final Kernels k;
    private final Object[] layers; // GdnLayer or DecoderLayer, by layer

    /** What a forward computed: logits {@code [B, n, V]}, taps {@code [B, s, H]}, and the rows' new states. */
    record Result(float[] logits, float[] preNorm, float[] postNorm, GdnLayer.States[] states) {
    }

    public HybridTarget(TargetModel model, Kernels kernels) {
        this.c = model.config();
        this.w = model.weights();
        this.k = kernels;
        this.layers = new Object[c.layerCount()];
        for (int l = 0; l < layers.length; l++) {
            TargetWeights.Layer lw = w.layers().get(l);
            layers[l] = switch (lw.mixer()) {
                case TargetWeights.Gdn gdn -> new GdnLayer(c, lw, kernels);
                case TargetWeights.Attention at -> new DecoderLayer(c.shape(), new DecoderLayer.Weights(
                        lw.inputNorm(), at.qProj(), at.kProj(), at.vProj(), at.oProj(), at.qNorm(), at.kNorm(),
                        lw.postAttentionNorm(), lw.mlp()), kernels);
            };
        }
    }

    public TargetConfig config() {
        return c;
    }

    /** A row that has processed nothing: zero windows and states, empty caches. */
    TargetRowState empty() {
        int nGdn = c.count(TargetConfig.LayerType.LINEAR_ATTENTION);
        int nFull = c.count(TargetConfig.LayerType.FULL_ATTENTION);
        float[][] conv = new float[nGdn][c.gdn().windowSize()];
        float[][] rec = new float[nGdn][c.gdn().stateSize()];
        RowKv[] kv = new RowKv[nFull];
        for (int i = 0; i < nFull; i++) {
            kv[i] = new RowKv(c.shape().numKvHeads(), c.shape().headDim());
        }
        return new TargetRowState(conv, rec, kv);
    }

    /**
     * Feeds {@code ids [B·s]} to rows that have processed {@code at[b]} tokens. GDN states after every token are kept
     * when {@code everyToken} (a verify), else after the last, by the chunked kernel when {@code chunked}. Logits at
     * every position when {@code allLogits}, else at each row's last. Each MoE layer's router choice at each token
     * goes through {@code router} (by row, position {@code at[b] + t} and layer) when it is set (spec §12.5).
     */
    Result forward(TargetRowState[] rows, int[] at, int[] ids, int s, boolean everyToken, boolean chunked,
                   boolean allLogits, StateArrays arrays, TargetTrace trace, ReferenceTargetRows.ExpertChooser router) {
        int b = rows.length;
        int n = b * s;
        int h = c.shape().hiddenSize();
        float[] x = new float[n * h];
        for (int i = 0; i < n; i++) {
            k.embed(x, i * h, w.embedding(), ids[i]);
        }
        GdnLayer.States[] states = new GdnLayer.States[c.count(TargetConfig.LayerType.LINEAR_ATTENTION)];
        for (int l = 0; l < layers.length; l++) {
            int slot = c.slot(l);
            if (layers[l] instanceof GdnLayer gdn) {
                float[][] conv = new float[b][];
                float[][] rec = new float[b][];
                for (int r = 0; r < b; r++) {
                    conv[r] = rows[r].conv()[slot];
                    rec[r] = rows[r].rec()[slot];
                }
                states[slot] = new GdnLayer.States(new float[b][][], new float[b][][]);
                x = gdn.forward(x, s, conv, rec, everyToken, chunked, states[slot], arrays, trace, l,
                        byRow(router, at, s, l));
            } else {
                x = attention((DecoderLayer) layers[l], x, rows, at, slot, s, trace, l, byRow(router, at, s, l));
            }
            if (trace != null) {
                trace.put(l, "layer_out", x);
            }
        }
        float[] post = new float[n * h];
        k.rmsNorm(post, 0, x, 0, w.finalNorm(), h, n, c.shape().rmsNormEps());
        return new Result(logits(post, b, s, allLogits), x, post, states);
    }

    /** Layer {@code l}'s forward rows mapped to (row, position, layer) for {@code router}; null without one. */
    private static TokenRouterHook byRow(ReferenceTargetRows.ExpertChooser router, int[] at, int s, int l) {
        return router == null ? null
                : (i, probs, chosen) -> router.choose(i / s, at[i / s] + i % s, l, probs, chosen);
    }

    private float[] attention(DecoderLayer layer, float[] x, TargetRowState[] rows, int[] at, int slot, int s,
                              TargetTrace trace, int l, TokenRouterHook router) {
        RowKv[] kvs = new RowKv[rows.length];
        for (int r = 0; r < rows.length; r++) {
            kvs[r] = rows[r].kv()[slot];
            kvs[r].setLength(at[r]);
        }
        ForwardTrace ft = trace == null ? null : new ForwardTrace();
        float[] y = layer.forwardRouted(x, kvs, s, ft, router);
        if (trace != null) {
            trace.put(l, "attn_gated", ft.get("gated"));
            trace.put(l, "attn_out", ft.get("attn_proj"));
            trace.put(l, "mixer_residual", ft.get("h1"));
            float[] mlpOut = ft.get("mlp_out") != null ? ft.get("mlp_out") : ft.get("moe_out");
            if (mlpOut != null) {
                trace.put(l, "mlp_out", mlpOut);
            }
        }
        return y;
    }

    /** {@code [B, n, V]} logits of the post-norm hiddens {@code [B, s, H]}: every position, or each row's last. */
    private float[] logits(float[] post, int b, int s, boolean all) {
        int h = c.shape().hiddenSize();
        int v = c.shape().vocabSize();
        if (all) {
            float[] out = new float[b * s * v];
            k.matmul(out, 0, w.head(), post, 0, b * s);
            return out;
        }
        float[] last = new float[b * h];
        for (int r = 0; r < b; r++) {
            System.arraycopy(post, (r * s + s - 1) * h, last, r * h, h);
        }
        float[] out = new float[b * v];
        k.matmul(out, 0, w.head(), last, 0, b);
        return out;
    }
}
