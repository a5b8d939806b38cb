package org.mtporacle.mlx;

import org.junit.jupiter.api.Test;
import org.mtporacle.api.LinearWeight;
import org.mtporacle.api.MlpWeights;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.Tolerance;
import org.mtporacle.conformance.FixtureRecipe;
import org.mtporacle.conformance.golden.GoldenFiles;
import org.mtporacle.conformance.golden.GoldenVerifier;
import org.mtporacle.mlx.handle.MlxArray;
import org.mtporacle.mlx.handle.MlxOps;
import org.mtporacle.reference.ReferenceBackend;
import org.mtporacle.reference.ReferenceDraftModel;
import org.mtporacle.reference.kernels.KernelMode;

import java.nio.file.Path;
import java.util.Map;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The MoE gather path (spec §12.3 on MLX): device top-k keeps the tie rule, {@code gather_mm} / {@code gather_qmm}
 * agree with f64 products computed here, bad arguments stop in Java, and both MoE paths replay the committed MoE
 * goldens with every router choice held to the trace.
 */
class MlxMoeGatherTest {
    private static final Path GOLDEN = Path.of(System.getProperty("mtp.repo.root", "..")).resolve("golden");


    @Test
    void deviceTopKRanksByProbabilityAndBreaksExactTiesTowardsTheLowerIndex() {
        // row 0: experts 1, 3 and 6 tie at the top, 0 and 5 tie below; row 1: all equal
        float[] p = {0.1f, 0.2f, 0.05f, 0.2f, 0.0f, 0.1f, 0.2f, 0.15f,
                     0.125f, 0.125f, 0.125f, 0.125f, 0.125f, 0.125f, 0.125f, 0.125f};
        MlxTestSupport.onMlx(ops -> {
            MlxOps.TopK top = ops.topK(ops.fromFloats(p, 2, 8), 5);
            assertThat(top.range()).isEqualTo(8);
            assertThat(ops.toInts(top.indices())).containsExactly(1, 3, 6, 7, 0, 0, 1, 2, 3, 4);
        });
    }

    @Test
    void gatherMmMatchesF64ProductsOfTheChosenExperts() {
        int n = 3;
        int k = 2;
        int e = 4;
        int in = 32;
        int out = 5;
        SplittableRandom rnd = new SplittableRandom(7);
        float[] x = values(rnd, n * in);
        float[] w = values(rnd, e * out * in); // [E, out, in]
        float[] p = {0.1f, 0.4f, 0.3f, 0.2f, 0.7f, 0.1f, 0.1f, 0.1f, 0.05f, 0.05f, 0.6f, 0.3f};
        int[][] chosen = {{1, 2}, {0, 1}, {2, 3}}; // the ranking of p, ties to the lower index
        MlxTestSupport.onMlx(ops -> {
            MlxOps.TopK top = ops.topK(ops.fromFloats(p, n, e), k);
            MlxArray wt = ops.transpose(ops.fromFloats(w, e, out, in), 0, 2, 1);
            float[] y = ops.toFloats(ops.gatherMm(ops.fromFloats(x, n, 1, 1, in), wt, top)); // [n, k, 1, out]
            for (int r = 0; r < n; r++) {
                for (int j = 0; j < k; j++) {
                    for (int o = 0; o < out; o++) {
                        double want = 0;
                        for (int i = 0; i < in; i++) {
                            want += (double) x[r * in + i] * w[(chosen[r][j] * out + o) * in + i];
                        }
                        assertThat((double) y[(r * k + j) * out + o]).as("row %d slot %d out %d", r, j, o)
                                .isCloseTo(want, org.assertj.core.data.Offset.offset(1e-5 * (1 + Math.abs(want))));
                    }
                }
            }
        });
    }

    @Test
    void gatherArgumentsAreCheckedBeforeNativeCode() {
        MlxTestSupport.onMlx(ops -> {
            MlxOps.TopK top = ops.topK(ops.fromFloats(new float[8], 2, 4), 2);
            MlxArray w = ops.fromFloats(new float[4 * 8 * 3], 4, 8, 3);
            MlxArray x = ops.fromFloats(new float[2 * 8], 2, 1, 1, 8);
            invalid(() -> ops.gatherMm(x, ops.fromFloats(new float[3 * 8 * 3], 3, 8, 3), top), "expected [4, K, P]");
            invalid(() -> ops.gatherMm(ops.fromFloats(new float[2 * 7], 2, 1, 1, 7), w, top), "[N, 1 or J, M, 8]");
            invalid(() -> ops.gatherMm(ops.fromFloats(new float[3 * 8], 3, 1, 1, 8), w, top), "indices [2, 2]");
            invalid(() -> ops.gatherQmm(x, ops.fromFloats(new float[4 * 3], 4, 3, 1), w, null, top, 32, 4),
                    "expected uint32");
            invalid(() -> ops.topK(ops.fromFloats(new float[8], 8), 2), "expected [N, E]");
            invalid(() -> ops.topK(ops.fromFloats(new float[8], 2, 4), 5), "k = 5 outside [1, 4]");
        });
    }

