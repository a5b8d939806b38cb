package org.mtporacle.mlx;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.TargetCheckpoint;
import org.mtporacle.api.TargetConfig;
import org.mtporacle.api.TargetModel;
import org.mtporacle.api.TargetOutput;
import org.mtporacle.api.TargetRows;
import org.mtporacle.io.SafetensorsFile;
import org.mtporacle.io.TargetLoader;

import java.nio.file.Path;
import java.util.Collections;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The MLX target against the external float64 reference of a whole tiny Qwen3.5 target computed with transformers
 * ({@code reference/src/test/data/qwen35-target-transformers}, its README states every convention): each row fed token
 * by token, logits and both taps at every position, and the row's conv windows, recurrent states and K/V at the end.
 * The float32 variant runs precision=f32 ({@link #F32_NMSE}); the bfloat16 variant runs precision=native
 * ({@link #NATIVE_NMSE}).
 */
class MlxTargetExternalReferenceTest {
    private static final Path DATA = Path.of("../reference/src/test/data/qwen35-target-transformers");
    /** f32 arithmetic against float64 over exactly representable weights, as the reference's own test bounds it. */
    private static final double F32_NMSE = 1e-10;
    /** bf16 products against float64: the bf16 profile's NMSE bound. */
    private static final double NATIVE_NMSE = MlxTargetTolerances.NATIVE.outputNmse();

    @ParameterizedTest(name = "{0} precision={1}")
    @CsvSource({"float32, f32", "bfloat16, native"})
    void everyPositionAndTheFinalStatesMatchTheExternalReference(String variant, String precision) {
        MlxBackend backend = MlxTestSupport.requireMlx();
        Path dir = DATA.resolve(variant);
        TargetModel model = TargetLoader.load(dir);
        SafetensorsFile expected = SafetensorsFile.open(dir.resolve("inputs-and-expected.safetensors"));
        double bound = precision.equals("f32") ? F32_NMSE : NATIVE_NMSE;
        TargetConfig c = model.config();
        int h = c.shape().hiddenSize();
        int v = c.shape().vocabSize();
        double worst = 0;
        try (MlxTarget t = backend.loadTarget(model, Map.of("precision", precision, "device", "cpu"))) {
            int rows = expected.tensor("meta_prompt_lengths").toIntArray().length;
            for (int r = 0; r < rows; r++) {
                String p = "row" + r + "_";
                int[] tokens = expected.tensor(p + "tokens").toIntArray();
                int len = tokens.length - 1;
                double[] logits = expected.tensor(p + "logits").toDoubleArray();
                double[] pre = expected.tensor(p + "hidden_prenorm").toDoubleArray();
                double[] post = expected.tensor(p + "hidden_postnorm").toDoubleArray();
                try (TargetRows g = t.openRows(Collections.singletonList(null))) {
                    for (int i = 0; i < len; i++) {
                        TargetOutput o = g.prefill(HostTensor.ofInts(new int[] {tokens[i]}, 1, 1));
                        String at = variant + " row " + r + " position " + i;
                        double[] e = {nmse(o.logits().toFloatArray(), logits, i * v, v),
                            nmse(o.preNorm().toFloatArray(), pre, i * h, h),
                            nmse(o.postNorm().toFloatArray(), post, i * h, h)};
                        for (double x : e) {
                            worst = Math.max(worst, x);
                        }
                        assertThat(Math.max(e[0], Math.max(e[1], e[2]))).as("%s logits, pre-norm, post-norm NMSE %s", at,
                                java.util.Arrays.toString(e)).isLessThan(bound);
                    }
                    TargetCheckpoint cp = g.capture(0);
                    int nGdn = c.count(TargetConfig.LayerType.LINEAR_ATTENTION);
                    int win = c.gdn().windowSize();
                    int st = c.gdn().stateSize();
                    double[] conv = expected.tensor(p + "conv_window").toDoubleArray();
                    double[] rec = expected.tensor(p + "recurrent_state").toDoubleArray();
                    float[] cw = cp.convWindows().toFloatArray();
                    float[] rs = cp.recurrentStates().toFloatArray();
                    for (int l = 0; l < nGdn; l++) {
                        double[] wl = java.util.Arrays.copyOfRange(conv, (l * len + len - 1) * win, (l * len + len) * win);
                        double[] sl = java.util.Arrays.copyOfRange(rec, (l * len + len - 1) * st, (l * len + len) * st);
                        assertThat(nmse(java.util.Arrays.copyOfRange(cw, l * win, (l + 1) * win), wl, 0, win))
                                .as("%s row %d conv window %d", variant, r, l).isLessThan(bound);
                        assertThat(nmse(java.util.Arrays.copyOfRange(rs, l * st, (l + 1) * st), sl, 0, st))
                                .as("%s row %d state %d", variant, r, l).isLessThan(bound);
                    }
                    double[] k = expected.tensor(p + "attn_k").toDoubleArray();
                    double[] vv = expected.tensor(p + "attn_v").toDoubleArray();
                    assertThat(nmse(cp.keys().toFloatArray(), k, 0, k.length)).as("%s row %d K", variant, r)
                            .isLessThan(bound);
                    assertThat(nmse(cp.values().toFloatArray(), vv, 0, vv.length)).as("%s row %d V", variant, r)
                            .isLessThan(bound);
                }
            }
        }
        System.out.printf("mlx target vs external float64 reference, %s precision=%s: worst logits/taps NMSE %.3g "
                + "(bound %.0e)%n", variant, precision, worst, bound);
    }

    /** {@code Σ(got−want)²/Σwant²} over {@code want[off, off+n)} against {@code got[0, n)}. */
    private static double nmse(float[] got, double[] want, int off, int n) {
        double num = 0;
        double den = 0;
        for (int i = 0; i < n; i++) {
            double e = got[i] - want[off + i];
            num += e * e;
            den += want[off + i] * want[off + i];
        }
        return den == 0 ? num : num / den;
    }
}
