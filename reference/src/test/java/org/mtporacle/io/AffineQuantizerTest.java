package org.mtporacle.io;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import org.mtporacle.api.DType;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.LinearWeight;

class AffineQuantizerTest {
    private static final long SEED = 424242L;
    /** f32 rounding of (w − bias)/scale and of scale·q + bias, relative to the group's range. */
    private static final float F32_SLACK = 1e-5f;

    private static HostTensor random(int rows, int cols, long seed) {
        SplittableRandom rnd = new SplittableRandom(seed);
        float[] v = new float[rows * cols];
        for (int i = 0; i < v.length; i++) {
            v[i] = (float) rnd.nextGaussian() * (1 + rnd.nextInt(3));
        }
        return HostTensor.ofFloats(v, rows, cols);
    }

    @ParameterizedTest(name = "{0} bits, group {1}")
    @CsvSource({"2,32", "3,32", "4,64", "5,64", "6,128", "8,32", "3,128", "5,32", "6,64"})
    void dequantizedErrorIsWithinHalfAScaleInsideTheGridAndOneScaleAtTheClippedEdge(int bits, int group) {
        // MLX snaps the scale so the larger-magnitude edge (and zero) are exact: scale = edge / rint(edge / s0). When
        // rint rounds |q0| up, the grid spans at most 2^bits steps, so the opposite extreme may clip by up to one
        // step: the bound is scale/2 for codes inside (0, 2^bits − 1) and |scale| at the ends.
        System.out.println("seed " + SEED);
        HostTensor w = random(5, 256, SEED + bits * 131L + group);
        LinearWeight.Affine a = AffineQuantizer.quantize(w, bits, group);
        assertThat(a.codes().shape()).containsExactly(5, 256 * bits / 32);
        for (int r = 0; r < 5; r++) {
            for (int i = 0; i < 256; i++) {
                int q = AffineQuantizer.code(a.codes(), r, i, bits);
                assertThat(q).isBetween(0, (1 << bits) - 1);
                float scale = a.scales().getFloat(r * (256 / group) + i / group);
                float bias = a.biases().getFloat(r * (256 / group) + i / group);
                float x = w.getFloat(r * 256L + i);
                float deq = scale * q + bias;
                float bound = (q > 0 && q < (1 << bits) - 1 ? Math.abs(scale) / 2 : Math.abs(scale))
                        + F32_SLACK * (1 + Math.abs(x));
                assertThat(Math.abs(deq - x)).as("row %d col %d code %d", r, i, q).isLessThanOrEqualTo(bound);
            }
        }
    }

    @Test
    void handWorkedGroupFollowsMlxEdgeRule() {
        // w = 0..31, 4 bits: |min| = 0 is not > |max| = 31, so scale = -(31/15), edge = max = 31, q0 = rint(-15) = -15,
        // scale = 31 / -15, bias = 31: the larger-magnitude edge is exact and maps to code 0, and w = 0 to code 15.
        float[] v = new float[32];
        for (int i = 0; i < 32; i++) {
            v[i] = i;
        }
        LinearWeight.Affine a = AffineQuantizer.quantize(HostTensor.ofFloats(v, 1, 32), 4, 32);
        assertThat(a.scales().getFloat(0)).isEqualTo(31f / -15f);
        assertThat(a.biases().getFloat(0)).isEqualTo(31f);
        assertThat(AffineQuantizer.code(a.codes(), 0, 31, 4)).isZero();
        assertThat(AffineQuantizer.code(a.codes(), 0, 0, 4)).isEqualTo(15);
        // w = 15: (15 - 31) / (-31/15) = 7.74 → 8
        assertThat(AffineQuantizer.code(a.codes(), 0, 15, 4)).isEqualTo(8);
    }

    @Test
    void constantGroupUsesTheEpsilonScale() {
        float[] v = new float[32];
        java.util.Arrays.fill(v, 0f);
        LinearWeight.Affine a = AffineQuantizer.quantize(HostTensor.ofFloats(v, 1, 32), 4, 32);
        // max − min = 0 → scale = max(0, 1e-7), negated since |min| is not > |max|; q0 = 0 → bias 0
        assertThat(a.scales().getFloat(0)).isEqualTo(-1e-7f);
        assertThat(a.biases().getFloat(0)).isZero();
    }

    @ParameterizedTest(name = "{0} bits")
    @CsvSource({"3,8,3", "5,8,5", "6,4,3"})
    void nonPowerOfTwoPackingMatchesMlxBytePacks(int bits, int codesPerPack, int bytesPerPack) {
        // MLX's CPU quantizer (mlx/backend/cpu/quantized.cpp) packs codesPerPack codes, code k at bits k·bits of a
        // little-endian integer, into bytesPerPack bytes, packs back to back. Build those bytes independently.
        HostTensor w = random(2, 128, SEED + bits);
        LinearWeight.Affine a = AffineQuantizer.quantize(w, bits, 32);
        byte[] words = a.codes().data().toArray(ValueLayout.JAVA_BYTE);
        int bytesPerRow = 128 * bits / 8;
        for (int r = 0; r < 2; r++) {
            for (int p = 0; p < 128 / codesPerPack; p++) {
                long pack = 0;
                for (int k = 0; k < codesPerPack; k++) {
                    pack |= (long) AffineQuantizerTest.codeByValue(w, a, r, p * codesPerPack + k, bits) << (k * bits);
                }
                for (int b = 0; b < bytesPerPack; b++) {
                    assertThat(words[r * bytesPerRow + p * bytesPerPack + b]).as("row %d pack %d byte %d", r, p, b)
                            .isEqualTo((byte) (pack >>> (8 * b)));
                }
            }
        }
    }

    /** The code re-derived from the stored f32 scale and bias, exactly as MLX's rule computes it. */
    private static int codeByValue(HostTensor w, LinearWeight.Affine a, int r, int i, int bits) {
        int groups = a.scales().dim(1);
        float scale = a.scales().getFloat(r * groups + i / 32);
        float bias = a.biases().getFloat(r * groups + i / 32);
        float c = (float) Math.rint((w.getFloat(r * 128L + i) - bias) / scale);
        return (int) Math.min(Math.max(c, 0f), (1 << bits) - 1);
    }

    @Test
    void scalesAndBiasesKeepTheWeightDtype() {
        HostTensor w = random(2, 64, SEED).convert(DType.BF16);
        LinearWeight.Affine a = AffineQuantizer.quantize(w, 4, 64);
        assertThat(a.scales().dtype()).isEqualTo(DType.BF16);
        assertThat(a.biases().dtype()).isEqualTo(DType.BF16);
        assertThat(a.codes().dtype()).isEqualTo(DType.U32);
    }
}
