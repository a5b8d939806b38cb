package org.mtporacle.reference.kernels;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.SplittableRandom;

import org.junit.jupiter.api.Test;

/** {@link Router} against hand-worked cases and an f64 softmax (spec §12.3 steps 2–4). */
class RouterTest {
    /** f32 softmax of ≤ 64 values against f64: a few ulp of the largest probability. */
    private static final double PROB_TOLERANCE = 1e-6;

    private record Route(float[] probs, int[] experts, float[] weights) {
    }

    private static Route route(float[] logits, int k, boolean renormalise) {
        float[] p = new float[logits.length];
        int[] e = new int[k];
        float[] w = new float[k];
        Router.route(p, 0, e, w, logits, 0, logits.length, k, renormalise);
        return new Route(p, e, w);
    }

    @Test
    void exactlyEqualProbabilitiesGoToTheLowerExpertIndex() {
        // experts 1 and 2 tie for first, 0 and 3 tie below them
        Route r = route(new float[] {1f, 3f, 3f, 1f}, 3, true);
        assertThat(r.experts()).containsExactly(1, 2, 0);
        assertThat(route(new float[] {1f, 3f, 3f, 1f}, 1, true).experts()).containsExactly(1);
        // all equal: the first K; p = 1/5 each (exp(0) = 1, 1/5 in f32), the slot sum in f32, one division each
        Route flat = route(new float[] {0.5f, 0.5f, 0.5f, 0.5f, 0.5f}, 3, true);
        assertThat(flat.experts()).containsExactly(0, 1, 2);
        float third = 0.2f / (0.2f + 0.2f + 0.2f);
        assertThat(third).isNotEqualTo(1f / 3); // the spec's order, not the exact 1/3
        assertThat(flat.weights()).containsExactly(third, third, third);
        assertThat(route(new float[] {0.5f, 0.5f, 0.5f, 0.5f, 0.5f}, 3, false).weights())
                .containsExactly(0.2f, 0.2f, 0.2f);
    }

    @Test
    void twoToOneOddsGiveTwoThirdsAndOneThird() {
        // p ∝ (1, 2, 1, 4): top-2 = experts 3 (4/8) and 1 (2/8); renormalised 2/3 and 1/3
        float ln2 = (float) Math.log(2);
        Route r = route(new float[] {0f, ln2, 0f, 2 * ln2}, 2, true);
        assertThat(r.experts()).containsExactly(3, 1);
        assertThat((double) r.weights()[0]).isCloseTo(2.0 / 3, org.assertj.core.data.Offset.offset(1e-7));
        assertThat((double) r.weights()[1]).isCloseTo(1.0 / 3, org.assertj.core.data.Offset.offset(1e-7));
        Route raw = route(new float[] {0f, ln2, 0f, 2 * ln2}, 2, false);
        assertThat((double) raw.weights()[0]).isCloseTo(0.5, org.assertj.core.data.Offset.offset(1e-7));
        assertThat((double) raw.weights()[1]).isCloseTo(0.25, org.assertj.core.data.Offset.offset(1e-7));
    }

    @Test
    void randomLogitsMatchAnF64SoftmaxAndTheChoiceIsTheTopKInDescendingOrder() {
        long seed = 18L;
        System.out.println("seed " + seed);
        SplittableRandom rnd = new SplittableRandom(seed);
        for (int trial = 0; trial < 200; trial++) {
            int n = 2 + rnd.nextInt(63);
            int k = 1 + rnd.nextInt(n);
            float[] logits = new float[n];
            for (int i = 0; i < n; i++) {
                logits[i] = (float) (rnd.nextDouble() * 8 - 4);
            }
            Route r = route(logits, k, true);
            double max = Double.NEGATIVE_INFINITY;
            for (float l : logits) {
                max = Math.max(max, l);
            }
            double sum = 0;
            for (float l : logits) {
                sum += Math.exp(l - max);
            }
            for (int i = 0; i < n; i++) {
                assertThat((double) r.probs()[i]).as("trial %d p[%d]", trial, i)
                        .isCloseTo(Math.exp(logits[i] - max) / sum, org.assertj.core.data.Offset.offset(PROB_TOLERANCE));
            }
            double chosen = 0;
            for (int j = 0; j < k; j++) {
                if (j > 0) {
                    assertThat(r.probs()[r.experts()[j]]).isLessThanOrEqualTo(r.probs()[r.experts()[j - 1]]);
                }
                chosen += r.weights()[j];
            }
            assertThat(chosen).as("renormalised weights sum to 1").isCloseTo(1.0,
                    org.assertj.core.data.Offset.offset(1e-6));
            float kth = r.probs()[r.experts()[k - 1]];
            for (int e = 0; e < n; e++) {
                final int x = e;
                boolean picked = java.util.stream.IntStream.of(r.experts()).anyMatch(c -> c == x);
                if (!picked) {
                    assertThat(r.probs()[e]).as("unchosen expert %d beats the k-th", e).isLessThanOrEqualTo(kth);
                }
            }
        }
    }
}
