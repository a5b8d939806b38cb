package org.mtporacle.reference.kernels;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.api.Test;
import org.mtporacle.api.DType;

/** {@link MatMul} and {@link MatVec} in both modes, every weight format, against f64 over exactly decoded weights. */
class MatMulTest {
    /** f32 accumulation of ≤ 1k products of O(1) values loses ~1e-7 relative: NMSE ~1e-13, far below this. */
    private static final double NMSE_TOLERANCE = 1e-10;
    private static final long SEED = 0x5EED_2025L;

    record Case(String format, int out, int in, int rows) {
        TestWeights weights(SplittableRandom rnd) {
            return switch (format) {
                case "F32" -> TestWeights.dense(DType.F32, out, in, rnd);
                case "F16" -> TestWeights.dense(DType.F16, out, in, rnd);
                case "BF16" -> TestWeights.dense(DType.BF16, out, in, rnd);
                default -> {
                    String[] p = format.split("/");
                    yield TestWeights.affine(Integer.parseInt(p[1]), Integer.parseInt(p[2]), out, in, rnd);
                }
            };
        }
    }

    static List<Case> cases() {
        List<Case> c = new ArrayList<>();
        for (String f : List.of("F32", "F16", "BF16")) {
            for (int in : new int[] {1, 15, 17, 100, 259}) {
                c.add(new Case(f, 7, in, 1));
                c.add(new Case(f, 13, in, 6));
            }
            // Tiling edges: several weight panels with a ragged last one, rows not a multiple of the 4-row tile,
            // K not a multiple of the lane count.
            c.add(new Case(f, 140, 1000, 9)); // 128-row panels (512 KiB at K = 1000): 2, the last of 12 rows
            c.add(new Case(f, 37, 4100, 5)); // 28-row panels at K = 4100: 28 + 9
            // K a multiple of the lane count: no scalar tail, the BF16 mat-vec's quarters in one loop (K = 48, 64,
            // 256, 8192), from 64 to 256 chunks staggered (K = 1024: 7 rows, one per quarter, then 3 past them;
            // K = 2048; K = 4096 in blocks of 32 chunks, not a quarter row)
            for (int[] oi : new int[][] {{37, 48}, {7, 64}, {67, 256}, {7, 1024}, {130, 2048}, {9, 4096}, {5, 8192}}) {
                c.add(new Case(f, oi[0], oi[1], 1));
                c.add(new Case(f, oi[0], oi[1], 6));
                c.add(new Case(f, oi[0], oi[1], 4)); // a verify's 4 tokens: one group of 4 × 4 tiles
            }
        }
        for (int bits : new int[] {2, 3, 4, 5, 6, 8}) {
            for (int g : new int[] {32, 64, 128}) {
                for (int in : new int[] {g, 3 * g, 5 * g, 512, 19 * g}) {
                    c.add(new Case("affine/" + bits + "/" + g, 5, in, 1));
                    c.add(new Case("affine/" + bits + "/" + g, 6, in, 9));
                }
            }
        }
        return c;
    }

    @ParameterizedTest
    @MethodSource("cases")
    void bothModesMatchF64OverDecodedWeightsAndBatchedRowsEqualSingleRows(Case c) {
        long seed = SEED ^ c.hashCode();
        SplittableRandom rnd = new SplittableRandom(seed);
        TestWeights tw = c.weights(rnd);
        int xOff = 3;
        int outOff = 5;
        float[] x = TestWeights.randomFloats(xOff + c.rows() * c.in(), rnd);
        double[] expected = new double[c.rows() * c.out()];
        for (int r = 0; r < c.rows(); r++) {
            for (int o = 0; o < c.out(); o++) {
                double s = 0;
                for (int i = 0; i < c.in(); i++) {
                    s += (double) x[xOff + r * c.in() + i] * tw.decoded()[o][i];
                }
                expected[r * c.out() + o] = s;
            }
        }
        for (KernelMode mode : KernelMode.values()) {
            try (Kernels k = new Kernels(mode, 1)) {
                float[] out = new float[outOff + expected.length];
                k.matmul(out, outOff, tw.weight(), x, xOff, c.rows());
                float[] got = Arrays.copyOfRange(out, outOff, out.length);
                assertThat(TestWeights.nmse(got, expected)).as("%s %s seed %d", mode, c, seed)
                        .isLessThanOrEqualTo(NMSE_TOLERANCE);
                for (int r = 0; r < c.rows(); r++) {
                    float[] one = new float[c.out()];
                    k.matmul(one, 0, tw.weight(), x, xOff + r * c.in(), 1);
                    assertThat(one).as("%s %s row %d alone vs batched, seed %d", mode, c, r, seed)
                            .isEqualTo(Arrays.copyOfRange(got, r * c.out(), (r + 1) * c.out()));
                }
            }
        }
    }

    @Test
    void threadCountsOneTwoThreeGiveBitIdenticalResults() {
        SplittableRandom rnd = new SplittableRandom(SEED);
        for (Case c : List.of(new Case("BF16", 67, 300, 1), new Case("BF16", 67, 300, 7), new Case("BF16", 67, 256, 1),
                new Case("BF16", 37, 48, 1), new Case("BF16", 67, 2048, 1), new Case("BF16", 9, 1024, 1),
                new Case("BF16", 21, 4096, 1),
                new Case("affine/4/64", 71, 512, 1), new Case("affine/4/64", 71, 512, 6),
                new Case("affine/3/32", 37, 256, 5), new Case("F16", 129, 520, 1))) {
            TestWeights tw = c.weights(rnd);
            float[] x = TestWeights.randomFloats(c.rows() * c.in(), rnd);
            float[] first = null;
            for (int threads = 1; threads <= 3; threads++) {
                try (Kernels k = new Kernels(KernelMode.VECTOR, threads)) {
                    float[] out = new float[c.rows() * c.out()];
                    k.matmul(out, 0, tw.weight(), x, 0, c.rows());
                    if (first == null) {
                        first = out;
                    } else {
                        assertThat(out).as("%s with %d threads, seed %d", c, threads, SEED).isEqualTo(first);
                    }
                }
            }
        }
    }

    @Test
    void dotMatchesF64OnRaggedLengthsAndOddOffsets() {
        SplittableRandom rnd = new SplittableRandom(SEED);
        for (int n : new int[] {0, 1, 15, 16, 17, 33, 1000}) {
            float[] a = TestWeights.randomFloats(n + 3, rnd);
            float[] b = TestWeights.randomFloats(n + 5, rnd);
            double e = 0;
            for (int i = 0; i < n; i++) {
                e += (double) a[3 + i] * b[5 + i];
            }
            for (KernelMode mode : KernelMode.values()) {
                try (Kernels k = new Kernels(mode, 1)) {
                    float got = k.dot(a, 3, b, 5, n);
                    assertThat(TestWeights.nmse(new float[] {got}, new double[] {e})).as("%s n=%d seed %d", mode, n, SEED)
                            .isLessThanOrEqualTo(NMSE_TOLERANCE);
                }
            }
        }
    }
}
