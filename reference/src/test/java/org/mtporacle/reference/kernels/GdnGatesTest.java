package org.mtporacle.reference.kernels;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** {@link GdnGates} (spec §13.2) against hand-worked values and f64. */
class GdnGatesTest {
    private static final long SEED = 0x6A7E5L;
    /** f64 inside, one f32 rounding per value: within one f32 ulp, 6e-8 relative. */
    private static final double RELATIVE_TOLERANCE = 1.2e-7;

    @Test
    void handWorkedGates() {
        // Head 0: b = 0 → β = 0.5; A_log = 0, a + dt_bias = 0 → g = −softplus(0) = −ln 2 = −0.6931472.
        // Head 1: b = 2 → β = 0.8807971; A_log = 0.5, a + dt_bias = −1.5 → g = −e^0.5·log1p(e^−1.5) = −0.3320744.
        // Head 2: a + dt_bias = 1000 > 20 passes through (e^1000 would overflow): g = −1000.
        float[] a = {0.5f, -1, 999};
        float[] dtBias = {-0.5f, -0.5f, 1};
        float[] aLog = {0, 0.5f, 0};
        for (KernelMode mode : KernelMode.values()) {
            try (Kernels k = new Kernels(mode, 1)) {
                float[] g = new float[4];
                float[] beta = new float[5];
                k.gdnGates(g, 1, beta, 2, a, 0, new float[] {9, 0, 2, 0}, 1, aLog, dtBias, 3);
                assertThat(beta[2]).as("%s", mode).isEqualTo(0.5f);
                assertThat(beta[3]).as("%s", mode).isCloseTo(0.8807971f, within(1e-7f));
                assertThat(g[1]).as("%s", mode).isCloseTo(-0.6931472f, within(1e-7f));
                assertThat(g[2]).as("%s", mode).isCloseTo(-0.3320744f, within(1e-7f));
                assertThat(g[3]).as("%s", mode).isEqualTo(-1000f);
                assertThat(g[0]).as("outside").isZero();
            }
        }
    }

    @Test
    void gatesMatchF64AndBothModesAgree() {
        System.out.println("GdnGatesTest seed " + SEED);
        SplittableRandom rnd = new SplittableRandom(SEED);
        int hv = 37;
        float[] a = new float[hv];
        float[] b = new float[hv];
        float[] aLog = new float[hv];
        float[] dtBias = new float[hv];
        for (int h = 0; h < hv; h++) {
            a[h] = (float) (rnd.nextDouble() * 50 - 25);
            b[h] = (float) (rnd.nextDouble() * 20 - 10);
            aLog[h] = (float) Math.log(0.01 + 16 * rnd.nextDouble());
            dtBias[h] = (float) (rnd.nextDouble() * 2 - 1);
        }
        float[][] g = new float[2][hv];
        float[][] beta = new float[2][hv];
        for (KernelMode mode : KernelMode.values()) {
            try (Kernels k = new Kernels(mode, 1)) {
                k.gdnGates(g[mode.ordinal()], 0, beta[mode.ordinal()], 0, a, 0, b, 0, aLog, dtBias, hv);
            }
        }
        assertThat(g[1]).isEqualTo(g[0]);
        assertThat(beta[1]).isEqualTo(beta[0]);
        for (int h = 0; h < hv; h++) {
            double x = (double) a[h] + dtBias[h];
            double softplus = x > 20 ? x : Math.log1p(Math.exp(x)); // log(1 + e^x) would lose e^x below ~−20
            double wantG = -Math.exp(aLog[h]) * softplus;
            double wantBeta = 1 / (1 + Math.exp(-b[h]));
            assertThat((double) g[0][h]).as("g[%d] seed %d", h, SEED)
                    .isCloseTo(wantG, within(Math.abs(wantG) * RELATIVE_TOLERANCE));
            assertThat((double) beta[0][h]).as("β[%d] seed %d", h, SEED)
                    .isCloseTo(wantBeta, within(wantBeta * RELATIVE_TOLERANCE));
        }
    }
}
