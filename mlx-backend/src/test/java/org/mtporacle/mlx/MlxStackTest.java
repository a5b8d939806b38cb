package org.mtporacle.mlx;

import org.junit.jupiter.api.Test;
import org.mtporacle.api.DType;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.LinearWeight;
import org.mtporacle.mlx.ffi.MlxC;
import org.mtporacle.mlx.handle.MlxArray;
import org.mtporacle.mlx.handle.MlxOps;

import java.util.List;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;

/** Stacked projections (q/k/v, gate/up) and the host-side bf16 upload the draft round uses instead of a conversion. */
class MlxStackTest {

    private static LinearWeight.Dense dense(float[] values, int out, int in) {
        return new LinearWeight.Dense(HostTensor.ofFloats(values, out, in));
    }

    private static float[] seeded(long seed, int n) {
        Random r = new Random(seed);
        float[] v = new float[n];
        for (int i = 0; i < n; i++) {
            v[i] = (float) r.nextGaussian();
        }
        return v;
    }

    @Test
    void denseWeightsStackRowByRowInOrder() {
        LinearWeight a = dense(new float[] {1, 2, 3, 4, 5, 6}, 2, 3);
        LinearWeight b = dense(new float[] {7, 8, 9}, 1, 3);
        HostTensor s = ((LinearWeight.Dense) MlxStack.stackRows(List.of(a, b)).orElseThrow()).weight();
        assertThat(s.shape()).containsExactly(3, 3);
        assertThat(s.toFloatArray()).containsExactly(1, 2, 3, 4, 5, 6, 7, 8, 9);
    }

    @Test
    void weightsThatDoNotShareAFormatRunApart() {
        LinearWeight f32 = dense(new float[6], 2, 3);
        LinearWeight bf16 = new LinearWeight.Dense(HostTensor.ofFloats(DType.BF16, new float[6], 2, 3));
        LinearWeight wider = dense(new float[8], 2, 4);
        assertThat(MlxStack.stackRows(List.of(f32, bf16))).isEmpty();
        assertThat(MlxStack.stackRows(List.of(f32, wider))).isEmpty();
        assertThat(MlxStack.stackRows(List.of(f32))).isEmpty();
    }

    @Test
    void aStackedProductGivesEachWeightsOwnProductInF32() {
        int in = 24;
        int[] outs = {5, 3, 7};
        float[][] w = new float[outs.length][];
        for (int i = 0; i < outs.length; i++) {
            w[i] = seeded(11 + i, outs[i] * in);
        }
        float[] x = seeded(5, 2 * in);
        MlxTestSupport.onMlx(ops -> {
            try (MlxStack stack = MlxStack.upload(ops, List.of(dense(w[0], outs[0], in), dense(w[1], outs[1], in),
                    dense(w[2], outs[2], in)), MlxC.MLX_FLOAT32, false)) {
                assertThat(stack.isStacked()).isTrue();
                List<MlxArray> y = stack.apply(ops, ops.fromFloats(x, 2, in));
                assertThat(y).hasSize(3);
                for (int i = 0; i < outs.length; i++) {
                    assertThat(y.get(i).shape()).containsExactly(2, outs[i]);
                    float[] got = ops.toFloats(y.get(i));
                    for (int r = 0; r < 2; r++) {
                        for (int o = 0; o < outs[i]; o++) {
                            double want = 0; // independent f64 dot product
                            for (int k = 0; k < in; k++) {
                                want += (double) x[r * in + k] * w[i][o * in + k];
                            }
                            assertThat((double) got[r * outs[i] + o]).as("weight %d row %d out %d", i, r, o)
                                    .isCloseTo(want, org.assertj.core.data.Offset.offset(1e-4));
                        }
                    }
                }
            }
        });
    }

    @Test
    void hostRoundedBf16UploadsEqualMlxsOwnConversion() {
        float[] v = seeded(3, 4096);
        // exact halfway cases between two bf16 values, both parities, and values that round up a binade
        v[0] = Float.intBitsToFloat(0x3F808000);
        v[1] = Float.intBitsToFloat(0x3F818000);
        v[2] = Float.intBitsToFloat(0x3FFFFFFF);
        v[3] = -0.0f;
        MlxTestSupport.onMlx(ops -> {
            float[] host = ops.toFloats(ops.fromFloatsAs(v, MlxC.MLX_BFLOAT16, 64, 64));
            float[] device = ops.toFloats(ops.astype(ops.fromFloats(v, 64, 64), MlxC.MLX_BFLOAT16));
            for (int i = 0; i < v.length; i++) {
                assertThat(Float.floatToRawIntBits(host[i])).as("value %d (%s)", i, v[i])
                        .isEqualTo(Float.floatToRawIntBits(device[i]));
            }
        });
    }

}