    private static void invalid(Runnable r, String part) {
        assertThatThrownBy(r::run).isInstanceOfSatisfying(MtpException.class,
                e -> assertThat(e.kind()).isEqualTo(MtpException.Kind.INVALID_ARGUMENT)).hasMessageContaining(part);
    }

    @Test
    void bothPathsReplayTheMoeGoldensWithEveryRouterChoiceCompared() {
        MlxBackend backend = MlxTestSupport.requireMlx();
        for (String name : new String[] {"tiny-moe", "tiny-moe-q4"}) {
            MtpModel model = FixtureRecipe.named(name).load(MlxTestSupport.fixtureCache());
            var golden = GoldenFiles.read(GOLDEN.resolve(name + "-lifecycle.json"));
            for (String path : new String[] {"gather", "per-expert"}) {
                try (ReferenceDraftModel ref = ReferenceBackend.load(model, KernelMode.SCALAR, 1);
                     MlxDraftModel mlx = backend.load(model, Map.of("precision", "f32", "device", "cpu", "moe",
                             path))) {
                    assertThat(mlx.numerics()).contains("moe=" + path);
                    GoldenVerifier.Result r = GoldenVerifier.verify(golden, ref, mlx, Tolerance.F32, (d, t) -> { });
                    assertThat(r.ok()).as("%s %s: %s", name, path, r.findings()).isTrue();
                    // the reference's and the backend's choices, every one the trace records
                    assertThat(r.router().compared()).as("%s %s", name, path).isEqualTo(2 * 98);
                }
            }
        }
    }

    @Test
    void theMoeOptionIsCheckedAndGatherIsRefusedWhereItCannotRun() {
        MlxBackend backend = MlxTestSupport.requireMlx();
        MtpModel model = FixtureRecipe.named("tiny-moe-q4").load(MlxTestSupport.fixtureCache());
        assertThatThrownBy(() -> backend.load(model, Map.of("moe", "stacked"))).isInstanceOfSatisfying(
                MtpException.class, e -> assertThat(e.kind()).isEqualTo(MtpException.Kind.INVALID_ARGUMENT))
                .hasMessageContaining("moe = 'stacked', expected gather or per-expert");
        MlpWeights.Moe moe = (MlpWeights.Moe) model.weights().mlp();
        // quantized experts on CUDA with MLX 0.31 (no gather_qmm kernel there): the default falls back, gather is refused
        assertThat(MlxMoe.choose(moe, null, true, "0.31.1")).isEqualTo(MlxMoe.Path.PER_EXPERT);
        assertThatThrownBy(() -> MlxMoe.choose(moe, MlxMoe.Path.GATHER, true, "0.31.1"))
                .isInstanceOfSatisfying(MtpException.class,
                        e -> assertThat(e.kind()).isEqualTo(MtpException.Kind.UNAVAILABLE))
                .hasMessageContaining("gather_qmm");
        assertThat(MlxMoe.choose(moe, null, false, "0.31.1")).isEqualTo(MlxMoe.DEFAULT);
        assertThat(MlxMoe.choose(moe, MlxMoe.Path.PER_EXPERT, false, "0.31.1")).isEqualTo(MlxMoe.Path.PER_EXPERT);
        // dense experts on CUDA: gather_mm's one-row kernel needs widths that are multiples of 32 (H 48 is not)
        MlpWeights.Moe odd = denseMoe(48, 32);
        assertThat(MlxMoe.choose(odd, null, true, "0.31.1")).isEqualTo(MlxMoe.Path.PER_EXPERT);
        assertThatThrownBy(() -> MlxMoe.choose(odd, MlxMoe.Path.GATHER, true, "0.31.1"))
                .isInstanceOfSatisfying(MtpException.class,
                        e -> assertThat(e.kind()).isEqualTo(MtpException.Kind.UNAVAILABLE))
                .hasMessageContaining("hidden size (48)");
        assertThat(MlxMoe.choose(odd, null, false, "0.31.1")).isEqualTo(MlxMoe.Path.GATHER);
        assertThat(MlxMoe.choose(denseMoe(64, 32), null, true, "0.31.1")).isEqualTo(MlxMoe.Path.GATHER);
    }

    /** Four dense experts of width {@code ie} on hidden size {@code h}, top-2, with a shared expert. */
    private static MlpWeights.Moe denseMoe(int h, int ie) {
        java.util.function.BiFunction<Integer, Integer, LinearWeight> lin = (o, i) -> new LinearWeight.Dense(
                org.mtporacle.api.HostTensor.ofFloats(new float[o * i], o, i));
        java.util.List<MlpWeights.Dense> experts = new java.util.ArrayList<>();
        for (int e = 0; e < 4; e++) {
            experts.add(new MlpWeights.Dense(lin.apply(ie, h), lin.apply(ie, h), lin.apply(h, ie)));
        }
        return new MlpWeights.Moe(lin.apply(4, h), experts, new MlpWeights.Dense(lin.apply(ie, h), lin.apply(ie, h),
                lin.apply(h, ie)), lin.apply(1, h), 2, true);
    }

    private static float[] values(SplittableRandom rnd, int n) {
        float[] v = new float[n];
        for (int i = 0; i < n; i++) {
            v[i] = (float) (rnd.nextDouble() * 2 - 1);
        }
        return v;
    }
}
