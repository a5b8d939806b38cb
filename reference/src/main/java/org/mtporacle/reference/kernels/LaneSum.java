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
    /** The levels of {@link #HALVES} as constants (unused ones repeat level 0; {@link #sum} skips them). */
    private static final VectorShuffle<Float> S0 = HALVES[0], S1 = HALVES[Math.min(1, HALVES.length - 1)],
            S2 = HALVES[Math.min(2, HALVES.length - 1)], S3 = HALVES[Math.min(3, HALVES.length - 1)];
    /** The transposed tree of {@link #sum16} (16 lanes): lanes with bit b set, and the partner lane {@code j ^ b}. */
    private static final VectorMask<Float> M8 = bit(8), M4 = bit(4), M2 = bit(2), M1 = bit(1);
    private static final VectorShuffle<Float> X8 = xor(8), X4 = xor(4), X2 = xor(2), X1 = xor(1);
    /** Lane {@code k} ← lane {@code bitreverse4(k)}: where {@link #sum16} leaves the sum of row {@code k}. */
    private static final VectorShuffle<Float> REV = VectorShuffle.fromOp(F, j -> Integer.reverse(j) >>> 28 & (L - 1));

    private LaneSum() {
    }

    /**
     * {@code Σ lanes of v} in the halving-tree order. The levels are written out with constant shuffles: a shuffle
     * read from an array in a loop is not a compile-time constant, and C2 then may not intrinsify the rearrange, which
     * boxes the vector; seen as an 8× slower BF16 mat-vec in a JVM whose first work was a 12288×4096 mat-vec.
     */
    static float sum(FloatVector v) {
        if (HALVES.length <= 4) {
            if (HALVES.length > 0) {
                v = v.add(v.rearrange(S0));
            }
            if (HALVES.length > 1) {
                v = v.add(v.rearrange(S1));
            }
            if (HALVES.length > 2) {
                v = v.add(v.rearrange(S2));
            }
            if (HALVES.length > 3) {
                v = v.add(v.rearrange(S3));
            }
            return v.lane(0);
        }
        for (VectorShuffle<Float> s : HALVES) { // more than 16 lanes
            v = v.add(v.rearrange(s));
        }
        return v.lane(0);
    }

    /**
     * {@code res[k] = sum(acc[16k, 16k+16))} for {@code k < 16}, bit-identical to {@link #sum} of each row. With 16
     * lanes the 16 trees run side by side: level {@code b} (8, 4, 2, 1) packs two partial rows into one vector and adds
     * each lane {@code j} to lane {@code j ^ b} of the same row, exactly the pairs {@link #sum} adds (IEEE addition
     * commutes), with 15 lane-wise adds instead of 64. Level b: {@code a} in the lanes with bit b clear, {@code b} in those
     * with it set, plus the same blend the other way round moved to the partner lanes.
     */
    static void sum16(float[] res, int resOff, float[] acc) {
        if (L != 16) {
            for (int k = 0; k < 16; k++) {
                res[resOff + k] = sum(FloatVector.fromArray(F, acc, k * L));
            }
            return;
        }
        // Written out without helper methods: a helper taking vectors may be left uninlined (node-count cutoff),
        // which boxes every vector it is passed.
        FloatVector v0 = FloatVector.fromArray(F, acc, 0), v1 = FloatVector.fromArray(F, acc, 16);
        FloatVector b0 = v0.blend(v1, M8).add(v1.blend(v0, M8).rearrange(X8));
        v0 = FloatVector.fromArray(F, acc, 32); v1 = FloatVector.fromArray(F, acc, 48);
        FloatVector b1 = v0.blend(v1, M8).add(v1.blend(v0, M8).rearrange(X8));
        v0 = FloatVector.fromArray(F, acc, 64); v1 = FloatVector.fromArray(F, acc, 80);
        FloatVector b2 = v0.blend(v1, M8).add(v1.blend(v0, M8).rearrange(X8));
        v0 = FloatVector.fromArray(F, acc, 96); v1 = FloatVector.fromArray(F, acc, 112);
        FloatVector b3 = v0.blend(v1, M8).add(v1.blend(v0, M8).rearrange(X8));
        v0 = FloatVector.fromArray(F, acc, 128); v1 = FloatVector.fromArray(F, acc, 144);
        FloatVector b4 = v0.blend(v1, M8).add(v1.blend(v0, M8).rearrange(X8));
        v0 = FloatVector.fromArray(F, acc, 160); v1 = FloatVector.fromArray(F, acc, 176);
        FloatVector b5 = v0.blend(v1, M8).add(v1.blend(v0, M8).rearrange(X8));
        v0 = FloatVector.fromArray(F, acc, 192); v1 = FloatVector.fromArray(F, acc, 208);
        FloatVector b6 = v0.blend(v1, M8).add(v1.blend(v0, M8).rearrange(X8));
        v0 = FloatVector.fromArray(F, acc, 224); v1 = FloatVector.fromArray(F, acc, 240);
        FloatVector b7 = v0.blend(v1, M8).add(v1.blend(v0, M8).rearrange(X8));
        FloatVector c0 = b0.blend(b1, M4).add(b1.blend(b0, M4).rearrange(X4));
        FloatVector c1 = b2.blend(b3, M4).add(b3.blend(b2, M4).rearrange(X4));
        FloatVector c2 = b4.blend(b5, M4).add(b5.blend(b4, M4).rearrange(X4));
        FloatVector c3 = b6.blend(b7, M4).add(b7.blend(b6, M4).rearrange(X4));
        FloatVector d0 = c0.blend(c1, M2).add(c1.blend(c0, M2).rearrange(X2));
        FloatVector d1 = c2.blend(c3, M2).add(c3.blend(c2, M2).rearrange(X2));
        d0.blend(d1, M1).add(d1.blend(d0, M1).rearrange(X1)).rearrange(REV).intoArray(res, resOff);
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
