package org.mtporacle.mlx;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.mtporacle.api.MtpModel;
import org.mtporacle.conformance.Campaign;
import org.mtporacle.conformance.FixtureRecipe;
import org.mtporacle.conformance.chain.ChainGenerator;
import org.mtporacle.conformance.lockstep.Tolerance;
import org.mtporacle.reference.ReferenceBackend;
import org.mtporacle.reference.ReferenceDraftModel;
import org.mtporacle.reference.kernels.KernelMode;

import java.nio.file.Path;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/** Lockstep campaigns of the MLX backend against the reference (DESIGN "Conformance method"). */
class MlxLockstepTest {

    @ParameterizedTest(name = "{0} precision={1} tolerance={2}")
    @CsvSource({
            "tiny, f32, f32, 60",
            "tiny, native, bf16, 60",
            "tiny-q4, f32, f32, 60",
            "tiny-q4, native, bf16, 60",
            "small, f32, f32, 15",
            "small, native, bf16, 15",
    })
    void followsTheReferenceInLockstep(String fixture, String precision, String tolerance, int chains) {
        MlxBackend backend = MlxTestSupport.requireMlx();
        MtpModel model = FixtureRecipe.named(fixture).load(MlxTestSupport.fixtureCache());
        Map<String, String> options = Map.of("precision", precision, "device", "cpu");
        try (ReferenceDraftModel oracle = ReferenceBackend.load(model, KernelMode.VECTOR, 1);
             MlxDraftModel subject = backend.load(model, options)) {
            Campaign.Settings s = new Campaign.Settings(fixture, "mlx", options, Tolerance.named(tolerance), chains,
                    7, 0, 1, ChainGenerator.Limits.defaults(), Path.of("target", "mlx-traces"), 60);
            Campaign.Result r = Campaign.run(s, oracle, subject, (d, t, p) -> { });
            System.out.printf("mlx %s precision=%s tolerance=%s: %d/%d chains passed in %.2f s, %s, numerics: %s%n",
                    fixture, precision, tolerance, r.passed(), r.chainsRun(), r.seconds(), r.stats(), r.numerics());
            for (Campaign.Failure f : r.failures()) {
                System.out.println("  FAILURE seed " + Long.toHexString(f.chainSeed()) + ": " + f.divergence()
                        + "\n    shrunk: " + f.shrunk() + "\n    trace: " + f.trace());
            }
            assertThat(r.failures()).as("lockstep failures").isEmpty();
            assertThat(r.stats().comparedTokens()).isGreaterThan(0);
            assertThat(r.stats().comparedCheckpoints()).isGreaterThan(0);
        }
    }
}
