package org.mtporacle.reference.kernels;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.util.Arrays;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** {@link RmsNorm} against hand-worked values and f64 (spec §1.6). */
class RmsNormTest {
    /** One f32 rounding per output and a ~1e-7 relative error in the root: NMSE ~1e-14. */
    private static final double NMSE_TOLERANCE = 1e-10;
    private static final long SEED = 0x0A11L;

    @Test
    void threeFourRowScalesByInverseRootOfMeanSquareTimesGain() {
        // mean(9, 16) = 12.5; 12.5^-½ = 0.28284271; gains 1 and 2.
        for (KernelMode mode : KernelMode.values()) {
            try (Kernels k = new Kernels(mode, 1)) {
                float[] out = new float[2];
                k.rmsNorm(out, 0, new float[] {3, 4}, 0, new float[] {1, 2}, 2, 1, 0.0);
                assertThat(out[0]).as("%s", mode).isCloseTo(0.84852814f, within(1e-6f));
                assertThat(out[1]).as("%s", mode).isCloseTo(2.2627417f, within(1e-6f));
            }
        }
    }

    @Test
    void bothModesMatchF64OnRaggedRowsAndOddOffsets() {
        SplittableRandom rnd = new SplittableRandom(SEED);
        for (int n : new int[] {1, 7, 16, 33, 1024, 1027}) {
            int rows = 3;
            float[] x = TestWeights.randomFloats(5 + rows * n, rnd);
            float[] gain = TestWeights.randomFloats(n, rnd);
            double eps = 1e-6;
            double[] expected = new double[rows * n];
            for (int r = 0; r < rows; r++) {
                double ss = 0;
                for (int i = 0; i < n; i++) {
                    ss += (double) x[5 + r * n + i] * x[5 + r * n + i];
                }
                double inv = 1 / Math.sqrt(ss / n + eps);
                for (int i = 0; i < n; i++) {
                    expected[r * n + i] = x[5 + r * n + i] * inv * gain[i];
                }
            }
            for (KernelMode mode : KernelMode.values()) {
                try (Kernels k = new Kernels(mode, 1)) {
                    float[] out = new float[2 + rows * n];
                    k.rmsNorm(out, 2, x, 5, gain, n, rows, eps);
                    assertThat(TestWeights.nmse(Arrays.copyOfRange(out, 2, out.length), expected))
                            .as("%s n=%d seed %d", mode, n, SEED).isLessThanOrEqualTo(NMSE_TOLERANCE);
                }
            }
        }
    }
}
