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
        int rows = kvs.length * s;
        int inter = w.width();
        float[] gate = new float[rows * inter];
        float[] up = new float[rows * inter];
        k.matmul(gate, 0, w.gateProj(), n, 0, rows);
        k.matmul(up, 0, w.upProj(), n, 0, rows);
        k.silu(gate, 0, gate, 0, up, 0, gate.length);
        float[] mlp = new float[rows * hSize];
        k.matmul(mlp, 0, w.downProj(), gate, 0, rows);
        if (trace != null) {
            trace.put("mlp_act", gate);
            trace.put("mlp_out", mlp);
        }
        return mlp;
    }
}
