package org.mtporacle.io;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import org.mtporacle.api.HostTensor;
import org.mtporacle.api.LinearWeight;
import org.mtporacle.api.TargetConfig;

/**
 * Qwen3-Next's fused, per-key-head interleaved GDN input projections reordered into Qwen3.5's flat ones (spec §13.2).
 * With {@code r = Hv/Hk} and {@code G = 2·Dk + 2·r·Dv}, key group {@code g} owns rows {@code [g·G, (g+1)·G)} of
 * {@code in_proj_qkvz}: {@code q_g} ({@code Dk}), {@code k_g} ({@code Dk}), then {@code v} of value heads
 * {@code g·r … g·r+r−1} ({@code r·Dv}), then their {@code z} ({@code r·Dv}); and rows {@code [g·2r, (g+1)·2r)} of
 * {@code in_proj_ba}: {@code b} of those value heads, then their {@code a}. The flat layout is
 * {@code [q (Hk·Dk) | k (Hk·Dk) | v (Hv·Dv)]}, {@code z (Hv·Dv)}, {@code b (Hv)}, {@code a (Hv)}, heads contiguous.
 * Only rows move, so a dense weight and an MLX affine one (codes, scales and biases rows) reorder alike.
 */
final class GdnProjections {
    private GdnProjections() {
    }

    /**
     * For each row of the flat {@code [q | k | v | z]} (length {@code 2·Hk·Dk + 2·Hv·Dv}), the {@code in_proj_qkvz}
     * row it comes from.
     */
    static int[] qkvzSourceRows(TargetConfig.Gdn g) {
        int dk = g.keyHeadDim();
        int dv = g.valueHeadDim();
        int r = g.groupRatio();
        int group = 2 * dk + 2 * r * dv;
        int kd = g.keyDim();
        int vd = g.valueDim();
        int[] src = new int[2 * kd + 2 * vd];
        for (int k = 0; k < g.numKeyHeads(); k++) {
            int base = k * group;
            for (int x = 0; x < dk; x++) {
                src[k * dk + x] = base + x;                       // q of key head k
                src[kd + k * dk + x] = base + dk + x;             // k of key head k
            }
            for (int i = 0; i < r; i++) {
                int head = k * r + i;                             // value head using key head k
                for (int x = 0; x < dv; x++) {
                    src[2 * kd + head * dv + x] = base + 2 * dk + i * dv + x;               // v
                    src[2 * kd + vd + head * dv + x] = base + 2 * dk + r * dv + i * dv + x; // z
                }
            }
        }
        return src;
    }

    /** For each row of the flat {@code [b | a]} (length {@code 2·Hv}), the {@code in_proj_ba} row it comes from. */
    static int[] baSourceRows(TargetConfig.Gdn g) {
        int r = g.groupRatio();
        int hv = g.numValueHeads();
        int[] src = new int[2 * hv];
        for (int k = 0; k < g.numKeyHeads(); k++) {
            for (int i = 0; i < r; i++) {
                src[k * r + i] = k * 2 * r + i;
                src[hv + k * r + i] = k * 2 * r + r + i;
            }
        }
        return src;
    }

    /** A new linear whose row {@code j} is row {@code src[from + j]} of {@code w}, for {@code j < to − from}. */
    static LinearWeight rows(LinearWeight w, int[] src, int from, int to) {
        return switch (w) {
            case LinearWeight.Dense d -> new LinearWeight.Dense(rows(d.weight(), src, from, to));
            case LinearWeight.Affine q -> new LinearWeight.Affine(rows(q.codes(), src, from, to),
                    rows(q.scales(), src, from, to), q.biases() == null ? null : rows(q.biases(), src, from, to),
                    q.bits(), q.groupSize());
        };
    }

    /** Rows {@code src[from … to)} of the 2-D tensor {@code t}, copied into a new tensor. */
    private static HostTensor rows(HostTensor t, int[] src, int from, int to) {
        long rowBytes = t.byteSize() / t.dim(0);
        MemorySegment out = Arena.ofAuto().allocate(Math.max(1, (to - from) * rowBytes), 8)
                .asSlice(0, (to - from) * rowBytes);
        for (int j = from; j < to; j++) {
            MemorySegment.copy(t.data(), src[j] * rowBytes, out, (j - from) * rowBytes, rowBytes);
        }
        return HostTensor.view(t.dtype(), new int[] {to - from, t.dim(1)}, out);
    }
}
