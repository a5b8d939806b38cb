package org.mtporacle.reference.block;

import org.mtporacle.api.MlpWeights;
import org.mtporacle.reference.kernels.Kernels;

/**
 * The decoder layer's MLP (spec §1.4 step 8): {@code m = MLP(n)} for {@code n [N, H]}, row by row, so a batched
 * forward equals rows computed one at a time. Dense ({@link DenseMlp}) or routed MoE ({@link MoeMlp}, spec §12).
 */
sealed interface Mlp permits DenseMlp, MoeMlp {

    /** {@code m [N, H]} for the {@code rows} rows of {@code n [N, H]}; records intermediates when {@code trace} is set. */
    float[] forward(float[] n, int rows, ForwardTrace trace);

    static Mlp of(MlpWeights w, int hiddenSize, Kernels k) {
        return switch (w) {
            case MlpWeights.Dense d -> new DenseMlp(d, hiddenSize, k);
            case MlpWeights.Moe m -> new MoeMlp(m, hiddenSize, k);
        };
    }
}
