package org.mtporacle.reference.kernels;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import java.util.Arrays;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** {@link CausalConv} and its window (spec §13.2) against a hand-worked case and f64; its modes; split calls. */
class CausalConvTest {
    private static final long SEED = 0xC0_4E1DL;
    /** At most K f32 products and one f32 SiLU per output: relative errors ~1e-7, NMSE ~1e-14. */
    private static final double NMSE_TOLERANCE = 1e-10;

    @Test
    void twoChannelsThreeTapsMatchTheHandWorkedValues() {
        // Channel 0: window (1, 2), W (1, 2, 3), x (3, −4): t0 = 1·1 + 2·2 + 3·3 = 14, t1 = 1·2 + 2·3 + 3·(−4) = −4.
        // Channel 1: window (−1, 0.5), W (0.25, −1, 2), x (1, 0): t0 = −0.25 − 0.5 + 2 = 1.25, t1 = 0.125 − 1 = −0.875.
        // silu(14) = 13.999988, silu(−4) = −0.0719448, silu(1.25) = 0.9716248, silu(−0.875) = −0.2574381.
        float[] x = {3, 1, -4, 0};                                 // [steps, C]
        float[] window = {1, 2, -1, 0.5f};                         // [C, K−1], oldest first
        float[] weight = {1, 2, 3, 0.25f, -1, 2};                  // [C, K]
        for (KernelMode mode : KernelMode.values()) {
            try (Kernels k = new Kernels(mode, 1)) {
                float[] out = new float[4];
                k.causalConv(out, 0, x, 0, window, 0, weight, 2, 3, 2);
                assertThat(out[0]).as("%s", mode).isCloseTo(13.999988f, within(1e-5f));
                assertThat(out[1]).as("%s", mode).isCloseTo(0.9716248f, within(1e-6f));
                assertThat(out[2]).as("%s", mode).isCloseTo(-0.0719448f, within(1e-6f));
                assertThat(out[3]).as("%s", mode).isCloseTo(-0.2574381f, within(1e-6f));
                assertThat(window).as("window unchanged").containsExactly(1, 2, -1, 0.5f);
            }
        }
        float[] next = new float[4];
        Kernels.convWindow(next, 0, window, 0, x, 0, 2, 3, 2);
        assertThat(next).containsExactly(3, -4, 1, 0);             // the two tokens, channel-major
        Kernels.convWindow(next, 0, window, 0, x, 0, 2, 3, 1);
        assertThat(next).containsExactly(2, 3, 0.5f, 1);           // one old input, then token 0
    }

    @Test
    void bothModesMatchF64OnRaggedChannelsAndOddOffsets() {
        System.out.println("CausalConvTest seed " + SEED);
        SplittableRandom rnd = new SplittableRandom(SEED);
        for (int c : new int[] {1, 7, 16, 17, 33, 100}) {
            for (int taps : new int[] {2, 4}) {
                for (int steps : new int[] {1, 2, 5}) {
                    float[] x = TestWeights.randomFloats(3 + steps * c, rnd);
                    float[] window = TestWeights.randomFloats(5 + c * (taps - 1), rnd);
                    float[] weight = TestWeights.randomFloats(c * taps, rnd);
                    double[] want = GdnF64.causalConv(x, 3, window, 5, weight, c, taps, steps);
                    for (KernelMode mode : KernelMode.values()) {
                        try (Kernels k = new Kernels(mode, 1)) {
                            float[] out = new float[1 + steps * c];
                            k.causalConv(out, 1, x, 3, window, 5, weight, c, taps, steps);
                            assertThat(TestWeights.nmse(Arrays.copyOfRange(out, 1, out.length), want))
                                    .as("%s C=%d K=%d steps=%d seed %d", mode, c, taps, steps, SEED)
                                    .isLessThanOrEqualTo(NMSE_TOLERANCE);
                        }
                    }
                }
            }
        }
    }

    @Test
    void vectorEqualsScalarBitForBit() {
        SplittableRandom rnd = new SplittableRandom(SEED + 1);
        for (int c : new int[] {1, 15, 16, 17, 48, 129}) {
            for (int steps : new int[] {1, 2, 3, 4, 9}) {
                float[] x = TestWeights.randomFloats(2 + steps * c, rnd);
                float[] window = TestWeights.randomFloats(1 + c * 3, rnd);
                float[] weight = TestWeights.randomFloats(c * 4, rnd);
                float[] a = new float[3 + steps * c];
                float[] b = new float[3 + steps * c];
                CausalConv.scalar(a, 3, x, 2, window, 1, weight, c, 4, steps);
                CausalConv.vector(b, 3, x, 2, window, 1, weight, c, 4, steps);
                assertThat(b).as("C=%d steps=%d seed %d", c, steps, SEED + 1).isEqualTo(a);
            }
        }
    }

    /** Conv of x[0, a) then, from the window after it, of x[a, n) gives the bits of one call on x[0, n). */
    @Test
    void splitCallsWithTheCarriedWindowEqualOneCall() {
        SplittableRandom rnd = new SplittableRandom(SEED + 2);
        int c = 37;
        int n = 9;
        float[] x = TestWeights.randomFloats(n * c, rnd);
        float[] weight = TestWeights.randomFloats(c * 4, rnd);
        float[] start = new float[c * 3]; // a sequence start: zeros
        for (KernelMode mode : KernelMode.values()) {
            try (Kernels k = new Kernels(mode, 1)) {
                float[] whole = new float[n * c];
                k.causalConv(whole, 0, x, 0, start, 0, weight, c, 4, n);
                float[] lastWindow = new float[c * 3];
                Kernels.convWindow(lastWindow, 0, start, 0, x, 0, c, 4, n);
                for (int a : new int[] {0, 1, 2, 3, 5, 9}) {
                    float[] split = new float[n * c];
                    float[] window = start.clone();
                    k.causalConv(split, 0, x, 0, window, 0, weight, c, 4, a);
                    Kernels.convWindow(window, 0, window, 0, x, 0, c, 4, a); // in place
                    k.causalConv(split, a * c, x, a * c, window, 0, weight, c, 4, n - a);
                    Kernels.convWindow(window, 0, window, 0, x, a * c, c, 4, n - a);
                    assertThat(split).as("%s split at %d seed %d", mode, a, SEED + 2).isEqualTo(whole);
                    assertThat(window).as("%s window, split at %d", mode, a).isEqualTo(lastWindow);
                }
            }
        }
    }

    @Test
    void windowUpdateInPlaceEqualsACopyAndAnOffsetOverlapIsRefused() {
        SplittableRandom rnd = new SplittableRandom(SEED + 3);
        int c = 5;
        float[] x = TestWeights.randomFloats(2 * c, rnd);
        float[] window = TestWeights.randomFloats(2 + c * 3, rnd);
        for (int steps : new int[] {0, 1, 2}) {
            float[] copy = new float[c * 3];
            Kernels.convWindow(copy, 0, window, 2, x, 0, c, 4, steps);
            float[] inPlace = window.clone();
            Kernels.convWindow(inPlace, 2, inPlace, 2, x, 0, c, 4, steps);
            assertThat(Arrays.copyOfRange(inPlace, 2, inPlace.length)).as("steps=%d", steps).isEqualTo(copy);
        }
        assertThatThrownBy(() -> Kernels.convWindow(window, 0, window, 2, x, 0, c, 4, 1))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("overlaps the window");
    }
}
