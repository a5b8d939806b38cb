package org.mtporacle.reference.kernels;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Arrays;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** {@link LogSoftmax} and {@link Activations} against f64 (spec §1.7, §1.4). */
class LogSoftmaxTest {
    /** One f32 rounding of lse and of each difference: NMSE ~1e-14. */
    private static final double NMSE_TOLERANCE = 1e-10;
    private static final long SEED = 0x1065L;

    @Test
    void logSoftmaxMatchesF64AndModesAgreeBitForBit() {
        SplittableRandom rnd = new SplittableRandom(SEED);
        for (int n : new int[] {1, 5, 16, 1000, 4099}) {
            float[] l = TestWeights.randomFloats(n + 3, rnd);
            for (int i = 0; i < l.length; i++) {
                l[i] *= 20;
            }
            double max = Double.NEGATIVE_INFINITY;
            for (int i = 0; i < n; i++) {
                max = Math.max(max, l[3 + i]);
            }
            double sum = 0;
            for (int i = 0; i < n; i++) {
                sum += Math.exp(l[3 + i] - max);
            }
            double[] expected = new double[n];
            for (int i = 0; i < n; i++) {
                expected[i] = l[3 + i] - max - Math.log(sum);
            }
            float[] s = new float[n + 1];
            float[] v = new float[n + 1];
            LogSoftmax.scalar(s, 1, l, 3, n);
            LogSoftmax.vector(v, 1, l, 3, n);
            assertThat(v).as("n=%d seed %d", n, SEED).isEqualTo(s);
            assertThat(TestWeights.nmse(Arrays.copyOfRange(s, 1, s.length), expected)).as("n=%d seed %d", n, SEED)
                    .isLessThanOrEqualTo(NMSE_TOLERANCE);
        }
    }

    @Test
    void argmaxReturnsFirstLargest() {
        try (Kernels k = new Kernels(KernelMode.VECTOR, 1)) {
            assertThat(k.argmax(new float[] {0, 3, 1, 3, 2}, 1, 4)).isEqualTo(0);
            assertThat(k.argmax(new float[] {0, 1, 5, 2}, 0, 4)).isEqualTo(2);
        }
    }

    @Test
    void siluAndSigmoidMatchF64TimesTheSecondOperand() {
        SplittableRandom rnd = new SplittableRandom(SEED);
        int n = 37;
        float[] z = TestWeights.randomFloats(n + 2, rnd);
        float[] m = TestWeights.randomFloats(n + 1, rnd);
        double[] silu = new double[n];
        double[] sig = new double[n];
        for (int i = 0; i < n; i++) {
            double zz = z[2 + i] * 8.0;
            z[2 + i] = (float) zz;
            sig[i] = 1 / (1 + Math.exp(-zz)) * m[1 + i];
            silu[i] = zz / (1 + Math.exp(-zz)) * m[1 + i];
        }
        for (KernelMode mode : KernelMode.values()) {
            try (Kernels k = new Kernels(mode, 1)) {
                float[] a = new float[n];
                float[] b = new float[n];
                k.silu(a, 0, z, 2, m, 1, n);
                k.sigmoid(b, 0, z, 2, m, 1, n);
                assertThat(TestWeights.nmse(a, silu)).as("%s silu seed %d", mode, SEED).isLessThanOrEqualTo(NMSE_TOLERANCE);
                assertThat(TestWeights.nmse(b, sig)).as("%s σ seed %d", mode, SEED).isLessThanOrEqualTo(NMSE_TOLERANCE);
            }
        }
    }

    /** The block applies σ and silu in place ({@code out} = {@code z}); both modes give the out-of-place bits. */
    @Test
    void siluAndSigmoidInPlaceEqualOutOfPlaceInBothModes() {
        SplittableRandom rnd = new SplittableRandom(SEED);
        int n = 37;
        float[] z = TestWeights.randomFloats(n, rnd);
        float[] m = TestWeights.randomFloats(n, rnd);
        for (int i = 0; i < n; i++) {
            z[i] *= 8;
        }
        float[] silu = new float[n];
        float[] sig = new float[n];
        try (Kernels k = new Kernels(KernelMode.SCALAR, 1)) {
            k.silu(silu, 0, z, 0, m, 0, n);
            k.sigmoid(sig, 0, z, 0, m, 0, n);
        }
        for (KernelMode mode : KernelMode.values()) {
            try (Kernels k = new Kernels(mode, 1)) {
                float[] a = z.clone();
                float[] b = z.clone();
                k.silu(a, 0, a, 0, m, 0, n);
                k.sigmoid(b, 0, b, 0, m, 0, n);
                assertThat(a).as("%s silu in place seed %d", mode, SEED).isEqualTo(silu);
                assertThat(b).as("%s σ in place seed %d", mode, SEED).isEqualTo(sig);
            }
        }
    }
}
