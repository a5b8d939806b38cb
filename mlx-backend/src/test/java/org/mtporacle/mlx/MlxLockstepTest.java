package org.mtporacle.mlx;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.Tolerance;
import org.mtporacle.conformance.Campaign;
import org.mtporacle.conformance.FixtureRecipe;
import org.mtporacle.conformance.chain.ChainGenerator;
import org.mtporacle.reference.ReferenceBackend;
import org.mtporacle.reference.ReferenceDraftModel;
import org.mtporacle.reference.kernels.KernelMode;

import java.nio.file.Path;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Lockstep campaigns of the MLX backend against the reference (DESIGN "Conformance method"): precision=f32 with the
 * F32 profile, precision=native (bf16) with the BF16 profile, both with greedy and seeded chains (seeded near-ties
 * allow a top-k/top-p boundary to move, {@code NearTie.seededGap}), and with {@code compile=on} (one-position forwards
 * through {@code mlx_compile}) on a few of the same cases.
 */
class MlxLockstepTest {

    @ParameterizedTest(name = "{0} precision={1} tolerance={2} stochasticRate={4} compile={5}")
    @CsvSource({
            "tiny, f32, f32, 80, 0.3, off",
            "tiny-q4, f32, f32, 60, 0.3, off",
            "small, f32, f32, 15, 0.3, off",
            "tiny, native, bf16, 80, 0.3, off",
            "tiny-q4, native, bf16, 60, 0.3, off",
            "small, native, bf16, 15, 0.3, off",
            "small-q4, native, bf16, 10, 0.3, off",
            "tiny, f32, f32, 25, 0.3, on",
            "tiny-q4, native, bf16, 25, 0.3, on",
            "tiny-moe, f32, f32, 15, 0.3, on",
    })
    void followsTheReferenceInLockstep(String fixture, String precision, String tolerance, int chains,
                                       double stochasticRate, String compile) {
        MlxBackend backend = MlxTestSupport.requireMlx();
        MtpModel model = FixtureRecipe.named(fixture).load(MlxTestSupport.fixtureCache());
        Map<String, String> options = Map.of("precision", precision, "device", "cpu", "compile", compile);
        try (ReferenceDraftModel oracle = ReferenceBackend.load(model, KernelMode.VECTOR, 1);
             MlxDraftModel subject = backend.load(model, options)) {
            ChainGenerator.Limits d = ChainGenerator.Limits.defaults();
            ChainGenerator.Limits limits = new ChainGenerator.Limits(d.maxActions(), d.maxRows(), d.maxDepth(),
                    d.maxPrefill(), d.badRate(), stochasticRate);
            Campaign.Settings s = new Campaign.Settings(fixture, "mlx", options, Tolerance.named(tolerance), chains,
                    7, 0, 1, limits, Path.of("target", "mlx-traces"), 60);
            Campaign.Result r = Campaign.run(s, oracle, subject, (x, t, p) -> { });
            System.out.printf("mlx %s precision=%s tolerance=%s compile=%s: %d/%d chains passed in %.2f s, %s, "
                    + "numerics: %s%n", fixture, precision, tolerance, compile, r.passed(), r.chainsRun(), r.seconds(),
                    r.stats(), r.numerics());
            for (Campaign.Failure f : r.failures()) {
                System.out.println("  FAILURE seed " + Long.toHexString(f.chainSeed()) + ": " + f.divergence()
                        + "\n    shrunk: " + f.shrunk() + "\n    trace: " + f.trace());
            }
            assertThat(r.failures()).as("lockstep failures").isEmpty();
            assertThat(r.stats().comparedTokens()).isGreaterThan(0);
            assertThat(r.stats().comparedCheckpoints()).isGreaterThan(0);
            assertThat(subject.block().traces() > 0).as("compiled parts traced").isEqualTo(compile.equals("on"));
        }
    }
}
