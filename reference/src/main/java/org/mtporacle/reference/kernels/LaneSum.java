package org.mtporacle.reference.kernels;

import jdk.incubator.vector.FloatVector;
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

    private LaneSum() {
    }

    /** {@code Σ lanes of v} in the halving-tree order. */
    static float sum(FloatVector v) {
        for (VectorShuffle<Float> s : HALVES) {
            v = v.add(v.rearrange(s));
        }
        return v.lane(0);
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
