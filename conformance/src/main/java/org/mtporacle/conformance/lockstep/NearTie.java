package org.mtporacle.conformance.lockstep;

import org.mtporacle.api.RowSampler;
import org.mtporacle.reference.sampling.DraftSampler;
import org.mtporacle.reference.sampling.MlxCpuMath;
import org.mtporacle.reference.sampling.MlxRandom;

/** How far the reference was from choosing another token, in the units {@link Tolerance} bounds. */
public final class NearTie {
    private NearTie() {
    }

    /** Greedy: {@code lp[ours] − lp[theirs]} (≥ 0 when ours is the argmax). */
    public static double logProbGap(float[] lp, int off, int ours, int theirs) {
        return (double) lp[off + ours] - lp[off + theirs];
    }

    /**
     * Seeded: the distance, in probability mass, from the reference's uniform draw {@code u·S} to the interval
     * {@code [c_j, c_j + w_j)} of the backend's token {@code j} in the inverse CDF of the filtered logits; infinite
     * when the token was filtered out.
     */
    public static double massGap(float[] lp, int off, int vocab, RowSampler sampler, long step, int theirs) {
        float[] x = DraftSampler.filteredLogits(lp, off, vocab, sampler);
        if (x[theirs] == Float.NEGATIVE_INFINITY) {
            return Double.POSITIVE_INFINITY;
        }
        float m = Float.NEGATIVE_INFINITY;
        for (float v : x) {
            m = Math.max(m, v);
        }
        double before = 0;
        double total = 0;
        double wj = 0;
        for (int i = 0; i < vocab; i++) {
            double w = MlxCpuMath.exp(x[i] - m);
            if (i < theirs) {
                before += w;
            }
            if (i == theirs) {
                wj = w;
            }
            total += w;
        }
        double u = MlxRandom.uniform(MlxRandom.key(DraftSampler.stepKey(sampler.seed(), step)), 1)[0] * total;
        double lo = before;
        double hi = before + wj;
        double dist = u < lo ? lo - u : u >= hi ? u - hi : 0;
        return dist / total;
    }
}
