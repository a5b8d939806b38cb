package org.mtporacle.reference.kernels;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.mtporacle.io.SafetensorsFile;

/**
 * The GDN kernels chained as the layer chains them (spec §13.2), against the float64 internals of row 0 of the
 * external hybrid-target reference ({@code src/test/data/qwen35-target-transformers}, transformers' classes in f64):
 * from each GDN layer's raw {@code in_proj_qkv} output and its {@code a}, {@code b}, {@code z} (rounded to f32),
 * through conv, l2 norms, gates, delta rule and gated norm: every stage, every conv window and recurrent state.
 * Token by token with {@link Kernels#deltaRuleStep} and in one call with {@link Kernels#deltaRuleChunked}. Shapes come
 * from the tensors.
 */
class GdnExternalReferenceTest {
    static final Path DATA = Path.of("src/test/data/qwen35-target-transformers");
    /** f32 arithmetic against float64 values; the f32 rounding of the inputs is the largest term (NMSE ~1e-14). */
    private static final double NMSE = 1e-10;
    /** {@code rms_norm_eps} of the set's config.json. */
    private static final double EPS = 1e-6;
    private static final String T = "trace_row0_gdn_";

    static Stream<Arguments> variants() {
        List<Arguments> out = new ArrayList<>();
        for (String v : new String[] {"float32", "bfloat16"}) {
            for (KernelMode m : KernelMode.values()) {
                out.add(Arguments.of(v, m));
            }
        }
        return out.stream();
    }

    /** One GDN layer of the set: weights, shapes, and row 0's trace as f64. */
    private record Layer(SafetensorsFile expected, int index, int tokens, int hk, int hv, int dk, int dv, int taps,
                         float[] conv, float[] aLog, float[] dtBias, float[] norm) {
        static Layer load(SafetensorsFile model, SafetensorsFile expected, int gdn, int layer) {
            int[] q = expected.info(T + "q").shape();   // [nG, T, Hk, Dk]
            int[] v = expected.info(T + "v").shape();   // [nG, T, Hv, Dv]
            String p = "model.language_model.layers." + layer + ".linear_attn.";
            int taps = model.info(p + "conv1d.weight").shape()[2];
            return new Layer(expected, gdn, q[1], q[2], v[2], q[3], v[3], taps,
                    model.tensor(p + "conv1d.weight").toFloatArray(), model.tensor(p + "A_log").toFloatArray(),
                    model.tensor(p + "dt_bias").toFloatArray(), model.tensor(p + "norm.weight").toFloatArray());
        }

        int channels() {
            return 2 * hk * dk + hv * dv;
        }

        /** This layer's slice of a {@code [nG, …]} tensor. */
        double[] want(String name) {
            double[] all = expected.tensor(name).toDoubleArray();
            int per = all.length / expected.info(name).shape()[0];
            return Arrays.copyOfRange(all, index * per, (index + 1) * per);
        }

        float[] input(String name) {
            double[] d = want(name);
            float[] f = new float[d.length];
            for (int i = 0; i < d.length; i++) {
                f[i] = (float) d[i];
            }
            return f;
        }
    }

    /** Every stage's outputs over the tokens, laid out as the trace lays them out. */
    private record Stages(float[] conv, float[] q, float[] k, float[] v, float[] g, float[] beta, float[] core,
                          float[] normed, float[] windows, float[] states) {
        Stages(Layer l) {
            this(new float[l.tokens * l.channels()], new float[l.tokens * l.hk * l.dk],
                    new float[l.tokens * l.hk * l.dk], new float[l.tokens * l.hv * l.dv], new float[l.tokens * l.hv],
                    new float[l.tokens * l.hv], new float[l.tokens * l.hv * l.dv], new float[l.tokens * l.hv * l.dv],
                    new float[l.tokens * l.channels() * (l.taps - 1)], new float[l.tokens * l.hv * l.dk * l.dv]);
        }
    }

    @ParameterizedTest(name = "{0}, {1}")
    @MethodSource("variants")
    void tokenByTokenEveryStageWindowAndStateMatchTheTrace(String variant, KernelMode mode) {
        forEachLayer(variant, mode, (k, l) -> {
            Stages s = new Stages(l);
            int c = l.channels();
            int w = c * (l.taps - 1);
            int state = l.hv * l.dk * l.dv;
            float[] window = new float[w];
            float[] raw = l.input(T + "qkv_raw");
            for (int t = 0; t < l.tokens; t++) {
                k.causalConv(s.conv, t * c, raw, t * c, window, 0, l.conv, c, l.taps, 1);
                Kernels.convWindow(window, 0, window, 0, raw, t * c, c, l.taps, 1);
                System.arraycopy(window, 0, s.windows, t * w, w);
                mix(k, l, s, t, 1);
                if (t > 0) { // the state after token t starts as the one after t − 1, updated in place
                    System.arraycopy(s.states, (t - 1) * state, s.states, t * state, state);
                }
                k.deltaRuleStep(s.core, t * l.hv * l.dv, s.states, t * state, s.q, t * l.hk * l.dk, s.k,
                        t * l.hk * l.dk, s.v, t * l.hv * l.dv, s.g, t * l.hv, s.beta, t * l.hv, l.hk, l.hv, l.dk, l.dv);
            }
            k.gatedRmsNorm(s.normed, 0, s.core, 0, l.input(T + "z"), 0, l.norm, l.dv, l.tokens * l.hv, EPS);
            String what = variant + " " + mode + " token by token, GDN layer " + l.index;
            check(what, l, s);
            assertThat(TestWeights.nmse(s.windows, l.want("row0_conv_window"))).as("windows, " + what)
                    .isLessThanOrEqualTo(NMSE);
            assertThat(TestWeights.nmse(s.states, l.want("row0_recurrent_state"))).as("states, " + what)
                    .isLessThanOrEqualTo(NMSE);
        });
    }

