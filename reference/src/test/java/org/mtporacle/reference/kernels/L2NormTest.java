package org.mtporacle.reference.kernels;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.util.Arrays;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** {@link L2Norm} (spec §13.2) against hand-worked values and f64, and its modes against each other. */
class L2NormTest {
    private static final long SEED = 0x12_0A11L;
    /** One f32 sum of squares, one rounded inverse and one product per output: NMSE ~1e-14. */
    private static final double NMSE_TOLERANCE = 1e-10;

    @Test
    void threeFourRowBecomesAUnitRowTimesTheScale() {
        // Σx² = 25, (25 + 1e-6)^-½ = 0.2 (to 4e-9); scale 0.5: (0.3, 0.4).
        for (KernelMode mode : KernelMode.values()) {
            try (Kernels k = new Kernels(mode, 1)) {
                float[] out = new float[3];
                k.l2Norm(out, 1, new float[] {9, 3, 4}, 1, 2, 1, 0.5f);
                assertThat(out[1]).as("%s", mode).isCloseTo(0.3f, within(1e-7f));
                assertThat(out[2]).as("%s", mode).isCloseTo(0.4f, within(1e-7f));
            }
        }
    }

    @Test
    void epsilonSitsInsideTheRoot() {
        // x = (1e-4, 0): 1e-4 / √(1e-8 + 1e-6) = 0.0995037; ε outside the root, 1e-4 / (1e-4 + 1e-6), would give 0.990.
        for (KernelMode mode : KernelMode.values()) {
            try (Kernels k = new Kernels(mode, 1)) {
                float[] out = new float[2];
                k.l2Norm(out, 0, new float[] {1e-4f, 0}, 0, 2, 1, 1f);
                assertThat(out[0]).as("%s", mode).isCloseTo(0.0995037f, within(1e-6f));
            }
        }
    }

    @Test
    void bothModesMatchF64OnRaggedRowsAndOddOffsets() {
        System.out.println("L2NormTest seed " + SEED);
        SplittableRandom rnd = new SplittableRandom(SEED);
        for (int n : new int[] {1, 7, 16, 17, 128, 131}) {
            int rows = 3;
            float[] x = TestWeights.randomFloats(5 + rows * n, rnd);
            float scale = (float) (1 / Math.sqrt(n));
            double[] want = GdnF64.l2Norm(x, 5, n, rows, scale);
            for (KernelMode mode : KernelMode.values()) {
                try (Kernels k = new Kernels(mode, 1)) {
                    float[] out = new float[2 + rows * n];
                    k.l2Norm(out, 2, x, 5, n, rows, scale);
                    assertThat(TestWeights.nmse(Arrays.copyOfRange(out, 2, out.length), want))
                            .as("%s n=%d seed %d", mode, n, SEED).isLessThanOrEqualTo(NMSE_TOLERANCE);
                }
            }
        }
    }

    /** Below one vector the sums of squares are the same sum, so the modes agree bit for bit. */
    @Test
    void modesAgreeBitForBitBelowOneVector() {
        SplittableRandom rnd = new SplittableRandom(SEED + 1);
        for (int n = 1; n < LaneSum.L; n++) {
            float[] x = TestWeights.randomFloats(1 + 2 * n, rnd);
            float[] a = new float[2 * n];
            float[] b = new float[2 * n];
            L2Norm.scalar(a, 0, x, 1, n, 2, 0.25f);
            L2Norm.vector(b, 0, x, 1, n, 2, 0.25f);
            assertThat(b).as("n=%d seed %d", n, SEED + 1).isEqualTo(a);
        }
    }
}
