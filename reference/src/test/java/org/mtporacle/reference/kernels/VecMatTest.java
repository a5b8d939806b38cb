package org.mtporacle.reference.kernels;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** {@link VecMat} against f64, and its vector form against its scalar form bit for bit. */
class VecMatTest {
    private static final long SEED = 0x7EC_3A7L;

    @Test
    void scalarMatchesF64() {
        SplittableRandom rnd = new SplittableRandom(SEED);
        int terms = 19;
        int cols = 23;
        int stride = 29;
        float[] a = TestWeights.randomFloats(2 + terms, rnd);
        float[] b = TestWeights.randomFloats(3 + terms * stride, rnd);
        float[] c = new float[1 + cols];
        VecMat.scalar(c, 1, a, 2, b, 3, stride, terms, cols);
        for (int j = 0; j < cols; j++) {
            double want = 0;
            for (int p = 0; p < terms; p++) {
                want += (double) a[2 + p] * b[3 + p * stride + j];
            }
            assertThat((double) c[1 + j]).as("c[%d] seed %d", j, SEED).isCloseTo(want, within(1e-5));
        }
    }

    @Test
    void vectorEqualsScalarBitForBitOnRaggedColumnsAndOddOffsets() {
        SplittableRandom rnd = new SplittableRandom(SEED + 1);
        for (int cols : new int[] {0, 1, 15, 16, 17, 63, 64, 65, 130}) {
            for (int terms : new int[] {1, 7, 64}) {
                int stride = cols + 3;
                float[] a = TestWeights.randomFloats(1 + terms, rnd);
                float[] b = TestWeights.randomFloats(5 + terms * stride, rnd);
                float[] s = new float[2 + cols];
                float[] v = new float[2 + cols];
                VecMat.scalar(s, 2, a, 1, b, 5, stride, terms, cols);
                VecMat.vector(v, 2, a, 1, b, 5, stride, terms, cols);
                assertThat(v).as("cols=%d terms=%d seed %d", cols, terms, SEED + 1).isEqualTo(s);
            }
        }
    }
}
