package org.mtporacle.mlx;

import org.mtporacle.api.LinearWeight;
import org.mtporacle.mlx.ffi.MlxC;
import org.mtporacle.mlx.handle.MlxArray;
import org.mtporacle.mlx.handle.MlxOps;

import java.util.ArrayList;
import java.util.List;

/**
 * One linear layer (or embedding table) on the device: dense {@code Wᵀ} in the compute dtype, or MLX affine codes
 * with scales and biases in the compute dtype (spec §2). Owns its arrays.
 */
sealed interface MlxLinear extends AutoCloseable {

    /** {@code x · Wᵀ}, {@code [..., in] → [..., out]}. */
    MlxArray apply(MlxOps ops, MlxArray x);

    /** Rows {@code ids} of the table {@code [V, H]} as {@code [ids..., H]} in the compute dtype (spec §1.7). */
    MlxArray gather(MlxOps ops, MlxArray ids, int computeDtype);

    @Override
    void close();

    /**
     * Uploads {@code w} in {@code computeDtype} (codes stay U32). With {@code quantF32}, affine scales and biases are
     * kept in f32 and quantized products run on f32 activations, rounded to the compute dtype afterwards: MLX 0.31's
     * CPU {@code quantized_matmul} accumulates bf16 inputs in bf16 (NMSE ~1e-3 on a 512-wide dot), whereas its Metal
     * kernels, which the seed ran on, accumulate in f32.
     */
    static MlxLinear upload(MlxOps ops, LinearWeight w, int computeDtype, boolean quantF32) {
        return switch (w) {
            case LinearWeight.Dense d -> {
                MlxArray table = cast(ops, ops.fromHost(d.weight()), computeDtype);
                MlxArray wt = ops.transpose(table, 1, 0);
                ops.eval(wt);
                yield new Dense(ops.scope().release(table), ops.scope().release(wt));
            }
            case LinearWeight.Affine a -> {
                MlxArray codes = ops.fromHost(a.codes());
                int scaleDtype = quantF32 ? MlxC.MLX_FLOAT32 : computeDtype;
                MlxArray scales = cast(ops, ops.fromHost(a.scales()), scaleDtype);
                MlxArray biases = a.biases() == null ? null : cast(ops, ops.fromHost(a.biases()), scaleDtype);
                ops.eval(codes);
                ops.eval(scales);
                if (biases != null) {
                    ops.eval(biases);
                }
                yield new Affine(ops.scope().release(codes), ops.scope().release(scales),
                        biases == null ? null : ops.scope().release(biases), a.groupSize(), a.bits());
            }
        };
    }

    private static MlxArray cast(MlxOps ops, MlxArray a, int dtype) {
        if (a.dtype() == dtype) {
            return a;
        }
        MlxArray c = ops.astype(a, dtype);
        ops.eval(c);
        return c;
    }

    /** A dense weight: {@code table [out, in]} (gathered as an embedding) and its transpose view. */
    record Dense(MlxArray table, MlxArray transposed) implements MlxLinear {
        @Override
        public MlxArray apply(MlxOps ops, MlxArray x) {
            return ops.matmul(x, transposed);
        }

        @Override
        public MlxArray gather(MlxOps ops, MlxArray ids, int computeDtype) {
            return ops.take(table, ids, 0);
        }

        @Override
        public void close() {
            transposed.close();
            table.close();
        }
    }

    /** MLX affine weights. */
    record Affine(MlxArray codes, MlxArray scales, MlxArray biases, int groupSize, int bits) implements MlxLinear {
        @Override
        public MlxArray apply(MlxOps ops, MlxArray x) {
            int xt = x.dtype();
            int st = scales.dtype();
            MlxArray in = xt == st ? x : ops.astype(x, st);
            MlxArray y = ops.quantizedMatmul(in, codes, scales, biases, groupSize, bits);
            return xt == st ? y : ops.astype(y, xt);
        }

        @Override
        public MlxArray gather(MlxOps ops, MlxArray ids, int computeDtype) {
            MlxArray q = ops.take(codes, ids, 0);
            MlxArray s = ops.take(scales, ids, 0);
            MlxArray b = biases == null ? null : ops.take(biases, ids, 0);
            MlxArray w = ops.dequantize(q, s, b, groupSize, bits);
            return w.dtype() == computeDtype ? w : ops.astype(w, computeDtype);
        }

        @Override
        public void close() {
            List<MlxArray> all = new ArrayList<>(List.of(codes, scales));
            if (biases != null) {
                all.add(biases);
            }
            all.forEach(MlxArray::close);
        }
    }
}
