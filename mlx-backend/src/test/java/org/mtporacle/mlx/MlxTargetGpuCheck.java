package org.mtporacle.mlx;

import org.junit.platform.launcher.Launcher;
import org.junit.platform.launcher.core.LauncherDiscoveryRequestBuilder;
import org.junit.platform.launcher.core.LauncherFactory;
import org.junit.platform.launcher.listeners.SummaryGeneratingListener;
import org.junit.platform.launcher.listeners.TestExecutionSummary;
import org.mtporacle.conformance.target.chain.TargetChainGenerator;
import org.mtporacle.conformance.target.lockstep.TargetCampaign;
import org.mtporacle.conformance.target.lockstep.TargetFixture;
import org.mtporacle.conformance.target.lockstep.TargetJudge;
import org.mtporacle.conformance.target.lockstep.TargetLockstep;
import org.mtporacle.conformance.target.lockstep.TargetTolerance;
import org.mtporacle.reference.kernels.KernelMode;
import org.mtporacle.reference.kernels.Kernels;
import org.mtporacle.reference.target.ReferenceTarget;

import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Map;

import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;

/**
 * The MLX target's checks outside Maven, for a machine with only a JDK and the mtp jar (scripts/mlx-gpu-check, part
 * {@code target}), with this class's folder on the class path:
 * <pre>
 *   tck                                       the target TCK, both profiles (MTP_MLX_DEVICE picks the device)
 *   campaign PRECISION CHAINS SEED [DEVICE [SECONDS]]
 *        target lockstep campaigns on tiny-target (f32 → f32, native → bf16-target) in batches of 25 chains (batch
 *        k from seed SEED·1000 + k) until CHAINS ran or SECONDS passed; one line of counts; exit 1 on a divergence
 * </pre>
 */
public final class MlxTargetGpuCheck {
    private MlxTargetGpuCheck() {
    }

    public static void main(String[] args) {
        int code = switch (args.length == 0 ? "" : args[0]) {
            case "tck" -> tck();
            case "campaign" -> campaign(args[1], Integer.parseInt(args[2]), Long.parseLong(args[3]),
                    args.length > 4 ? args[4] : "gpu", args.length > 5 ? Double.parseDouble(args[5]) : 1e9);
            default -> {
                System.err.println("usage: tck | campaign PRECISION CHAINS SEED [DEVICE [SECONDS]]");
                yield 3;
            }
        };
        System.exit(code);
    }

    private static int tck() {
        Launcher launcher = LauncherFactory.create();
        SummaryGeneratingListener listener = new SummaryGeneratingListener();
        launcher.execute(LauncherDiscoveryRequestBuilder.request().selectors(
                selectClass(MlxF32TargetVerificationTest.class), selectClass(MlxNativeTargetVerificationTest.class))
                .build(), listener);
        TestExecutionSummary s = listener.getSummary();
        s.printTo(new PrintWriter(System.out, true));
        s.printFailuresTo(new PrintWriter(System.out, true), 20);
        System.out.printf("target tck: %d tests, %d passed, %d failed, %d skipped (aborted)%n", s.getTestsFoundCount(),
                s.getTestsSucceededCount(), s.getTestsFailedCount(), s.getTestsAbortedCount() + s.getTestsSkippedCount());
        return s.getTestsFailedCount() == 0 && s.getTestsSucceededCount() > 0 ? 0 : 1;
    }

    private static int campaign(String precision, int chains, long seed, String device, double seconds) {
        String fixture = "tiny-target";
        TargetFixture fx = TargetFixture.load(fixture, Path.of("target", "fixture-cache"));
        TargetTolerance tol = precision.equals("f32") ? TargetTolerance.F32 : MlxTargetTolerances.NATIVE;
        long start = System.nanoTime();
        try (ReferenceTarget oracle = new ReferenceTarget(fx.target(), new Kernels(KernelMode.VECTOR, 1));
             MlxTarget subject = new MlxBackend().loadTarget(fx.target(), Map.of("precision", precision, "device",
                     device))) {
            TargetLockstep lockstep = new TargetLockstep(oracle, subject, tol);
            TargetJudge.Counts c = new TargetJudge.Counts(0, 0, 0, 0, 0);
            long bad = 0;
            long[] matched = new long[7];
            int passed = 0;
            TargetCampaign.Failure failure = null;
            for (int k = 0; passed < chains && failure == null && (System.nanoTime() - start) / 1e9 < seconds; k++) {
                int n = Math.min(25, chains - passed);
                TargetCampaign.Result r = TargetCampaign.run(new TargetCampaign.Settings(fixture, "mlx", n,
                        seed * 1000 + k, TargetChainGenerator.Limits.defaults(), Path.of("mlx-target-traces"), 200),
                        lockstep);
                c = c.plus(r.counts());
                bad += r.badCalls();
                for (int i = 0; i < matched.length; i++) {
                    matched[i] += r.matchedAccepts()[i];
                }
                passed += r.passed() ? r.chainsRun() : r.chainsRun() - 1;
                failure = r.failure();
            }
            System.out.printf("target campaign %s precision=%s seeds %d000+ under %s: %d chains passed%s in %.0f s, %d "
                            + "tokens compared (%d near-ties), %d row states, max logits/taps NMSE %.3g, max state "
                            + "NMSE %.3g, %d bad calls, matched accepts by count %s; %s%n", fixture, precision, seed,
                    tol.describe(), passed, failure == null ? "" : ", then one diverged",
                    (System.nanoTime() - start) / 1e9, c.comparedTokens(), c.nearTies(), c.comparedStates(),
                    c.maxOutputNmse(), c.maxStateNmse(), bad, Arrays.toString(matched), subject.numerics());
            if (failure != null) {
                System.out.println("  FAILURE seed " + Long.toHexString(failure.seed()) + ": " + failure.divergence()
                        + "\n    shrunk: " + failure.shrunk() + "\n    trace: " + failure.trace());
                return 1;
            }
            return 0;
        }
    }
}
