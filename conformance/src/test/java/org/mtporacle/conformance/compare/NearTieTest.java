package org.mtporacle.conformance.compare;

import org.junit.jupiter.api.Test;
import org.mtporacle.api.RowSampler;
import org.mtporacle.reference.sampling.DraftSampler;
import org.mtporacle.reference.sampling.MlxRandom;

import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

class NearTieTest {

    @Test
    void theGreedyGapIsTheLogProbDifference() {
        float[] lp = {-1.0f, -1.25f, -3f};
        assertThat(NearTie.logProbGap(lp, 0, 0, 1)).isCloseTo(0.25, within(1e-7));
    }

    @Test
    void aTokenTheReferenceDrawsItselfHasNoGap() {
        SplittableRandom rnd = new SplittableRandom(5);
        for (int trial = 0; trial < 50; trial++) {
            float[] lp = logSoftmax(rnd, 64);
            RowSampler s = RowSampler.of(0.5 + rnd.nextDouble(), rnd.nextBoolean() ? 0 : 10, rnd.nextBoolean() ? 1 : 0.8,
                    rnd.nextLong());
            int ours = DraftSampler.sample(lp, 0, lp.length, s, trial);
            assertThat(NearTie.seededGap(lp, 0, lp.length, s, trial, ours)).as("trial %d", trial).isLessThan(1e-9);
        }
    }

    /**
     * Two tokens A, B at temperature 1: the draw picks A iff {@code u < w_A/S = 1/(1+e^d)}, {@code d = lp_B − lp_A}.
     * Perturbing A down and B up by ε gives {@code 1/(1+e^(d+2ε))}, so B becomes possible at
     * {@code 2ε = ln(1/u − 1) − d}: with {@code d = ln(1/u − 1) − g} the gap is exactly {@code g}.
     */
    @Test
    void theSeededGapIsTheLogProbDistanceToTheInverseCdfBoundary() {
        long seed = 42;
        long step = 3;
        double u = MlxRandom.uniform(MlxRandom.key(DraftSampler.stepKey(seed, step)), 1)[0];
        for (double g : new double[] {0.002, 0.03, 0.4}) {
            double d = Math.log(1 / u - 1) - g;
            float lpA = (float) -Math.log1p(Math.exp(d));
            float lpB = (float) (lpA + d);
            float[] lp = {lpA, lpB};
            RowSampler s = RowSampler.of(1.0, 0, 1.0, seed);
            assertThat(DraftSampler.sample(lp, 0, 2, s, step)).as("the reference draws A").isEqualTo(0);
            assertThat(NearTie.seededGap(lp, 0, 2, s, step, 1)).as("g = %s", g).isCloseTo(g, within(2e-5));
        }
    }

    /** Token 3 can enter the top 2 only once {@code lp_3 + 2ε ≥ lp_1}, i.e. at a gap of at least 7. */
    @Test
    void aTokenFarOutsideTopKNeedsItsDistanceToTheKthValue() {
        float[] lp = {-0.1f, -2.5f, -9f, -9.5f};
        RowSampler s = RowSampler.of(1.0, 2, 1.0, 7);
        assertThat(NearTie.seededGap(lp, 0, 4, s, 0, 3)).isGreaterThanOrEqualTo(7 - 1e-6);
    }

    @Test
    void aTopKBoundaryTieCanFlipWithATinyPerturbation() {
        // tokens 1 and 2 tie for the second place of top-2 to within 1e-4: either may be kept
        float[] lp = {-0.7f, -1.5f, -1.5001f, -6f};
        RowSampler s = RowSampler.of(1.0, 2, 1.0, 11);
        assertThat(NearTie.seededGap(lp, 0, 4, s, 0, 2)).isLessThan(0.05);
    }

    private static float[] logSoftmax(SplittableRandom rnd, int n) {
        double[] x = new double[n];
        double max = Double.NEGATIVE_INFINITY;
        for (int i = 0; i < n; i++) {
            x[i] = rnd.nextGaussian() * 2;
            max = Math.max(max, x[i]);
        }
        double sum = 0;
        for (double v : x) {
            sum += Math.exp(v - max);
        }
        float[] out = new float[n];
        for (int i = 0; i < n; i++) {
            out[i] = (float) (x[i] - max - Math.log(sum));
        }
        return out;
    }
}
