package org.mtporacle.mlx;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.mtporacle.conformance.target.chain.TargetChainGenerator;
import org.mtporacle.conformance.target.lockstep.TargetCampaign;
import org.mtporacle.conformance.target.lockstep.TargetFixture;
import org.mtporacle.conformance.target.lockstep.TargetLockstep;
import org.mtporacle.conformance.target.lockstep.TargetTolerance;
import org.mtporacle.reference.kernels.KernelMode;
import org.mtporacle.reference.kernels.Kernels;
import org.mtporacle.reference.target.ReferenceTarget;

import java.util.Arrays;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The data the {@code bf16} router bound of the target is derived from (conformance/SPEC.md "Deriving the target's
 * bf16 bounds"): MLX precision=native on the MoE targets in lockstep with every threshold off, every router near-tie's
 * gap recorded. A flip at margin {@code g} happens with probability {@code ½e^(−g/b)} (a Laplace error of the
 * boundary difference) over a margin density flat near 0, so flip gaps are exponential with scale {@code b}, whose
 * maximum-likelihood estimate is their mean; a campaign with {@code F} flips exceeds {@code x} with expected count
 * {@code F·e^(−x/b)}, so {@code x = b·ln(F / 1e-3)} for 1e-3 expected false failures. Off in CI: run with
 * {@code -Dmtp.mlx.routerCalibration=CHAINS}.
 */
class MlxTargetRouterCalibrationTest {
    private static final long SEED = 20261202L;
    private static final int CAMPAIGN = 10_000;

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"tiny-moe-target", "tiny-moe-next-target"})
    void recordsTheRouterGapsOfPrecisionNative(String fixture) {
        int chains = Integer.getInteger("mtp.mlx.routerCalibration", 0);
        Assumptions.assumeTrue(chains > 0, "a calibration run: set -Dmtp.mlx.routerCalibration=CHAINS");
        MlxBackend backend = MlxTestSupport.requireMlx();
        TargetFixture fx = TargetFixture.load(fixture, MlxTestSupport.fixtureCache());
        double[][] gaps = {new double[1024]};
        int[] n = {0};
        try (ReferenceTarget oracle = new ReferenceTarget(fx.target(), new Kernels(KernelMode.VECTOR, 1));
             MlxTarget subject = backend.loadTarget(fx.target(), Map.of("precision", "native", "device",
                     MlxTargetVerification.device()))) {
            TargetLockstep lockstep = new TargetLockstep(oracle, subject, TargetTolerance.calibration());
            lockstep.recordRouterGaps(g -> {
                if (n[0] == gaps[0].length) {
                    gaps[0] = Arrays.copyOf(gaps[0], 2 * n[0]);
                }
                gaps[0][n[0]++] = g;
            });
            TargetCampaign.Result r = TargetCampaign.run(new TargetCampaign.Settings(fixture, "mlx", chains, SEED,
                    TargetChainGenerator.Limits.defaults(), null, 0), lockstep);
            double[] g = Arrays.copyOf(gaps[0], n[0]);
            Arrays.sort(g);
            double mean = Arrays.stream(g).average().orElse(0);
            double flips = g.length * (double) CAMPAIGN / chains;
            System.out.printf("router calibration %s, MLX native (%s), %d chains seed %d: %d choices compared, %d "
                            + "differed (%.3g %%), gap median %.3g, 99th percentile %.3g, largest %.4g, mean %.4g; "
                            + "exponential scale b = %.4g, implied bound for %d chains (%.0f flips) at 1e-3: %.4g; "
                            + "largest token gap %.3g, logits/taps NMSE %.3g, state NMSE %.3g%n", fixture,
                    MlxTargetVerification.device(), chains, SEED, r.router().compared(), g.length,
                    100.0 * g.length / Math.max(1, r.router().compared()), quantile(g, 0.5), quantile(g, 0.99),
                    g.length == 0 ? 0 : g[g.length - 1], mean, mean, CAMPAIGN, flips,
                    mean * Math.log(flips / 1e-3), r.counts().gaps().maxDifferGap(), r.counts().maxOutputNmse(),
                    r.counts().maxStateNmse());
            assertThat(r.router().compared()).isPositive();
        }
    }

    private static double quantile(double[] sorted, double q) {
        return sorted.length == 0 ? 0 : sorted[(int) Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
    }
}
