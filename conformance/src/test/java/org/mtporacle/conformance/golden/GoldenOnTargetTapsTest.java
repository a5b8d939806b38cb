package org.mtporacle.conformance.golden;

import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.mtporacle.api.HiddenTap;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.TargetModel;
import org.mtporacle.api.TargetOutput;
import org.mtporacle.api.TargetRows;
import org.mtporacle.api.Tolerance;
import org.mtporacle.conformance.FixtureRecipe;
import org.mtporacle.conformance.lockstep.TargetTaps;
import org.mtporacle.reference.ReferenceBackend;
import org.mtporacle.reference.ReferenceDraftModel;
import org.mtporacle.reference.kernels.KernelMode;
import org.mtporacle.reference.target.ReferenceTarget;

import java.nio.file.Path;
import java.util.Collections;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code golden record --contexts target}: the golden stores the reference target's taps of its own tokens as the
 * contexts, keeps its synthetic twin's tokens, and verifies on the reference like any golden (no target needed).
 */
class GoldenOnTargetTapsTest {
    private static final Path CACHE = Path.of("target", "fixture-cache");

    @TempDir
    Path dir;

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"lifecycle", "sampling"})
    void aGoldenOnTargetTapsHoldsTheTapsAndVerifies(String scenario) {
        FixtureRecipe fx = FixtureRecipe.named("tiny-target");
        MtpModel model = fx.load(CACHE);
        TargetModel targetModel = fx.loadTarget(CACHE);
        Path synthetic;
        Path taps;
        try (ReferenceTarget target = TargetTaps.reference(targetModel, KernelMode.SCALAR, 1)) {
            synthetic = GoldenScenarios.record(model, fx.name(), scenario, dir);
            taps = GoldenScenarios.record(model, fx.name(), scenario, dir, new TargetTaps(target, HiddenTap.POST_NORM));
        }
        assertThat(taps.getFileName().toString()).isEqualTo("tiny-target-" + scenario + "-tap-post.json");
        GoldenFiles.Golden g = GoldenFiles.read(taps);
        GoldenFiles.Golden twin = GoldenFiles.read(synthetic);
        assertThat(g.trace().options().contexts()).isEqualTo("tap");
        assertThat(g.trace().options().tap()).isEqualTo("post-norm");
        assertThat(g.trace().description()).contains("post-norm taps");
        assertThat(g.trace().steps()).hasSameSizeAs(twin.trace().steps());

        // the first prefill of cold rows: its context is an independent target's prefill of the same tokens
        GoldenTrace.Prefill first = g.trace().steps().stream().filter(GoldenTrace.Prefill.class::isInstance)
                .map(GoldenTrace.Prefill.class::cast).findFirst().orElseThrow();
        GoldenTrace.Prefill firstTwin = twin.trace().steps().stream().filter(GoldenTrace.Prefill.class::isInstance)
                .map(GoldenTrace.Prefill.class::cast).findFirst().orElseThrow();
        assertThat(first.tokens()).isDeepEqualTo(firstTwin.tokens());
        try (ReferenceTarget independent = TargetTaps.reference(fx.loadTarget(CACHE), KernelMode.SCALAR, 2);
             TargetRows rows = independent.openRows(Collections.nCopies(first.tokens().length, null))) {
            TargetOutput o = rows.prefill(HostTensor.ofIntRows(first.tokens()));
            assertThat(g.tensors().get(first.context()).contentEquals(o.taps(HiddenTap.POST_NORM))).isTrue();
        }
        assertThat(twin.tensors().get(firstTwin.context()).contentEquals(g.tensors().get(first.context())))
                .isFalse();

        try (ReferenceDraftModel reference = ReferenceBackend.load(model, KernelMode.SCALAR, 1)) {
            GoldenVerifier.Result r = GoldenVerifier.verify(g, reference, null, Tolerance.EXACT, (d, t) -> { });
            assertThat(r.ok()).as("%s", r.lines()).isTrue();
            assertThat(r.stepsRun()).isEqualTo(g.trace().steps().size());
        }
    }
}
