package org.mtporacle.reference.block;

import org.mtporacle.api.MlpWeights;
import org.mtporacle.reference.kernels.Kernels;

/** The dense SwiGLU MLP {@code m = (silu(n·W_gateᵀ) ⊙ (n·W_upᵀ)) · W_downᵀ} (spec §1.4 step 8). */
final class DenseMlp implements Mlp {
    private final MlpWeights.Dense w;
    private final int hSize;
    private final Kernels k;

    DenseMlp(MlpWeights.Dense weights, int hiddenSize, Kernels kernels) {
        this.w = weights;
        this.hSize = hiddenSize;
        this.k = kernels;
    }

    @Override
    public float[] forward(float[] n, RowKv[] kvs, int s, ForwardTrace trace, RouterHook hook) {
        return forward(n, kvs.length * s, trace, null);
    }

    @Override
    public float[] forward(float[] n, int rows, ForwardTrace trace, TokenRouterHook hook) {
        float[] gate = new float[rows * w.width()];
        float[] mlp = swiglu(k, w, n, rows, hSize, gate);
        if (trace != null) {
            trace.put("mlp_act", gate);
            trace.put("mlp_out", mlp);
        }
        return mlp;
    }

    /**
     * {@code y [rows, hSize] = (silu(x·W_gateᵀ) ⊙ (x·W_upᵀ)) · W_downᵀ}, leaving the activation in {@code act
     * [rows, width]}: the dense MLP, and each expert of an MoE layer (spec §12.3), with one arithmetic.
     */
    static float[] swiglu(Kernels k, MlpWeights.Dense d, float[] x, int rows, int hSize, float[] act) {
        float[] up = new float[rows * d.width()];
        k.matmul(act, 0, d.gateProj(), x, 0, rows);
        k.matmul(up, 0, d.upProj(), x, 0, rows);
        k.silu(act, 0, act, 0, up, 0, act.length);
        float[] y = new float[rows * hSize];
        k.matmul(y, 0, d.downProj(), act, 0, rows);
        return y;
    }
}
