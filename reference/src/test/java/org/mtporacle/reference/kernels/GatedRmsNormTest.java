package org.mtporacle.reference.kernels;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.util.Arrays;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** {@link GatedRmsNorm} (spec §13.2) against hand-worked values and f64, and its modes against each other. */
class GatedRmsNormTest {
    private static final long SEED = 0x6A7E_D0L;
    /** One f32 sum of squares, a rounded inverse, three products and an f32 SiLU per output: NMSE ~1e-14. */
    private static final double NMSE_TOLERANCE = 1e-10;

    @Test
    void threeFourRowIsNormalisedScaledByThePlainGainAndGated() {
        // mean(9, 16) = 12.5, 12.5^-½ = 0.28284271: (0.8485281, 1.1313708); gains (1, 2); silu(1) = 0.7310586,
        // silu(−1) = −0.2689414: (0.6203238, −0.6085450).
        for (KernelMode mode : KernelMode.values()) {
            try (Kernels k = new Kernels(mode, 1)) {
                float[] out = new float[2];
                k.gatedRmsNorm(out, 0, new float[] {3, 4}, 0, new float[] {1, -1}, 0, new float[] {1, 2}, 2, 1, 0.0);
                assertThat(out[0]).as("%s", mode).isCloseTo(0.6203238f, within(1e-6f));
                assertThat(out[1]).as("%s", mode).isCloseTo(-0.6085450f, within(1e-6f));
            }
        }
    }

    /** A zero gain zeroes the row: the gain is {@code w}, not {@code 1 + w}. */
    @Test
    void zeroGainGivesZeros() {
        for (KernelMode mode : KernelMode.values()) {
            try (Kernels k = new Kernels(mode, 1)) {
                float[] out = {7, 7};
                k.gatedRmsNorm(out, 0, new float[] {3, 4}, 0, new float[] {1, 2}, 0, new float[2], 2, 1, 1e-6);
                assertThat(out).as("%s", mode).containsExactly(0, 0);
            }
        }
    }

    @Test
    void bothModesMatchF64OnRaggedRowsAndOddOffsetsAlsoInPlace() {
        System.out.println("GatedRmsNormTest seed " + SEED);
        SplittableRandom rnd = new SplittableRandom(SEED);
        for (int n : new int[] {1, 7, 16, 17, 128, 131}) {
            int rows = 4;
            float[] x = TestWeights.randomFloats(5 + rows * n, rnd);
            float[] z = TestWeights.randomFloats(3 + rows * n, rnd);
            float[] gain = TestWeights.randomFloats(n, rnd);
            double[] want = GdnF64.gatedRmsNorm(x, 5, z, 3, gain, n, rows, 1e-6);
            for (KernelMode mode : KernelMode.values()) {
                try (Kernels k = new Kernels(mode, 1)) {
                    float[] out = new float[2 + rows * n];
                    k.gatedRmsNorm(out, 2, x, 5, z, 3, gain, n, rows, 1e-6);
                    assertThat(TestWeights.nmse(Arrays.copyOfRange(out, 2, out.length), want))
                            .as("%s n=%d seed %d", mode, n, SEED).isLessThanOrEqualTo(NMSE_TOLERANCE);
                    float[] inPlace = x.clone();
                    k.gatedRmsNorm(inPlace, 5, inPlace, 5, z, 3, gain, n, rows, 1e-6);
                    assertThat(Arrays.copyOfRange(inPlace, 5, inPlace.length)).as("%s in place, n=%d", mode, n)
                            .isEqualTo(Arrays.copyOfRange(out, 2, out.length));
                }
            }
        }
    }

    /** Below one vector the sums of squares are the same sum, so the modes agree bit for bit. */
    @Test
    void modesAgreeBitForBitBelowOneVector() {
        SplittableRandom rnd = new SplittableRandom(SEED + 1);
        for (int n = 1; n < LaneSum.L; n++) {
            float[] x = TestWeights.randomFloats(2 * n, rnd);
            float[] z = TestWeights.randomFloats(2 * n, rnd);
            float[] gain = TestWeights.randomFloats(n, rnd);
            float[] a = new float[2 * n];
            float[] b = new float[2 * n];
            GatedRmsNorm.scalar(a, 0, x, 0, z, 0, gain, n, 2, 1e-6);
            GatedRmsNorm.vector(b, 0, x, 0, z, 0, gain, n, 2, 1e-6);
            assertThat(b).as("n=%d seed %d", n, SEED + 1).isEqualTo(a);
        }
    }
}
