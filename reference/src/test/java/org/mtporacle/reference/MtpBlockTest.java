package org.mtporacle.reference;

import org.mtporacle.reference.block.MtpBlock;
import org.mtporacle.reference.block.RowKv;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.mtporacle.api.DType;
import org.mtporacle.api.MtpModel;
import org.mtporacle.reference.kernels.KernelMode;
import org.mtporacle.reference.kernels.Kernels;

import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;

class MtpBlockTest {
    /** f32 arithmetic against f64 over the same (exactly decoded) weights: rounding only, far below this. */
    private static final double NMSE_F32 = 1e-10;
    private static final long SEED = 20261130L;

    @ParameterizedTest(name = "{0} weights, {1} kernels")
    @EnumSource(value = DType.class, names = {"F32", "BF16", "F16"})
    void forwardMatchesTheFloat64ScalarBlockOnEveryPositionAndKvRow(DType dtype) {
        for (KernelMode mode : KernelMode.values()) {
            MtpModel model = TestModels.random(TestModels.tinyConfig(), SEED, dtype);
            int h = model.config().hiddenSize();
            int s = 9;
            SplittableRandom rnd = new SplittableRandom(SEED + 1);
            float[] e = TestModels.hiddens(rnd, 1, s, h).toFloatArray();
            float[] hin = TestModels.hiddens(rnd, 1, s, h).toFloatArray();
            try (Kernels k = new Kernels(mode, 2)) {
                MtpBlock block = new MtpBlock(model.config(), model.weights(), k);
                RowKv kv = new RowKv(model.config().numKvHeads(), model.config().headDim());
                float[] y = block.forward(e, hin, new RowKv[] {kv}, s, null);

                F64Block ref = new F64Block(model);
                double[] yRef = new double[s * h];
                for (int t = 0; t < s; t++) {
                    double[] yt = ref.forward(toDouble(e, t * h, h), toDouble(hin, t * h, h));
                    System.arraycopy(yt, 0, yRef, t * h, h);
                }
                assertThat(F64Block.nmse(y, yRef)).as("Y NMSE, %s weights, %s, seed %d", dtype, mode, SEED)
                        .isLessThan(NMSE_F32);
                assertThat(kv.length()).isEqualTo(s);
                assertThat(F64Block.nmse(kv.export(true), headMajor(ref.keys, model)))
                        .as("K NMSE %s %s", dtype, mode).isLessThan(NMSE_F32);
                assertThat(F64Block.nmse(kv.export(false), headMajor(ref.values, model)))
                        .as("V NMSE %s %s", dtype, mode).isLessThan(NMSE_F32);
            }
        }
    }

    @Test
    void splittingAForwardAnywhereGivesBitIdenticalOutputsAndKv() {
        MtpModel model = TestModels.random(TestModels.tinyConfig(), SEED, DType.BF16);
        int h = model.config().hiddenSize();
        int s = 11;
        SplittableRandom rnd = new SplittableRandom(SEED + 2);
        float[] e = TestModels.hiddens(rnd, 1, s, h).toFloatArray();
        float[] hin = TestModels.hiddens(rnd, 1, s, h).toFloatArray();
        try (Kernels k = new Kernels(KernelMode.VECTOR, 2)) {
            MtpBlock block = new MtpBlock(model.config(), model.weights(), k);
            RowKv whole = new RowKv(model.config().numKvHeads(), model.config().headDim());
            float[] yWhole = block.forward(e, hin, new RowKv[] {whole}, s, null);
            for (int split = 1; split < s; split++) {
                RowKv parts = new RowKv(model.config().numKvHeads(), model.config().headDim());
                float[] y1 = block.forward(slice(e, 0, split * h), slice(hin, 0, split * h), new RowKv[] {parts},
                        split, null);
                float[] y2 = block.forward(slice(e, split * h, (s - split) * h), slice(hin, split * h,
                        (s - split) * h), new RowKv[] {parts}, s - split, null);
                float[] joined = new float[s * h];
                System.arraycopy(y1, 0, joined, 0, y1.length);
                System.arraycopy(y2, 0, joined, y1.length, y2.length);
                assertThat(joined).as("Y split at %d", split).containsExactly(yWhole);
                assertThat(parts.export(true)).as("K split at %d", split).containsExactly(whole.export(true));
                assertThat(parts.export(false)).as("V split at %d", split).containsExactly(whole.export(false));
            }
        }
    }

    @Test
    void batchedRowsEqualEachRowAloneBitForBit() {
        MtpModel model = TestModels.random(TestModels.tinyConfig(), SEED, DType.F32);
        int h = model.config().hiddenSize();
        int b = 5;
        SplittableRandom rnd = new SplittableRandom(SEED + 3);
        try (Kernels k = new Kernels(KernelMode.VECTOR, 3)) {
            MtpBlock block = new MtpBlock(model.config(), model.weights(), k);
            // rows with different history lengths: 0, 1, 3, 6, 10 positions
            RowKv[] batched = new RowKv[b];
            RowKv[] alone = new RowKv[b];
            for (int r = 0; r < b; r++) {
                int hist = r * (r + 1) / 2;
                batched[r] = new RowKv(model.config().numKvHeads(), model.config().headDim());
                alone[r] = new RowKv(model.config().numKvHeads(), model.config().headDim());
                if (hist > 0) {
                    float[] e0 = TestModels.hiddens(rnd, 1, hist, h).toFloatArray();
                    float[] h0 = TestModels.hiddens(rnd, 1, hist, h).toFloatArray();
                    block.forward(e0, h0, new RowKv[] {batched[r]}, hist, null);
                    block.forward(e0, h0, new RowKv[] {alone[r]}, hist, null);
                }
            }
            float[] e = TestModels.hiddens(rnd, b, 1, h).toFloatArray();
            float[] hin = TestModels.hiddens(rnd, b, 1, h).toFloatArray();
            float[] y = block.forward(e, hin, batched, 1, null);
            for (int r = 0; r < b; r++) {
                float[] yr = block.forward(slice(e, r * h, h), slice(hin, r * h, h), new RowKv[] {alone[r]}, 1, null);
                assertThat(slice(y, r * h, h)).as("row %d", r).containsExactly(yr);
                assertThat(batched[r].export(true)).as("row %d K", r).containsExactly(alone[r].export(true));
            }
        }
    }

    static double[] toDouble(float[] a, int off, int n) {
        double[] out = new double[n];
        for (int i = 0; i < n; i++) {
            out[i] = a[off + i];
        }
        return out;
    }

    static float[] slice(float[] a, int off, int n) {
        float[] out = new float[n];
        System.arraycopy(a, off, out, 0, n);
        return out;
    }

    /** Per-position {@code [nKV·D]} rows as {@code [nKV, T, D]}. */
    static double[] headMajor(java.util.List<double[]> rows, MtpModel m) {
        int nKv = m.config().numKvHeads();
        int d = m.config().headDim();
        int t = rows.size();
        double[] out = new double[nKv * t * d];
        for (int p = 0; p < t; p++) {
            for (int g = 0; g < nKv; g++) {
                System.arraycopy(rows.get(p), g * d, out, (g * t + p) * d, d);
            }
        }
        return out;
    }
}
