package org.mtporacle.reference.target;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.Collections;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.Stream;

import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.mtporacle.api.DType;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MtpConfig;
import org.mtporacle.api.RowSampler;
import org.mtporacle.api.TargetCheckpoint;
import org.mtporacle.api.TargetConfig;
import org.mtporacle.api.TargetConfig.LayerType;
import org.mtporacle.api.TargetModel;
import org.mtporacle.api.TargetOutput;
import org.mtporacle.api.TargetRows;
import org.mtporacle.io.ModelLoader;
import org.mtporacle.io.TargetLoader;
import org.mtporacle.reference.ReferenceDraftModel;
import org.mtporacle.reference.fixture.TargetFixtures;
import org.mtporacle.reference.kernels.KernelMode;
import org.mtporacle.reference.kernels.Kernels;

/**
 * The reference target on shapes the external reference does not have — value heads per key head 3 and 1, Dk ≠ Dv,
 * conv kernels of 3 and 5, untied heads, full attention first and last, one GDN layer between — against the float64
 * definition {@link F64Target}, token by token (taps, logits, every GDN window and state), in both kernel modes; and
 * speculative == plain on each.
 */
class OddShapesTest {
    /** f32 against f64 through a few small layers. The fixtures write partial rotary 0.25, θ 1e7, ε 1e-6. */
    private static final double NMSE = 1e-9;

    @TempDir
    static Path dir;

    private record Shape(String name, int h, List<LayerType> layers, int vocab, int nh, int nkv, int d, int hk, int hv,
                         int dk, int dv, int k, int inter, boolean tied) {
        TargetFixtures.Preset preset() {
            TargetConfig c = new TargetConfig(new MtpConfig(h, nh, nkv, d, d / 4,
                    1e7, 1e-6, vocab, inter), layers,
                    new TargetConfig.Gdn(hk, hv, dk, dv, k));
            return new TargetFixtures.Preset(name, c, tied, null, "qwen3_5");
        }
    }

    private static final LayerType G = LayerType.LINEAR_ATTENTION;
    private static final LayerType F = LayerType.FULL_ATTENTION;

    static Stream<Arguments> shapes() {
        List<Shape> shapes = List.of(
                new Shape("ratio-3", 48, List.of(G, F, G), 300, 3, 1, 16, 2, 6, 8, 12, 3, 96, false),
                new Shape("ratio-1", 40, List.of(F, G, G, G, F), 260, 2, 2, 24, 1, 1, 24, 8, 5, 64, true),
                new Shape("gdn-only", 32, List.of(G, G), 128, 2, 1, 16, 2, 4, 12, 12, 2, 48, false));
        return shapes.stream().flatMap(s -> Stream.of(KernelMode.values()).map(m -> Arguments.of(s, m)));
    }

    @ParameterizedTest(name = "{0}, {1}")
    @MethodSource("shapes")
    void tokenByTokenMatchesTheFloat64DefinitionAndSpeculativeEqualsPlain(Shape shape, KernelMode mode) {
        Path d = TargetFixtures.write(shape.preset(), 11, dir.resolve(shape.name() + "-" + mode), DType.F32);
        TargetModel model = TargetLoader.load(d);
        TargetConfig c = model.config();
        F64Target f64 = new F64Target(c, model.weights());
        int nGdn = c.count(G);
        int win = c.gdn().windowSize();
        int st = c.gdn().stateSize();
        SplittableRandom rnd = new SplittableRandom(shape.name().hashCode());
        try (ReferenceTarget t = new ReferenceTarget(model, new Kernels(mode, 2));
             TargetRows rows = t.openRows(Collections.singletonList(null))) {
            for (int i = 0; i < 24; i++) {
                int token = rnd.nextInt(shape.vocab());
                F64Target.Step want = f64.feed(token);
                TargetOutput got = rows.prefill(HostTensor.ofInts(new int[] {token}, 1, 1));
                String at = shape.name() + " " + mode + " position " + i;
                assertThat(ExternalTarget.nmse(got.logits().toFloatArray(), want.logits())).as("%s logits", at)
                        .isLessThan(NMSE);
                assertThat(ExternalTarget.nmse(got.preNorm().toFloatArray(), want.pre())).as("%s pre", at)
                        .isLessThan(NMSE);
                assertThat(ExternalTarget.nmse(got.postNorm().toFloatArray(), want.post())).as("%s post", at)
                        .isLessThan(NMSE);
                TargetCheckpoint cp = rows.capture(0);
                for (int g = 0; g < nGdn; g++) {
                    assertThat(ExternalTarget.nmse(cp.convWindows().toFloatArray(), g * win, f64.window(g), 0, win))
                            .as("%s window %d", at, g).isLessThan(NMSE);
                    assertThat(ExternalTarget.nmse(cp.recurrentStates().toFloatArray(), g * st, f64.state(g), 0, st))
                            .as("%s state %d", at, g).isLessThan(NMSE);
                }
            }
            try (ReferenceDraftModel m = new ReferenceDraftModel(ModelLoader.load(d), new Kernels(mode, 1))) {
                for (int depth = 0; depth <= 3; depth++) {
                    SpeculativeDecoding.Request r = new SpeculativeDecoding.Request(new int[] {1, 2, 3}, RowSampler.GREEDY,
                            12, 0);
                    SpeculativeDecoding.Result res = new SpeculativeDecoding(t, m, SpeculativeDecoding.Options.of(
                            org.mtporacle.api.HiddenTap.POST_NORM, SpeculativeDecoding.KvPolicy.REBUILD, depth))
                            .run(List.of(r, new SpeculativeDecoding.Request(new int[] {7}, RowSampler.GREEDY, 9, 1)),
                                    null);
                    assertThat(res.outputs().get(0)).as("%s depth %d", shape.name(), depth)
                            .containsExactly(SpeculativeDecoding.plain(t, r));
                }
            }
        }
    }
}
