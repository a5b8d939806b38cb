package org.mtporacle.reference.kernels;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.util.Arrays;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** {@link Attention} against a hand-worked case and f64 (spec §1.5 step 7), and its two modes against each other. */
class AttentionTest {
    private static final long SEED = 0xA77E_2025L;
    /** f32 scores, exponentials and sums over at most 65 keys: relative errors ~1e-6, NMSE ~1e-12. */
    private static final double NMSE_TOLERANCE = 1e-9;

    @Test
    void twoKeysWithScoresZeroAndLn3WeighTheirValuesOneQuarterAndThreeQuarters() {
        float[] q = {1f, 2f};
        float[] keys = {0f, 0f, (float) Math.log(3), 0f}; // scores 0 and ln 3 at scale 1
        float[] values = {4f, -1f, 8f, 3f};
        for (KernelMode mode : KernelMode.values()) {
            try (Kernels k = new Kernels(mode, 1)) {
                float[] o = new float[3];
                float[] p = new float[2];
                k.attention(o, 1, p, q, 0, keys, values, 2, 2, 1f);
                assertThat(p[0]).as(mode.name()).isCloseTo(0.25f, within(1e-6f));
                assertThat(p[1]).as(mode.name()).isCloseTo(0.75f, within(1e-6f));
                assertThat(o[1]).as(mode.name()).isCloseTo(7f, within(1e-5f));       // 4/4 + 8·3/4
                assertThat(o[2]).as(mode.name()).isCloseTo(2f, within(1e-5f));       // −1/4 + 3·3/4
                assertThat(o[0]).as("outside the head").isZero();
            }
        }
    }

    @Test
    void bothModesMatchF64OnRaggedHeadSizes() {
        SplittableRandom rnd = new SplittableRandom(SEED);
        for (int d : new int[] {1, 15, 16, 17, 64, 65, 259}) {
            for (int visible : new int[] {1, 2, 7, 65}) {
                float[] q = TestWeights.randomFloats(d + 5, rnd);
                float[] keys = TestWeights.randomFloats(visible * d, rnd);
                float[] values = TestWeights.randomFloats(visible * d, rnd);
                float scale = (float) (4 / Math.sqrt(d));
                double[] want = f64(q, 5, keys, values, d, visible, scale);
                for (KernelMode mode : KernelMode.values()) {
                    try (Kernels k = new Kernels(mode, 1)) {
                        float[] o = new float[d + 3];
                        k.attention(o, 3, new float[visible], q, 5, keys, values, d, visible, scale);
                        assertThat(TestWeights.nmse(Arrays.copyOfRange(o, 3, d + 3), want))
                                .as("%s d=%d visible=%d seed %d", mode, d, visible, SEED)
                                .isLessThanOrEqualTo(NMSE_TOLERANCE);
                    }
                }
            }
        }
    }

    /** Below one vector of features the dot products agree, so the modes agree bit for bit (weighted sum included). */
    @Test
    void modesAgreeBitForBitWhenTheDotProductsDo() {
        SplittableRandom rnd = new SplittableRandom(SEED);
        for (int d = 1; d < Math.min(4, LaneSum.L); d++) {
            int visible = 33;
            float[] q = TestWeights.randomFloats(d, rnd);
            float[] keys = TestWeights.randomFloats(visible * d, rnd);
            float[] values = TestWeights.randomFloats(visible * d, rnd);
            float[] os = new float[d];
            float[] ov = new float[d];
            float[] ps = new float[visible];
            float[] pv = new float[visible];
            Attention.scalar(os, 0, ps, q, 0, keys, values, d, visible, 3f);
            Attention.vector(ov, 0, pv, q, 0, keys, values, d, visible, 3f);
            assertThat(pv).as("d=%d seed %d", d, SEED).isEqualTo(ps);
            assertThat(ov).as("d=%d seed %d", d, SEED).isEqualTo(os);
        }
    }

    @Test
    void vectorWeightedSumEqualsThePlainLoopBitForBit() {
        SplittableRandom rnd = new SplittableRandom(SEED);
        for (int d : new int[] {1, 15, 16, 17, 63, 64, 65, 128, 256, 259}) {
            for (int visible : new int[] {1, 2, 7, 65}) {
                float[] p = TestWeights.randomFloats(visible, rnd);
                float[] values = TestWeights.randomFloats(visible * d, rnd);
                float[] start = TestWeights.randomFloats(d + 3, rnd);
                float[] got = start.clone();
                float[] want = start.clone();
                Attention.weightedSumVector(got, 3, p, values, d, visible);
                Attention.weightedSumScalar(want, 3, p, values, 0, d, d, visible);
                assertThat(got).as("d=%d visible=%d seed %d", d, visible, SEED).isEqualTo(want);
            }
        }
    }

    private static double[] f64(float[] q, int qOff, float[] keys, float[] values, int d, int visible, double scale) {
        double[] s = new double[visible];
        double max = Double.NEGATIVE_INFINITY;
        for (int j = 0; j < visible; j++) {
            for (int i = 0; i < d; i++) {
                s[j] += (double) q[qOff + i] * keys[j * d + i];
            }
            s[j] *= scale;
            max = Math.max(max, s[j]);
        }
        double sum = 0;
        for (int j = 0; j < visible; j++) {
            s[j] = Math.exp(s[j] - max);
            sum += s[j];
        }
        double[] o = new double[d];
        for (int j = 0; j < visible; j++) {
            for (int i = 0; i < d; i++) {
                o[i] += s[j] / sum * values[j * d + i];
            }
        }
        return o;
    }
}
