package org.mtporacle.reference.kernels;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.mtporacle.api.DType;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.LinearWeight;

/** Dequantization of every bit width from hand-packed words, and the vector decode against {@link WeightRows}. */
class WeightFormatTest {
    private static final long SEED = 0xDEC0DEL;

    /** A one-row affine weight from literal words, group 32, scale 0.5 and bias −1 (both exact in every format). */
    private static LinearWeight.Affine oneRow(int bits, int... words) {
        HostTensor codes = HostTensor.ofInts(words, 1, words.length);
        codes = HostTensor.view(DType.U32, new int[] {1, words.length}, codes.data());
        int in = words.length * 32 / bits;
        float[] s = new float[in / 32];
        float[] b = new float[in / 32];
        java.util.Arrays.fill(s, 0.5f);
        java.util.Arrays.fill(b, -1f);
        return new LinearWeight.Affine(codes, HostTensor.ofFloats(DType.BF16, s, 1, in / 32),
                HostTensor.ofFloats(DType.BF16, b, 1, in / 32), bits, 32);
    }

    private static float[] row(LinearWeight w) {
        float[] out = new float[w.inFeatures()];
        WeightRows.decodeRow(out, w, 0);
        return out;
    }

    @Test
    void fourBitCodesAreNibblesOfEachWordLowestFirst() {
        // words 0x76543210 and 0xFEDCBA98 hold codes 0..15 in order; then three words of 0x11111111 (code 1).
        float[] w = row(oneRow(4, 0x76543210, 0xFEDCBA98, 0x11111111, 0x11111111));
        for (int i = 0; i < 16; i++) {
            assertThat(w[i]).as("code %d", i).isEqualTo(0.5f * i - 1f);
        }
        assertThat(w[16]).isEqualTo(-0.5f);
    }

    @Test
    void twoAndEightBitCodesFollowTheSameLittleEndianStream() {
        // 2-bit: 0b11_10_01_00 = 0xE4 gives codes 0,1,2,3 per byte.
        float[] w2 = row(oneRow(2, 0xE4E4E4E4, 0, 0, 0, 0, 0, 0, 0));
        assertThat(new float[] {w2[0], w2[1], w2[2], w2[3], w2[4]}).containsExactly(-1f, -0.5f, 0f, 0.5f, -1f);
        // 8-bit: bytes 0x01, 0x80, 0xFF, 0x00.
        int[] words8 = new int[8];
        words8[0] = 0x00FF8001;
        float[] w8 = row(oneRow(8, words8));
        assertThat(new float[] {w8[0], w8[1], w8[2], w8[3]}).containsExactly(-0.5f, 63f, 126.5f, -1f);
    }

    @Test
    void threeFiveAndSixBitCodesStraddleWordBoundaries() {
        // 3-bit: code 10 occupies bits 30..32, i.e. word 0 bits 30,31 and word 1 bit 0. Code 10 = 7 = 0b111.
        int[] w3 = new int[3];
        w3[0] = 0b11 << 30;
        w3[1] = 0b1;
        assertThat(row(oneRow(3, w3))[10]).isEqualTo(0.5f * 7 - 1f);
        // 5-bit: code 6 occupies bits 30..34; value 0b10101 = 21 → word 0 bits 30,31 = 0b01, word 1 bits 0..2 = 0b101.
        int[] w5 = new int[5];
        w5[0] = 0b01 << 30;
        w5[1] = 0b101;
        assertThat(row(oneRow(5, w5))[6]).isEqualTo(0.5f * 21 - 1f);
        // 6-bit: code 5 occupies bits 30..35; value 0b110001 = 49 → word 0 bits 30,31 = 0b01, word 1 bits 0..3 = 0b1100.
        int[] w6 = new int[6];
        w6[0] = 0b01 << 30;
        w6[1] = 0b1100;
        assertThat(row(oneRow(6, w6))[5]).isEqualTo(0.5f * 49 - 1f);
    }

    @Test
    void vectorDecodeAndEmbeddingEqualWeightRowsForEveryFormat() {
        SplittableRandom rnd = new SplittableRandom(SEED);
        for (TestWeights tw : new TestWeights[] {TestWeights.dense(DType.F32, 3, 77, rnd),
                TestWeights.dense(DType.BF16, 3, 77, rnd), TestWeights.dense(DType.F16, 3, 77, rnd),
                TestWeights.affine(4, 64, 3, 320, rnd), TestWeights.affine(3, 32, 3, 96, rnd)}) {
            for (int token = 0; token < 3; token++) {
                float[] expected = new float[tw.weight().inFeatures()];
                WeightRows.decodeRow(expected, tw.weight(), token);
                for (int i = 0; i < expected.length; i++) {
                    assertThat((double) expected[i]).as("decoded element %d, seed %d", i, SEED)
                            .isCloseTo(tw.decoded()[token][i], org.assertj.core.data.Offset.offset(1e-6));
                }
                for (KernelMode mode : KernelMode.values()) {
                    try (Kernels k = new Kernels(mode, 1)) {
                        float[] got = new float[expected.length + 2];
                        k.embed(got, 2, tw.weight(), token);
                        assertThat(java.util.Arrays.copyOfRange(got, 2, got.length)).as("%s token %d", mode, token)
                                .isEqualTo(expected);
                    }
                }
            }
        }
    }

