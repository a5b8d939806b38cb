package org.mtporacle.mlx;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.mtporacle.conformance.target.chain.TargetChainGenerator;
import org.mtporacle.conformance.target.lockstep.TargetCampaign;
import org.mtporacle.conformance.target.lockstep.TargetFixture;
import org.mtporacle.conformance.target.lockstep.TargetJudge;
import org.mtporacle.conformance.target.lockstep.TargetLockstep;
import org.mtporacle.conformance.target.lockstep.TargetTolerance;
import org.mtporacle.reference.kernels.KernelMode;
import org.mtporacle.reference.kernels.Kernels;
import org.mtporacle.reference.target.ReferenceTarget;

import java.nio.file.Path;
import java.util.Arrays;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Target lockstep campaigns of the MLX target against the reference target (spec §13.3) on MLX's CPU: precision=f32
 * under {@code f32}, precision=native under {@link MlxTargetTolerances#NATIVE}, and each with {@code compile=on} (dense GDN layers
 * through {@code mlx_compile}). CI runs a few chains per case; {@code -Dmtp.mlx.targetChains=1000} runs the full
 * campaign (and {@code MTP_MLX_DEVICE=gpu} moves it to the GPU, as {@code scripts/mlx-gpu-check} does).
 */
class MlxTargetLockstepTest {
    private static final long SEED = 20261201L;

    @ParameterizedTest(name = "{0} precision={1} tolerance={2} compile={4}")
    @CsvSource({
            "tiny-target, f32, f32, 5, off",
            "tiny-target, native, bf16-target, 5, off",
            "tiny-target, f32, f32, 2, on",
            "tiny-target, native, bf16-target, 2, on",
            "tiny-moe-target, f32, f32, 2, off",
            "tiny-moe-target, native, bf16-target, 2, off",
    })
    void followsTheReferenceInLockstep(String fixture, String precision, String tolerance, int ciChains,
                                       String compile) {
        MlxBackend backend = MlxTestSupport.requireMlx();
        int chains = Integer.getInteger("mtp.mlx.targetChains", ciChains);
        TargetFixture fx = TargetFixture.load(fixture, MlxTestSupport.fixtureCache());
        Map<String, String> options = Map.of("precision", precision, "device", MlxTargetVerification.device(),
                "compile", compile);
        TargetTolerance tol = MlxTargetTolerances.named(tolerance);
        long start = System.nanoTime();
        try (ReferenceTarget oracle = new ReferenceTarget(fx.target(), new Kernels(KernelMode.VECTOR, 1));
             MlxTarget subject = backend.loadTarget(fx.target(), options)) {
            TargetCampaign.Result r = TargetCampaign.run(new TargetCampaign.Settings(fixture, "mlx", chains, SEED,
                    TargetChainGenerator.Limits.defaults(), Path.of("target", "mlx-target-traces"), 200),
                    new TargetLockstep(oracle, subject, tol));
            TargetJudge.Counts c = r.counts();
            System.out.printf("mlx target %s precision=%s compile=%s under %s: %d/%d chains passed in %.1f s, %d tokens "
                            + "compared (%d near-ties), %d row states, max logits/taps NMSE %.3g, max state NMSE %.3g, "
                            + "%d bad calls, matched accepts by count %s; numerics: %s%n", fixture, precision, compile,
                    tol.describe(), r.passed() ? r.chainsRun() : r.chainsRun() - 1, chains,
                    (System.nanoTime() - start) / 1e9, c.comparedTokens(), c.nearTies(), c.comparedStates(),
                    c.maxOutputNmse(), c.maxStateNmse(), r.badCalls(),
                    Arrays.toString(Arrays.copyOf(r.matchedAccepts(), 7)), subject.numerics());
            if (!r.passed()) {
                TargetCampaign.Failure f = r.failure();
                System.out.println("  FAILURE seed " + Long.toHexString(f.seed()) + ": " + f.divergence()
                        + "\n    shrunk: " + f.shrunk() + "\n    trace: " + f.trace());
            }
            assertThat(r.failure()).as("lockstep failure").isNull();
            assertThat(c.comparedTokens()).isPositive();
            assertThat(c.comparedStates()).isPositive();
            assertThat(subject.traces() > 0).as("compiled layers traced").isEqualTo(compile.equals("on"));
        }
    }
}
