package org.mtporacle.mlx;

import org.junit.jupiter.api.Test;
import org.mtporacle.api.DraftSampling;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.MtpModel;
import org.mtporacle.conformance.FixtureRecipe;
import org.mtporacle.conformance.chain.ChainData;
import org.mtporacle.mlx.handle.MlxArray;
import org.mtporacle.mlx.handle.MlxDiscovery;
import org.mtporacle.mlx.handle.MlxLibrary;

import java.util.Collections;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** A native failure inside a call poisons the group (spec §9.2); device and discovery choices. */
class MlxPoisonTest {

    @Test
    void aNativeFailureMidCallPoisonsTheGroupAndLaterCallsSaySo() {
        MlxBackend backend = MlxTestSupport.requireMlx();
        MtpModel model = FixtureRecipe.named("tiny").load(MlxTestSupport.fixtureCache());
        try (MlxDraftModel mlx = backend.load(model, Map.of("device", "cpu"));
             MlxDraftRows rows = (MlxDraftRows) mlx.openRows(Collections.nCopies(2, null))) {
            ChainData.PrefillArgs p = ChainData.prefill(3, 2, 4, model.config().vocabSize(),
                    model.config().hiddenSize());
            rows.prefill(p.tokens(), p.context());
            assertThatThrownBy(() -> rows.device("draft", ops -> {
                MlxArray a = ops.fromFloats(new float[6], 2, 3);
                ops.eval(ops.matmul(a, a)); // a shape error only MLX detects
            })).isInstanceOfSatisfying(MtpException.class,
                    e -> assertThat(e.kind()).isEqualTo(MtpException.Kind.BACKEND_FAILURE));
            assertThatThrownBy(() -> rows.draft(new int[] {1, 2}, 1, new long[2], DraftSampling.greedy(2)))
                    .isInstanceOfSatisfying(MtpException.class, e -> {
                        assertThat(e.kind()).isEqualTo(MtpException.Kind.ILLEGAL_STATE);
                        assertThat(e.getMessage()).contains("poisoned").contains("mlx_matmul failed");
                    });
            assertThatThrownBy(() -> rows.capture(0)).isInstanceOfSatisfying(MtpException.class,
                    e -> assertThat(e.kind()).isEqualTo(MtpException.Kind.ILLEGAL_STATE));
        }
    }

    @Test
    void aGpuRequestOnACpuOnlyLibraryIsUnavailableAndAutoFallsBackToCpu() {
        MlxBackend backend = MlxTestSupport.requireMlx();
        MlxLibrary lib = MlxLibrary.load(MlxDiscovery.fromEnvironment());
        MtpModel model = FixtureRecipe.named("tiny").load(MlxTestSupport.fixtureCache());
        if (lib.hasGpu()) {
            System.out.println("GPU present: the CPU-only branch is not exercised here");
            return;
        }
        assertThatThrownBy(() -> backend.load(model, Map.of("device", "gpu"))).isInstanceOfSatisfying(
                MtpException.class, e -> assertThat(e.kind()).isEqualTo(MtpException.Kind.UNAVAILABLE));
        try (MlxDraftModel auto = backend.load(model, Map.of())) {
            assertThat(auto.numerics()).startsWith("mlx cpu bf16");
        }
    }

    @Test
    void anExplicitPathWinsOverTheSearchDirectories() {
        MlxTestSupport.requireMlx();
        java.nio.file.Path loaded = MlxLibrary.loadedPath();
        MlxDiscovery d = new MlxDiscovery(loaded, "-Dmtp.mlx.library", List.of(java.nio.file.Path.of("target")));
        assertThat(d.locate()).isEqualTo(loaded);
    }
}
