package org.mtporacle.reference.sampling;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;
import org.mtporacle.api.RowSampler;
import org.mtporacle.reference.sampling.DraftSampler.CategoricalRule;

class DraftSamplerTest {
    private static final float NEG_INF = Float.NEGATIVE_INFINITY;

    @Test
    void stepKeyIsSeedXorGoldenGammaTimesStepPlusOne() {
        assertThat(DraftSampler.stepKey(0, 0)).isEqualTo(0x9E3779B97F4A7C15L);
        assertThat(DraftSampler.stepKey(1, 0)).isEqualTo(0x9E3779B97F4A7C14L);
        // (1 + 1) · γ wraps mod 2^64.
        assertThat(DraftSampler.stepKey(0, 1)).isEqualTo(0x3C6EF372FE94F82AL);
    }

    @Test
    void greedyPicksTheLowestIndexOnTies() {
        float[] lp = {9f, -1f, -0.5f, -2f, -0.5f};
        assertThat(DraftSampler.sample(lp, 1, 4, RowSampler.GREEDY, 3)).isEqualTo(1);
    }

    @Test
    void topPKeepsTokensWhoseAscendingCumulativeSumExceedsOneMinusP() {
        // p = 0.1, 0.2, 0.3, 0.4; ascending sums 0.1, 0.3, 0.6, 1.0; with topP = 0.5 the bound is 0.5.
        float[] x = logs(0.1, 0.2, 0.3, 0.4);
        float[] want = x.clone();
        DraftSampler.applyTopP(x, 0.5);
        assertThat(x).containsExactly(NEG_INF, NEG_INF, want[2], want[3]);
    }

    @Test
    void topPKeepsOnlyTheLargestTokenWhenPIsSmall() {
        float[] x = logs(0.25, 0.5, 0.25);
        float keep = x[1];
        DraftSampler.applyTopP(x, 0.1);
        assertThat(x).containsExactly(NEG_INF, keep, NEG_INF);
    }

    @Test
    void topPMasksEverythingWhenTheFloat32SumStaysBelowOneMinusP() {
        // As in mlx-lm: the float32 sum of exp(log p) is 0.99999994 here, not above float32(1 − 1e-9) = 1.
        float[] x = logs(0.25, 0.5, 0.25);
        DraftSampler.applyTopP(x, 1e-9);
        assertThat(x).containsOnly(NEG_INF);
    }

    @Test
    void topKKeepsTheKLargestAndTheLowestIndicesOnTies() {
        float[] x = {-1f, -3f, -2f, -2f, -0.5f, -2f};
        DraftSampler.applyTopK(x, 3);
        assertThat(x).containsExactly(-1f, NEG_INF, -2f, NEG_INF, -0.5f, NEG_INF);
    }

    @Test
    void topKAtOrAboveTheVocabularyKeepsEverything() {
        float[] x = {-1f, -2f};
        DraftSampler.applyTopK(x, 2);
        assertThat(x).containsExactly(-1f, -2f);
    }

    @Test
    void filteredLogitsApplyTopPThenTopKThenTemperature() {
        float[] lp = logs(0.05, 0.15, 0.3, 0.5);
        RowSampler s = RowSampler.of(0.5, 1, 0.9, 0);
        float[] x = DraftSampler.filteredLogits(lp, 0, 4, s);
        assertThat(x).containsExactly(NEG_INF, NEG_INF, NEG_INF, lp[3] * 2f);
    }

    @Test
    void theDrawDependsOnlyOnSeedAndStep() {
        float[] lp = logs(0.1, 0.2, 0.3, 0.25, 0.15);
        RowSampler s = RowSampler.of(1.0, 0, 1.0, 42);
        for (CategoricalRule rule : CategoricalRule.values()) {
            for (long step = 0; step < 50; step++) {
                assertThat(DraftSampler.sample(lp, 0, 5, s, step, rule))
                        .isEqualTo(DraftSampler.sample(lp.clone(), 0, 5, s, step, rule));
            }
        }
        // Different steps, different noise: 50 steps of a five-way draw are not all one token.
        long distinct = java.util.stream.LongStream.range(0, 50)
                .map(step -> DraftSampler.sample(lp, 0, 5, s, step)).distinct().count();
        assertThat(distinct).isGreaterThan(1);
        MlxRandom.Key k0 = MlxRandom.key(DraftSampler.stepKey(42, 0));
        MlxRandom.Key k1 = MlxRandom.key(DraftSampler.stepKey(42, 1));
        assertThat(MlxRandom.uniform(k0, 4)).isNotEqualTo(MlxRandom.uniform(k1, 4));
    }

    // stochastic: a pass is evidence, not proof. Seed 7 is fixed; the bound is far above the 0.999 quantile.
    @Test
    void categoricalFrequenciesMatchSoftmaxProbabilities() {
        final int draws = 40_000;
        final double chiSquareBound = 30.0; // 5 degrees of freedom: P(χ² > 30) ≈ 1.5e-5
        double[] p = {0.05, 0.1, 0.15, 0.2, 0.22, 0.28};
        float[] lp = logs(p);
        RowSampler s = RowSampler.of(1.0, 0, 1.0, 7);
        for (CategoricalRule rule : CategoricalRule.values()) {
            int[] counts = new int[p.length];
            for (long step = 0; step < draws; step++) {
                counts[DraftSampler.sample(lp, 0, p.length, s, step, rule)]++;
            }
            double chi2 = 0;
            for (int i = 0; i < p.length; i++) {
                double expected = p[i] * draws;
                chi2 += (counts[i] - expected) * (counts[i] - expected) / expected;
            }
            System.out.printf("categorical %s seed 7: counts %s, chi2 = %.2f%n", rule,
                    java.util.Arrays.toString(counts), chi2);
            assertThat(chi2).as("chi-square for %s", rule).isLessThan(chiSquareBound);
        }
    }

    @Test
    void sampleDetailedReportsTheInputLogprobAndTopTwoGap() {
        float[] lp = {-0.5f, -1.5f, -3f};
        DraftSampler.SampleResult r = DraftSampler.sampleDetailed(lp, 0, 3, RowSampler.GREEDY, 0,
                DraftSampler.SPEC_RULE);
        assertThat(r).isEqualTo(new DraftSampler.SampleResult(0, -0.5f, 1.0f));
    }

    private static float[] logs(double... p) {
        float[] x = new float[p.length];
        for (int i = 0; i < p.length; i++) {
            x[i] = (float) Math.log(p[i]);
        }
        return x;
    }
}