    @ParameterizedTest(name = "{0}, {1}")
    @MethodSource("variants")
    void oneCallOverAllTokensMatchesTheTrace(String variant, KernelMode mode) {
        forEachLayer(variant, mode, (k, l) -> {
            Stages s = new Stages(l);
            int c = l.channels();
            float[] raw = l.input(T + "qkv_raw");
            float[] start = new float[c * (l.taps - 1)];
            k.causalConv(s.conv, 0, raw, 0, start, 0, l.conv, c, l.taps, l.tokens);
            mix(k, l, s, 0, l.tokens);
            float[] state = new float[l.hv * l.dk * l.dv];
            k.deltaRuleChunked(s.core, 0, state, 0, s.q, 0, s.k, 0, s.v, 0, s.g, 0, s.beta, 0, l.tokens, l.hk, l.hv,
                    l.dk, l.dv);
            k.gatedRmsNorm(s.normed, 0, s.core, 0, l.input(T + "z"), 0, l.norm, l.dv, l.tokens * l.hv, EPS);
            String what = variant + " " + mode + " one call, GDN layer " + l.index;
            check(what, l, s);
            float[] window = new float[start.length];
            Kernels.convWindow(window, 0, start, 0, raw, 0, c, l.taps, l.tokens);
            double[] windows = l.want("row0_conv_window");
            double[] states = l.want("row0_recurrent_state");
            assertThat(TestWeights.nmse(window, Arrays.copyOfRange(windows, windows.length - window.length,
                    windows.length))).as("last window, " + what).isLessThanOrEqualTo(NMSE);
            assertThat(TestWeights.nmse(state, Arrays.copyOfRange(states, states.length - state.length,
                    states.length))).as("last state, " + what).isLessThanOrEqualTo(NMSE);
        });
    }

    /** From the conv output of tokens {@code [t, t + n)}: q̂, k̂ (l2 norms), v (a copy) and the gates. */
    private static void mix(Kernels k, Layer l, Stages s, int t, int n) {
        int c = l.channels();
        int key = l.hk * l.dk;
        float[] a = l.input(T + "a");
        float[] b = l.input(T + "b");
        for (int u = t; u < t + n; u++) {
            k.l2Norm(s.q, u * key, s.conv, u * c, l.dk, l.hk, (float) (1 / Math.sqrt(l.dk)));
            k.l2Norm(s.k, u * key, s.conv, u * c + key, l.dk, l.hk, 1f);
            System.arraycopy(s.conv, u * c + 2 * key, s.v, u * l.hv * l.dv, l.hv * l.dv);
            k.gdnGates(s.g, u * l.hv, s.beta, u * l.hv, a, u * l.hv, b, u * l.hv, l.aLog, l.dtBias, l.hv);
        }
    }

    private static void check(String what, Layer l, Stages s) {
        String[] names = {"qkv_conv", "q", "k", "v", "g", "beta", "core", "normed"};
        float[][] got = {s.conv, s.q, s.k, s.v, s.g, s.beta, s.core, s.normed};
        double worst = 0;
        for (int i = 0; i < names.length; i++) {
            double nmse = TestWeights.nmse(got[i], l.want(T + names[i]));
            assertThat(nmse).as("%s, %s", names[i], what).isLessThanOrEqualTo(NMSE);
            worst = Math.max(worst, nmse);
        }
        System.out.printf("%s: largest stage NMSE %.1e%n", what, worst);
    }

    private interface LayerCheck {
        void run(Kernels k, Layer l);
    }

    private static void forEachLayer(String variant, KernelMode mode, LayerCheck check) {
        Path dir = DATA.resolve(variant);
        try (SafetensorsFile model = SafetensorsFile.open(dir.resolve("model.safetensors"));
             SafetensorsFile expected = SafetensorsFile.open(dir.resolve("inputs-and-expected.safetensors"));
             Kernels k = new Kernels(mode, 1)) {
            int[] isGdn = expected.tensor("meta_layer_is_gdn").toIntArray();
            int gdn = 0;
            for (int layer = 0; layer < isGdn.length; layer++) {
                if (isGdn[layer] == 1) {
                    check.run(k, Layer.load(model, expected, gdn++, layer));
                }
            }
            assertThat(gdn).as("GDN layers in %s", variant).isEqualTo(expected.info(T + "q").shape()[0]);
        }
    }
}
