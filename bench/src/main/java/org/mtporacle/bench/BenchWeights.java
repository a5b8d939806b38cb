package org.mtporacle.bench;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import org.mtporacle.api.DType;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.LinearWeight;

/** Deterministic synthetic weights and activations for the benchmarks (values only need to be finite and varied). */
final class BenchWeights {
    private static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private BenchWeights() {
    }

    /** {@code n} activations in [−1, 1]. */
    static float[] pattern(int n) {
        float[] v = new float[n];
        for (int i = 0; i < n; i++) {
            v[i] = ((i * 2654435761L >>> 8) % 2001 - 1000) / 1000f;
        }
        return v;
    }

    /** A BF16 {@code [out, in]} weight off-heap, magnitudes in [1/8, 1/4), varied signs. */
    static LinearWeight bf16(Arena arena, int out, int in, long seed) {
        MemorySegment seg = arena.allocate(2L * out * in, 64);
        fillShorts(seg, i -> (short) ((((i + seed) * 2654435761L >>> 7) & 0x807F) | 0x3E00));
        return new LinearWeight.Dense(HostTensor.view(DType.BF16, new int[] {out, in}, seg));
    }

    /** A 4-bit group-64 affine {@code [out, in]} weight off-heap with BF16 scales and biases. */
    static LinearWeight affine4(Arena arena, int out, int in) {
        MemorySegment codes = arena.allocate((long) out * in / 2, 64);
        for (long i = 0; i < Math.min(codes.byteSize(), 1 << 16); i += 4) {
            codes.set(ValueLayout.JAVA_INT_UNALIGNED, i, (int) (i * 2654435761L));
        }
        for (long at = 1 << 16; at < codes.byteSize(); at += 1 << 16) {
            MemorySegment.copy(codes, 0, codes, at, Math.min(1 << 16, codes.byteSize() - at));
        }
        int groups = in / 64;
        MemorySegment scales = arena.allocate(2L * out * groups, 64);
        MemorySegment biases = arena.allocate(2L * out * groups, 64);
        fillShorts(scales, i -> (short) (0x3C00 + (i & 0x3F)));
        fillShorts(biases, i -> (short) (0xBD00 + (i & 0x3F)));
        return new LinearWeight.Affine(HostTensor.view(DType.U32, new int[] {out, in / 8}, codes),
                HostTensor.view(DType.BF16, new int[] {out, groups}, scales),
                HostTensor.view(DType.BF16, new int[] {out, groups}, biases), 4, 64);
    }

    private interface ShortPattern {
        short at(long index);
    }

    /** Fills with a 64 KiB pattern copied over the segment (fast for GiB-sized weights). */
    private static void fillShorts(MemorySegment seg, ShortPattern p) {
        long n = seg.byteSize() / 2;
        long block = Math.min(n, 1 << 15);
        for (long i = 0; i < block; i++) {
            seg.setAtIndex(I16, i, p.at(i));
        }
        for (long at = block; at < n; at += block) {
            MemorySegment.copy(seg, 0, seg, 2 * at, 2 * Math.min(block, n - at));
        }
    }
}
