package org.mtporacle.mlx;

import org.junit.jupiter.api.Test;
import org.mtporacle.api.HiddenTap;
import org.mtporacle.conformance.compare.ChainMedians;
import org.mtporacle.conformance.compare.NmseCalibration;
import org.mtporacle.conformance.compare.NmseHistogram;
import org.mtporacle.conformance.target.chain.TargetChainGenerator;
import org.mtporacle.conformance.target.lockstep.SpeculativeLoopCheck;
import org.mtporacle.conformance.target.lockstep.TargetCampaign;
import org.mtporacle.conformance.target.lockstep.TargetFixture;
import org.mtporacle.conformance.target.lockstep.TargetJudge;
import org.mtporacle.conformance.target.lockstep.TargetLockstep;
import org.mtporacle.conformance.target.lockstep.TargetTolerance;
import org.mtporacle.reference.ReferenceDraftModel;
import org.mtporacle.reference.kernels.KernelMode;
import org.mtporacle.reference.kernels.Kernels;
import org.mtporacle.reference.target.ReferenceTarget;
import org.mtporacle.reference.target.SpeculativeDecoding.KvPolicy;

import java.util.Locale;
import java.util.Map;

/**
 * A measurement, not part of the suite (run it by name: {@code -Dtest=MlxTypicalNmseMeasurement}): the per-chain
 * median NMSEs by kind of MLX precision=native on {@code -Dfixture=NAME} (default {@code tiny-wide-target}, which
 * {@code mtp conform --target} does not run), {@code -Dchains=N} target chains (150) as {@code mtp conform} draws them
 * for {@code -Dseed=S} (600), and {@code -Dloops=N} speculative-loop checks per tap and policy (10; the drafter's keys
 * and values among the kinds, also per comparison), with no bound applied; each kind with the bound its tail implies
 * for a 10,000-chain campaign (conformance/SPEC.md "A chain's typical NMSE").
 */
class MlxTypicalNmseMeasurement {
    @Test
    void measure() {
        MlxBackend backend = MlxTestSupport.requireMlx();
        String fixture = System.getProperty("fixture", "tiny-wide-target");
        int chains = Integer.getInteger("chains", 150);
        int loops = Integer.getInteger("loops", 10);
        long seed = Long.getLong("seed", 600);
        TargetFixture fx = TargetFixture.load(fixture, MlxTestSupport.fixtureCache());
        Map<String, String> options = Map.of("precision", "native", "device", MlxTargetVerification.device());
        try (ReferenceTarget oracle = new ReferenceTarget(fx.target(), new Kernels(KernelMode.VECTOR, 1));
             MlxTarget subject = backend.loadTarget(fx.target(), options);
             ReferenceDraftModel drafter = new ReferenceDraftModel(fx.drafter(), new Kernels(KernelMode.VECTOR, 1))) {
            TargetLockstep lockstep = new TargetLockstep(oracle, subject, TargetTolerance.calibration());
            TargetChainGenerator gen = new TargetChainGenerator(TargetChainGenerator.Limits.defaults());
            TargetJudge.Counts counts = new TargetJudge.Counts(0, 0, 0, 0, 0);
            for (int i = 0; i < chains; i++) {
                long s = TargetCampaign.chainSeed(seed, fixture, i);
                counts = counts.plus(lockstep.run(s, gen.generate(s)).counts());
            }
            print("mlx native target chains on " + fixture, chains, counts.nmse());
            SpeculativeLoopCheck.Engine engine = SpeculativeLoopCheck.of(subject, drafter);
            SpeculativeLoopCheck.Engine reference = SpeculativeLoopCheck.of(oracle, drafter);
            int vocab = fx.target().config().shape().vocabSize();
            TargetJudge.Counts loopCounts = new TargetJudge.Counts(0, 0, 0, 0, 0);
            int runs = 0;
            for (HiddenTap tap : HiddenTap.values()) {
                for (KvPolicy policy : KvPolicy.values()) {
                    for (int k = 0; k < loops; k++) {
                        long s = seed * 1000 + runs++;
                        TargetJudge j = new TargetJudge(TargetTolerance.calibration());
                        SpeculativeLoopCheck.check(engine, subject, reference, SpeculativeLoopCheck.requests(s, vocab),
                                SpeculativeLoopCheck.options(s, tap, policy), j);
                        loopCounts = loopCounts.plus(j.counts());
                    }
                }
            }
            print("mlx native loop checks on " + fixture, runs, loopCounts.nmse());
        }
    }

    private static void print(String what, int chains, Map<String, NmseHistogram> nmse) {
        nmse.forEach((kind, h) -> {
            if (kind.startsWith("drafter") && h.total() > 0) {
                System.out.printf(Locale.ROOT, "%s: %s: %d comparisons; p50 %.3g p90 %.3g p99 %.3g max %.3g%n", what,
                        kind, h.total(), h.quantile(0.5), h.quantile(0.9), h.quantile(0.99), h.max());
            }
            if (kind.startsWith(ChainMedians.PREFIX) && h.total() > 0) {
                double campaign = 10_000.0 * h.total() / chains;
                System.out.printf(Locale.ROOT, "%s: %s: %d of %d judged; p50 %.3g p99 %.3g max %.3g; implied bound "
                                + "%.3g for %.0f chains%n", what, kind, h.total(), chains, h.quantile(0.5),
                        h.quantile(0.99), h.max(), NmseCalibration.of(h).bound(campaign, 1e-3), campaign);
            }
        });
    }
}