    @Test
    void f16VectorWideningIsExactForSubnormalsInfinitiesAndNaN() {
        short[] bits = {0x0000, (short) 0x8000, 0x0001, 0x03FF, 0x0400, 0x3C00, (short) 0xC000, 0x7BFF, 0x7C00,
            (short) 0xFC00, 0x7E00, 0x7C01, 0x3555, (short) 0x8001, 0x1234, 0x5678};
        java.lang.foreign.MemorySegment seg = java.lang.foreign.MemorySegment.ofArray(new byte[bits.length * 2]);
        for (int i = 0; i < bits.length; i++) {
            seg.setAtIndex(WeightFormat.I16, i, bits[i]);
        }
        LinearWeight.Dense w = new LinearWeight.Dense(HostTensor.view(DType.F16, new int[] {1, bits.length}, seg));
        float[] got = new float[bits.length];
        Embedding.vector(got, 0, w, 0);
        for (int i = 0; i < bits.length; i++) {
            float expected = Float.float16ToFloat(bits[i]);
            if (Float.isNaN(expected)) {
                assertThat(got[i]).as("f16 0x%04x", bits[i] & 0xFFFF).isNaN();
            } else {
                assertThat(Float.floatToRawIntBits(got[i])).as("f16 0x%04x", bits[i] & 0xFFFF)
                        .isEqualTo(Float.floatToRawIntBits(expected));
            }
        }
    }

    @Test
    void bf16RowQuadsGiveTheBitsOfSingleRows() {
        SplittableRandom rnd = new SplittableRandom(SEED);
        for (int in : new int[] {16, 48, 1024, 4096}) {
            LinearWeight w = Kernels.offHeap(TestWeights.dense(DType.BF16, 13, in, rnd).weight());
            WeightFormat.Bf16 f = (WeightFormat.Bf16) WeightFormat.of(w);
            float[] x = TestWeights.randomFloats(in + 7, rnd);
            float[] four = new float[4];
            for (int step : new int[] {1, 2, 3}) {
                for (int row = 0; row + 3 * step < 13; row++) {
                    f.dot4(row, step, x, 7, four);
                    assertThat(four).as("rows %d + k·%d of width %d, seed %d", row, step, in, SEED).containsExactly(
                            f.dot(row, x, 7, null), f.dot(row + step, x, 7, null), f.dot(row + 2 * step, x, 7, null),
                            f.dot(row + 3 * step, x, 7, null));
                }
            }
        }
    }

    /** How a thread's share is cut (quads a quarter apart, a pair, a single row) never changes a row's bits. */
    @Test
    void bf16MatVecRowsDoNotDependOnTheRangeTheyAreComputedIn() {
        SplittableRandom rnd = new SplittableRandom(SEED);
        int out = 23;
        int in = 40; // a scalar tail past the 16-lane chunks too
        LinearWeight w = Kernels.offHeap(TestWeights.dense(DType.BF16, out, in, rnd).weight());
        WeightFormat.Bf16 f = (WeightFormat.Bf16) WeightFormat.of(w);
        float[] x = TestWeights.randomFloats(in, rnd);
        float[] whole = new float[out];
        MatVec.vector(whole, 0, w, x, 0, 0, out);
        float[] tail = new float[in - f.vectorEnd()];
        WeightRows.decodeRange(tail, 0, w, 5, f.vectorEnd(), in);
        assertThat(whole[5]).isEqualTo(MatVec.finish(f.dot(5, x, 0, null), x, f.vectorEnd(), tail, 0, tail.length));
        for (int cut = 1; cut < out; cut++) {
            float[] split = new float[out];
            MatVec.vector(split, 0, w, x, 0, 0, cut);
            MatVec.vector(split, 0, w, x, 0, cut, out);
            assertThat(split).as("cut at %d, seed %d", cut, SEED).isEqualTo(whole);
        }
    }

    @Test
    void bf16RowPairsGiveTheBitsOfSingleRows() {
        SplittableRandom rnd = new SplittableRandom(SEED);
        for (int in : new int[] {16, 48, 1024, 4096}) {
            LinearWeight w = Kernels.offHeap(TestWeights.dense(DType.BF16, 6, in, rnd).weight());
            WeightFormat.Bf16 f = (WeightFormat.Bf16) WeightFormat.of(w);
            float[] x = TestWeights.randomFloats(in + 7, rnd);
            float[] two = new float[2];
            for (int row = 0; row < 6; row++) {
                int row2 = 5 - row; // adjacent, far apart, reversed and equal rows alike
                f.dot2(row, row2, x, 7, two);
                assertThat(two).as("rows %d, %d of width %d, seed %d", row, row2, in, SEED)
                        .containsExactly(f.dot(row, x, 7, null), f.dot(row2, x, 7, null));
            }
        }
    }
}
