package org.mtporacle.reference.kernels;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorShuffle;
import jdk.incubator.vector.VectorSpecies;

/**
 * The one lane reduction every vector kernel uses: a fixed halving tree, {@code lane[j] += lane[j + L/2]}, then
 * {@code L/4}, …, then lane 0 is read.
 *
 * <p>{@code FloatVector.reduceLanes(ADD)} leaves the order unspecified, and its intrinsic and its Java fallback do add
 * in different orders, so a result could depend on whether C2 had compiled the caller yet. A tree of lane-wise adds
 * over constant shuffles is exact IEEE arithmetic in both, which keeps results bit-identical across runs and threads.
 */
final class LaneSum {
    /** The species of every vector kernel: the preferred (widest) float species of this CPU. */
    static final VectorSpecies<Float> F = FloatVector.SPECIES_PREFERRED;
    /** Lanes per float vector. */
    static final int L = F.length();

    private static final VectorShuffle<Float>[] HALVES = halves();
    /** The transposed tree of {@link #sum16} (16 lanes): lanes with bit b set, and the partner lane {@code j ^ b}. */
    private static final VectorMask<Float> M8 = bit(8), M4 = bit(4), M2 = bit(2), M1 = bit(1);
    private static final VectorShuffle<Float> X8 = xor(8), X4 = xor(4), X2 = xor(2), X1 = xor(1);
    /** Lane {@code k} ← lane {@code bitreverse4(k)}: where {@link #sum16} leaves the sum of row {@code k}. */
    private static final VectorShuffle<Float> REV = VectorShuffle.fromOp(F, j -> Integer.reverse(j) >>> 28 & (L - 1));

    private LaneSum() {
    }

    /** {@code Σ lanes of v} in the halving-tree order. */
    static float sum(FloatVector v) {
        for (VectorShuffle<Float> s : HALVES) {
            v = v.add(v.rearrange(s));
        }
        return v.lane(0);
    }

    /**
     * {@code res[k] = sum(acc[16k, 16k+16))} for {@code k < 16}, bit-identical to {@link #sum} of each row. With 16
     * lanes the 16 trees run side by side: level {@code b} (8, 4, 2, 1) packs two partial rows into one vector and adds
     * each lane {@code j} to lane {@code j ^ b} of the same row, exactly the pairs {@link #sum} adds (IEEE addition
     * commutes), with 15 lane-wise adds instead of 64.
     */
    static void sum16(float[] res, int resOff, float[] acc) {
        if (L != 16) {
            for (int k = 0; k < 16; k++) {
                res[resOff + k] = sum(FloatVector.fromArray(F, acc, k * L));
            }
            return;
        }
        FloatVector b0 = pair(acc, 0, 1), b1 = pair(acc, 2, 3), b2 = pair(acc, 4, 5), b3 = pair(acc, 6, 7);
        FloatVector b4 = pair(acc, 8, 9), b5 = pair(acc, 10, 11), b6 = pair(acc, 12, 13), b7 = pair(acc, 14, 15);
        FloatVector c0 = pair(b0, b1, M4, X4), c1 = pair(b2, b3, M4, X4);
        FloatVector c2 = pair(b4, b5, M4, X4), c3 = pair(b6, b7, M4, X4);
        FloatVector d0 = pair(c0, c1, M2, X2), d1 = pair(c2, c3, M2, X2);
        pair(d0, d1, M1, X1).rearrange(REV).intoArray(res, resOff);
    }

    private static FloatVector pair(float[] acc, int i, int k) {
        return pair(FloatVector.fromArray(F, acc, i * 16), FloatVector.fromArray(F, acc, k * 16), M8, X8);
    }

    /** {@code a} in the lanes of {@code m}'s clear bits, {@code b} in its set bits, each lane plus its partner. */
    private static FloatVector pair(FloatVector a, FloatVector b, VectorMask<Float> m, VectorShuffle<Float> x) {
        return a.blend(b, m).add(b.blend(a, m).rearrange(x));
    }

    private static VectorMask<Float> bit(int b) {
        return VectorMask.fromLong(F, L == 16 ? bitsSet(b) : 0L);
    }

    private static long bitsSet(int b) {
        long m = 0;
        for (int j = 0; j < 16; j++) {
            m |= (j & b) != 0 ? 1L << j : 0;
        }
        return m;
    }

    private static VectorShuffle<Float> xor(int b) {
        return VectorShuffle.fromOp(F, j -> (j ^ b) & (L - 1));
    }

    @SuppressWarnings("unchecked")
    private static VectorShuffle<Float>[] halves() {
        int steps = Integer.numberOfTrailingZeros(L);
        VectorShuffle<Float>[] out = new VectorShuffle[steps];
        for (int k = 0, step = L / 2; step >= 1; k++, step /= 2) {
            final int s = step;
            out[k] = VectorShuffle.fromOp(F, j -> (j + s) % L);
        }
        return out;
    }

    /** For reports: {@code "FloatVector 512-bit, 16 lanes"}. */
    static String describe() {
        return "FloatVector " + F.vectorBitSize() + "-bit, " + L + " lanes";
    }
}
