package org.mtporacle.mlx;

import org.mtporacle.api.MtpException;
import org.mtporacle.api.TargetConfig;
import org.mtporacle.mlx.ffi.MlxC;
import org.mtporacle.mlx.handle.MlxArray;
import org.mtporacle.mlx.handle.MlxCudaKernel;
import org.mtporacle.mlx.handle.MlxLibrary;
import org.mtporacle.mlx.handle.MlxOps;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The Gated DeltaNet recurrence of one layer over all {@code S} tokens of a forward as one CUDA kernel of ours (spec
 * §13.2 step 4, the same arithmetic as {@link MlxGdn}'s per-token MLX ops, in f32): one block per (row, value head),
 * one thread per state column {@code j}, which keeps its column {@code S[:, j]} ({@code Dk} floats) in registers for
 * all tokens; per token {@code S ← αS; m = k̂ᵀS; δ = β(v − m); S ← S + k̂δᵀ; o = q̂ᵀS}, with {@code k̂_t, q̂_t} of the
 * value head's key head staged in shared memory. It writes the read-outs {@code [B, S, Hv, Dv]} and either the state
 * after every token ({@code [S·B, Hv, Dk, Dv]}, token-major, as a verify keeps them) or only the last
 * ({@code [B, Hv, Dk, Dv]}). One launch replaces the per-token ops (at {@code S = 4}, 66 graph nodes and 34 CUDA
 * launches per layer, measured on an H200). Only on a CUDA GPU stream; elsewhere {@link MlxGdn} keeps the ops.
 */
final class MlxGdnKernel implements AutoCloseable {
    /** The kernel body; MLX writes the signature (inputs {@code const float*}, outputs {@code float*}). */
    static final String SOURCE = """
            // one block per (row b, value head h), one thread per state column j
            const int j = threadIdx.x;
            const int h = blockIdx.y;
            const int b = blockIdx.z;
            const int nb = q_shape[0];
            const int s = q_shape[1];
            const int ch = conv_shape[2];
            const int hk = h / (HV / HK);
            const size_t plane = (size_t)DK * DV;
            __shared__ float kt[DK];
            __shared__ float qt[DK];
            float st[DK];
            const float* s0 = state + ((size_t)b * HV + h) * plane + j;
            #pragma unroll
            for (int i = 0; i < DK; i++) {
              st[i] = s0[(size_t)i * DV];
            }
            for (int t = 0; t < s; t++) {
              const size_t row = (size_t)b * s + t;
              for (int i = j; i < DK; i += DV) {
                kt[i] = k[(row * HK + hk) * DK + i];
                qt[i] = q[(row * HK + hk) * DK + i];
              }
              __syncthreads();
              const float a = alpha[row * HV + h];
              const float be = beta[row * HV + h];
              float m = 0.0f;
              #pragma unroll
              for (int i = 0; i < DK; i++) {
                st[i] = st[i] * a;
                m = fmaf(kt[i], st[i], m);
              }
              const float d = (conv[row * ch + 2 * HK * DK + h * DV + j] - m) * be;
              float o = 0.0f;
              #pragma unroll
              for (int i = 0; i < DK; i++) {
                st[i] = fmaf(kt[i], d, st[i]);
                o = fmaf(qt[i], st[i], o);
              }
              out[(row * HV + h) * DV + j] = o;
              if (EVERY) {
                float* e = states + (((size_t)t * nb + b) * HV + h) * plane + j;
                #pragma unroll
                for (int i = 0; i < DK; i++) {
                  e[(size_t)i * DV] = st[i];
                }
              }
              __syncthreads();
            }
            if (!EVERY) {
              float* e = states + ((size_t)b * HV + h) * plane + j;
              #pragma unroll
              for (int i = 0; i < DK; i++) {
                e[(size_t)i * DV] = st[i];
              }
            }
            """;

    private static final List<String> INPUTS = List.of("state", "q", "k", "conv", "alpha", "beta");
    private static final List<String> OUTPUTS = List.of("out", "states");

    private final TargetConfig.Gdn g;
    private final MlxCudaKernel kernel;

    MlxGdnKernel(MlxLibrary lib, TargetConfig.Gdn g) {
        if (g.valueHeadDim() > 1024 || g.keyHeadDim() > 256 || g.numValueHeads() % g.numKeyHeads() != 0) {
            throw MtpException.invalidArgument("gdn kernel: Dv = " + g.valueHeadDim() + ", Dk = " + g.keyHeadDim()
                    + ", Hv = " + g.numValueHeads() + ", Hk = " + g.numKeyHeads()
                    + "; expected Dv ≤ 1024, Dk ≤ 256 and Hk dividing Hv");
        }
        this.g = g;
        this.kernel = new MlxCudaKernel(lib, "mtp_gdn_recurrence", INPUTS, OUTPUTS, SOURCE, "");
    }

    /** The read-outs {@code [B, S, Hv, Dv]} and the states (every token's, token-major, or the last), all f32. */
    record Out(MlxArray out, MlxArray states) {
    }

    /**
     * The recurrence from {@code state [B, Hv, Dk, Dv]} over {@code q̂, k̂ [B, S, Hk, Dk]} (normalised, per key head),
     * the conv output {@code conv [B, S, C]} (its value part from column {@code 2·Hk·Dk}) and the gates
     * {@code alpha, beta [B, S, Hv]}, every input f32.
     */
    Out apply(MlxOps ops, MlxArray state, MlxArray q, MlxArray k, MlxArray conv, MlxArray alpha, MlxArray beta,
              boolean every) {
        for (MlxArray a : new MlxArray[] {state, q, k, conv, alpha, beta}) {
            if (a.dtype() != MlxC.MLX_FLOAT32) {
                throw MtpException.invalidArgument("gdn kernel: an input is not f32 (" + a + ")");
            }
        }
        int b = q.dim(0);
        int s = q.dim(1);
        int hv = g.numValueHeads();
        int dk = g.keyHeadDim();
        int dv = g.valueHeadDim();
        Map<String, Object> t = new LinkedHashMap<>();
        t.put("DK", dk);
        t.put("DV", dv);
        t.put("HV", hv);
        t.put("HK", g.numKeyHeads());
        t.put("EVERY", every);
        List<MlxArray> r = kernel.apply(ops, List.of(state, q, k, conv, alpha, beta), List.of(
                new MlxCudaKernel.Output(MlxC.MLX_FLOAT32, b, s, hv, dv),
                new MlxCudaKernel.Output(MlxC.MLX_FLOAT32, every ? s * b : b, hv, dk, dv)),
                new int[] {dv, hv, b}, new int[] {dv, 1, 1}, t);
        return new Out(r.get(0), r.get(1));
    }

    @Override
    public void close() {
        kernel.close();
    }
}
