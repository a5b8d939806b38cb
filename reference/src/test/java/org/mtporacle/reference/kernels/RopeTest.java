package org.mtporacle.reference.kernels;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** {@link Rope}: half-split pairs, known angles, pass-through features (spec §1.5 step 5). */
class RopeTest {
    /** cos/sin rounded to f32 once plus one f32 rotation: ~2 ulp of O(1) values. */
    private static final float ABS_TOLERANCE = 1e-6f;
    private static final long SEED = 0x40BEL;

    @Test
    void positionOneRotatesPairZeroByOneRadianAndPairOneByOneHundredth() {
        // R = 4, θ = 10000: ω_0 = 1, ω_1 = 10000^(-1/2) = 0.01. Features 4, 5 are past R and pass through.
        for (KernelMode mode : KernelMode.values()) {
            try (Kernels k = new Kernels(mode, 1)) {
                float[] x = {9, 1, 0, 0, 0, 7, 5};
                k.rope(x, 1, 4, 10000, 1);
                assertThat(x[0]).isEqualTo(9f);
                assertThat(x[1]).as("%s", mode).isCloseTo((float) Math.cos(1), within(ABS_TOLERANCE));
                assertThat(x[3]).as("%s", mode).isCloseTo((float) Math.sin(1), within(ABS_TOLERANCE));
                assertThat(x[2]).isEqualTo(0f);
                assertThat(x[4]).isEqualTo(0f);
                assertThat(new float[] {x[5], x[6]}).containsExactly(7f, 5f);
                float[] y = {0, 1, 0, 0};
                k.rope(y, 0, 4, 10000, 1);
                assertThat(y[1]).isCloseTo((float) Math.cos(0.01), within(ABS_TOLERANCE));
                assertThat(y[3]).isCloseTo((float) Math.sin(0.01), within(ABS_TOLERANCE));
            }
        }
    }

    @Test
    void vectorEqualsScalarBitForBitAndPositionZeroIsIdentity() {
        SplittableRandom rnd = new SplittableRandom(SEED);
        for (int r : new int[] {2, 34, 64, 256}) {
            float[] x = TestWeights.randomFloats(r + 3, rnd);
            float[] a = x.clone();
            float[] b = x.clone();
            Rope.scalar(a, 3, r, 1e7, 12345);
            Rope.vector(b, 3, r, 1e7, 12345);
            assertThat(b).as("R=%d seed %d", r, SEED).isEqualTo(a);
            float[] z = x.clone();
            Rope.vector(z, 3, r, 1e7, 0);
            assertThat(z).isEqualTo(x);
        }
    }
}
