package org.mtporacle.io;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import org.junit.jupiter.api.Test;
import org.mtporacle.api.DType;
import org.mtporacle.api.HostTensor;

/** The non-finite scan on raw bit patterns of every float dtype, at every position relative to the vector blocks. */
class FiniteWeightsTest {
    private static final ValueLayout.OfShort U16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfInt U32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfLong U64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    /** Per dtype: finite extremes (max, −max, smallest subnormal, −0), then NaN, +Inf, −Inf and a NaN payload. */
    private static final long[] BF16 = {0x7F7F, 0xFF7F, 0x0001, 0x8000, 0x7FC0, 0x7F80, 0xFF80, 0x7F81};
    private static final long[] F16 = {0x7BFF, 0xFBFF, 0x0001, 0x8000, 0x7E00, 0x7C00, 0xFC00, 0x7C01};
    private static final long[] F32 = {0x7F7FFFFFL, 0xFF7FFFFFL, 0x1, 0x80000000L, 0x7FC00000L, 0x7F800000L,
        0xFF800000L, 0x7F800001L};
    private static final long[] F64 = {0x7FEFFFFFFFFFFFFFL, 0xFFEFFFFFFFFFFFFFL, 0x1, 0x8000000000000000L,
        0x7FF8000000000000L, 0x7FF0000000000000L, 0xFFF0000000000000L, 0x7FF0000000000001L};

    private static HostTensor tensor(Arena arena, DType dtype, int n, long fill, int at, long bad) {
        MemorySegment seg = arena.allocate(n * dtype.byteSize(), 64);
        for (int i = 0; i < n; i++) {
            long bits = i == at ? bad : fill;
            switch (dtype) {
                case BF16, F16 -> seg.setAtIndex(U16, i, (short) bits);
                case F32 -> seg.setAtIndex(U32, i, (int) bits);
                default -> seg.setAtIndex(U64, i, bits);
            }
        }
        return HostTensor.view(dtype, new int[] {n}, seg);
    }

    @Test
    void findsTheFirstNanOrInfinityAndNothingElse() {
        try (Arena arena = Arena.ofConfined()) {
            for (DType dtype : new DType[] {DType.BF16, DType.F16, DType.F32, DType.F64}) {
                long[] p = switch (dtype) {
                    case BF16 -> BF16;
                    case F16 -> F16;
                    case F32 -> F32;
                    default -> F64;
                };
                // lengths around the vector blocks of every lane count up to 64, positions at both ends and edges
                for (int n : new int[] {1, 15, 16, 17, 31, 33, 64, 65, 200}) {
                    for (int finite = 0; finite < 4; finite++) {
                        assertThat(FiniteWeights.firstNonFinite(tensor(arena, dtype, n, p[finite], -1, 0)))
                                .as("%s n=%d all 0x%x", dtype, n, p[finite]).isEqualTo(-1);
                        for (int bad = 4; bad < 8; bad++) {
                            for (int at : new int[] {0, n / 2, n - 1, Math.min(n - 1, 16), Math.min(n - 1, 32)}) {
                                assertThat(FiniteWeights.firstNonFinite(tensor(arena, dtype, n, p[finite], at, p[bad])))
                                        .as("%s n=%d 0x%x at %d among 0x%x", dtype, n, p[bad], at, p[finite])
                                        .isEqualTo(at);
                            }
                        }
                    }
                }
            }
        }
    }

    @Test
    void reportsTheEarliestOfSeveralAndIgnoresIntegerTensors() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment seg = arena.allocate(400, 64);
            for (int i = 0; i < 100; i++) {
                seg.setAtIndex(U32, i, 0x3F800000);
            }
            seg.setAtIndex(U32, 70, 0x7FC00000);
            seg.setAtIndex(U32, 40, 0xFF800000);
            seg.setAtIndex(U32, 1, 0x7F800000);
            assertThat(FiniteWeights.firstNonFinite(HostTensor.view(DType.F32, new int[] {100}, seg))).isEqualTo(1);
            assertThat(FiniteWeights.firstNonFinite(HostTensor.view(DType.F32, new int[] {98}, seg.asSlice(8))))
                    .isEqualTo(38);
            // the same bits as packed codes: an all-ones exponent pattern is just a code there
            assertThat(FiniteWeights.firstNonFinite(HostTensor.view(DType.U32, new int[] {100}, seg))).isEqualTo(-1);
        }
    }

    @Test
    void indexIsRowMajor() {
        assertThat(FiniteWeights.index(new int[] {7}, 5)).isEqualTo("[5]");
        assertThat(FiniteWeights.index(new int[] {4, 10}, 37)).isEqualTo("[3, 7]");
        assertThat(FiniteWeights.index(new int[] {2, 3, 4}, 23)).isEqualTo("[1, 2, 3]");
    }
}
