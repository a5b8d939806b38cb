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

    @Test
    void rowsTogetherGiveTheBitsOfEachRowAloneInBothForms() {
        SplittableRandom rnd = new SplittableRandom(SEED + 2);
        for (int rows : new int[] {1, 3, 4, 5, 8, 9}) {
            for (int cols : new int[] {1, 17, 64, 65, 130}) {
                for (int terms : new int[] {1, 7, 64}) {
                    int bStride = cols + 3;
                    int aStride = terms + 2;
                    int cStride = cols + 1;
                    float[] a = TestWeights.randomFloats(1 + rows * aStride, rnd);
                    float[] b = TestWeights.randomFloats(5 + terms * bStride, rnd);
                    float[] want = new float[2 + rows * cStride];
                    for (int r = 0; r < rows; r++) {
                        VecMat.scalar(want, 2 + r * cStride, a, 1 + r * aStride, b, 5, bStride, terms, cols);
                    }
                    float[] s = new float[want.length];
                    float[] v = new float[want.length];
                    VecMat.scalarRows(s, 2, cStride, a, 1, aStride, b, 5, bStride, rows, terms, cols);
                    VecMat.vectorRows(v, 2, cStride, a, 1, aStride, b, 5, bStride, rows, terms, cols);
                    String what = String.format("rows=%d cols=%d terms=%d seed %d", rows, cols, terms, SEED + 2);
                    assertThat(s).as("scalar %s", what).isEqualTo(want);
                    assertThat(v).as("vector %s", what).isEqualTo(want);
                }
            }
        }
    }
}
