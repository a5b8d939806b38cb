package org.mtporacle.mlx;

import org.junit.jupiter.api.Assumptions;
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

import java.util.Map;

/**
 * Not a check: measures how far the MLX backend really is from the reference (largest near-tie gaps, KV/hidden NMSE)
 * under a permissive profile, to calibrate tolerance profiles. Runs only with {@code -Dmtp.mlx.measure=true}.
 */
class MlxNumericsMeasurement {
    private static final Tolerance PERMISSIVE = new Tolerance("measure", 1.0, 1.0, 1.0);

    @ParameterizedTest(name = "{0} precision={1} stochasticRate={3}")
    @CsvSource({
            "tiny, native, 200, 0.0", "tiny-q4, native, 200, 0.0", "small, native, 40, 0.0",
            "small-q4, native, 40, 0.0", "tiny, native, 200, 0.3", "tiny-q4, native, 200, 0.3",
            "tiny, f32, 200, 0.3", "tiny-q4, f32, 200, 0.3", "small, f32, 40, 0.3", "small-q4, f32, 40, 0.3",
    })
    void measure(String fixture, String precision, int chains, double stochasticRate) {
        Assumptions.assumeTrue(Boolean.getBoolean("mtp.mlx.measure"), "measurement: set -Dmtp.mlx.measure=true");
        MlxBackend backend = MlxTestSupport.requireMlx();
        MtpModel model = FixtureRecipe.named(fixture).load(MlxTestSupport.fixtureCache());
        Map<String, String> options = Map.of("precision", precision, "device", "cpu");
        ChainGenerator.Limits d = ChainGenerator.Limits.defaults();
        ChainGenerator.Limits limits = new ChainGenerator.Limits(d.maxActions(), d.maxRows(), d.maxDepth(),
                d.maxPrefill(), d.badRate(), stochasticRate);
        try (ReferenceDraftModel oracle = ReferenceBackend.load(model, KernelMode.VECTOR, 1);
             MlxDraftModel subject = backend.load(model, options)) {
            Campaign.Settings s = new Campaign.Settings(fixture, "mlx", options, PERMISSIVE, chains, 7, 0, 1,
                    limits, null, 0);
            Campaign.Result r = Campaign.run(s, oracle, subject, (x, t, p) -> { });
            System.out.printf("MEASURE %s precision=%s stochastic=%.1f: %d/%d chains within the permissive profile,"
                    + " %s%n", fixture, precision, stochasticRate, r.passed(), r.chainsRun(), r.stats());
            for (Campaign.Failure f : r.failures()) {
                System.out.println("  " + f.divergence().message());
            }
        }
    }
}
