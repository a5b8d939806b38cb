package org.mtporacle.reference.block;

import org.mtporacle.api.MlpWeights;
import org.mtporacle.reference.kernels.Kernels;

/**
 * The decoder layer's MLP (spec §1.4 step 8): {@code m = MLP(n)} for {@code n [N, H]}, row by row, so a batched
 * forward equals rows computed one at a time. Dense ({@link DenseMlp}) or routed MoE ({@link MoeMlp}, spec §12).
 */
public sealed interface Mlp permits DenseMlp, MoeMlp {

    /**
     * {@code m [N, H]} for the {@code N = kvs.length·s} rows of {@code n [N, H]} (row {@code b·s + t} belongs to
     * {@code kvs[b]} at position {@code kvs[b].length() − s + t}, the append done); records intermediates when
     * {@code trace} is set; a MoE MLP's router choices go through {@code hook} when it is set.
     */
    float[] forward(float[] n, RowKv[] kvs, int s, ForwardTrace trace, RouterHook hook);

    /**
     * {@code m [N, H]} for {@code rows} rows of {@code n [N, H]} that belong to no drafter cache (the hybrid target's
     * layers, spec §13.1): no trace, no router hook.
     */
    default float[] forward(float[] n, int rows) {
        return forward(n, rows, null, null);
    }

    /**
     * {@code m [N, H]} for {@code rows} rows of {@code n [N, H]} that belong to no drafter cache (the hybrid target's
     * layers, spec §13.1); records intermediates when {@code trace} is set; a MoE MLP's router choices go through
     * {@code hook}, by forward row, when it is set.
     */
    float[] forward(float[] n, int rows, ForwardTrace trace, TokenRouterHook hook);

    static Mlp of(MlpWeights w, int hiddenSize, Kernels k) {
        return switch (w) {
            case MlpWeights.Dense d -> new DenseMlp(d, hiddenSize, k);
            case MlpWeights.Moe m -> new MoeMlp(m, hiddenSize, k);
        };
    }
}
