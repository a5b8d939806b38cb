package org.mtporacle.io;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.file.Path;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorSpecies;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MtpException;

/**
 * The load-time check that every weight the block reads is finite. A NaN or infinity in a weight makes every draft
 * that touches it NaN, and backends then disagree in ways that say nothing about their correctness; a checkpoint with
 * one is broken (a bad conversion or download), so it is refused with the tensor, the element and the value named.
 * The scan reads each float tensor once (the model identity already reads every file byte).
 */
final class FiniteWeights {
    private static final VectorSpecies<Short> S = ShortVector.SPECIES_PREFERRED;
    private static final VectorSpecies<Integer> I = IntVector.SPECIES_PREFERRED;
    private static final ValueLayout.OfShort U16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfInt U32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfLong U64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private FiniteWeights() {
    }

    /**
     * Refuses {@code t} (stored as {@code name}, in {@code dir} when known) if it holds a NaN or an infinity.
     *
     * @throws MtpException INCOMPATIBLE_MODEL naming the tensor, the first such element's index and its value
     */
    static void require(String name, HostTensor t, Path dir) {
        long i = firstNonFinite(t);
        if (i < 0) {
            return;
        }
        float v = t.getFloat(i);
        String what = Float.isNaN(v) ? "NaN" : v > 0 ? "+Infinity" : "-Infinity";
        throw MtpException.incompatibleModel("load: tensor '" + name + "' holds " + what + " at " + index(t.shape(), i)
                + " (its first non-finite element)" + (dir == null ? "" : " in " + dir)
                + "; the reference computes only with finite weights (spec §1.2)");
    }

    /**
     * The flat index of the first NaN or infinity of a floating-point tensor (an all-ones exponent field), or −1:
     * also −1 for integer tensors such as packed codes.
     */
    static long firstNonFinite(HostTensor t) {
        MemorySegment d = t.data();
        long n = t.elementCount();
        return switch (t.dtype()) {
            case BF16 -> first16(d, n, (short) 0x7F80);
            case F16 -> first16(d, n, (short) 0x7C00);
            case F32 -> first32(d, n);
            case F64 -> {
                for (long i = 0; i < n; i++) {
                    long bits = d.getAtIndex(U64, i);
                    if ((bits & 0x7FF0000000000000L) == 0x7FF0000000000000L) {
                        yield i;
                    }
                }
                yield -1;
            }
            default -> -1;
        };
    }

    /** 16-bit floats whose exponent field is {@code exp} (all ones). */
    private static long first16(MemorySegment d, long n, short exp) {
        long i = 0;
        for (long end = n - n % S.length(); i < end; i += S.length()) {
            VectorMask<Short> m = ShortVector.fromMemorySegment(S, d, 2 * i, ByteOrder.LITTLE_ENDIAN).and(exp).eq(exp);
            if (m.anyTrue()) {
                return i + m.firstTrue();
            }
        }
        for (; i < n; i++) {
            if ((d.getAtIndex(U16, i) & exp) == exp) {
                return i;
            }
        }
        return -1;
    }

    private static long first32(MemorySegment d, long n) {
        int exp = 0x7F800000;
        long i = 0;
        for (long end = n - n % I.length(); i < end; i += I.length()) {
            VectorMask<Integer> m = IntVector.fromMemorySegment(I, d, 4 * i, ByteOrder.LITTLE_ENDIAN).and(exp).eq(exp);
            if (m.anyTrue()) {
                return i + m.firstTrue();
            }
        }
        for (; i < n; i++) {
            if ((d.getAtIndex(U32, i) & exp) == exp) {
                return i;
            }
        }
        return -1;
    }

    /** {@code [r, c, …]} of flat index {@code i} in a row-major tensor of {@code shape}. */
    static String index(int[] shape, long i) {
        long[] at = new long[shape.length];
        for (int k = shape.length - 1; k >= 0; k--) {
            at[k] = i % shape[k];
            i /= shape[k];
        }
        StringBuilder sb = new StringBuilder("[");
        for (int k = 0; k < at.length; k++) {
            sb.append(k == 0 ? "" : ", ").append(at[k]);
        }
        return sb.append(']').toString();
    }
}
