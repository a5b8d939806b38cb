package org.mtporacle.conformance.target.mutants;

import org.junit.jupiter.api.Test;
import org.mtporacle.api.HiddenTap;
import org.mtporacle.conformance.compare.ChainMedians;
import org.mtporacle.conformance.compare.NmseHistogram;
import org.mtporacle.conformance.target.chain.TargetChainGenerator;
import org.mtporacle.conformance.target.lockstep.SpeculativeLoopCheck;
import org.mtporacle.conformance.target.lockstep.TargetCampaign;
import org.mtporacle.conformance.target.lockstep.TargetJudge;
import org.mtporacle.conformance.target.lockstep.TargetLockstep;
import org.mtporacle.conformance.target.lockstep.TargetTolerance;
import org.mtporacle.reference.ReferenceDraftModel;
import org.mtporacle.reference.kernels.KernelMode;
import org.mtporacle.reference.kernels.Kernels;
import org.mtporacle.reference.target.ReferenceTarget;
import org.mtporacle.reference.target.SpeculativeDecoding.KvPolicy;
import org.mtporacle.reference.target.SpeculativeDecoding.Options;

import java.util.Locale;
import java.util.Map;

/**
 * A measurement, not part of the suite (run it by name: {@code -Dtest=TypicalNmseMeasurement}): the per-chain median
 * NMSEs by kind ({@code median.KIND}, chains of at least {@link TargetTolerance#TYPICAL_MIN_COMPARISONS} comparisons)
 * of the two mutants the per-comparison bf16 bounds miss, {@code QK_NORM_AFTER_ROPE} on {@code tiny-target} and
 * {@code tiny-wide-target} ({@code -Dchains=N}, 200 by default, seed 7 as {@link TargetMutantRuns} draws them) and
 * {@code KEEP_REBUILD_MIXED_UP} (20 loop runs per declared policy, with the drafter's K/V NMSEs per comparison), with
 * no bound applied: the data its bound on a chain's typical NMSE must sit under (conformance/SPEC.md "A chain's typical
 * NMSE").
 */
class TypicalNmseMeasurement {
    private static final int CHAINS = Integer.getInteger("chains", 200);
    private static final int LOOP_RUNS = 20;

    @Test
    void measure() {
        try (TargetMutantRuns runs = new TargetMutantRuns()) {
            for (String fixture : new String[] {"tiny-target", "tiny-wide-target"}) {
                TargetLockstep lockstep = new TargetLockstep(runs.oracle(fixture), new SimpleTarget(
                        runs.fixture(fixture).target(), TargetMutation.QK_NORM_AFTER_ROPE),
                        TargetTolerance.calibration());
                TargetChainGenerator gen = new TargetChainGenerator(TargetChainGenerator.Limits.defaults());
                TargetJudge.Counts counts = new TargetJudge.Counts(0, 0, 0, 0, 0);
                for (int i = 0; i < CHAINS; i++) {
                    long seed = TargetCampaign.chainSeed(TargetMutantRuns.SEED, fixture, i);
                    counts = counts.plus(lockstep.run(seed, gen.generate(seed)).counts());
                }
                print("QK_NORM_AFTER_ROPE on " + fixture, CHAINS, counts.nmse());
            }
            ReferenceTarget oracle = runs.oracle("tiny-target");
            try (ReferenceDraftModel drafter = new ReferenceDraftModel(runs.fixture("tiny-target").drafter(),
                    new Kernels(KernelMode.VECTOR, 1))) {
                SpeculativeLoopCheck.Engine reference = SpeculativeLoopCheck.of(oracle, drafter);
                SpeculativeLoopCheck.Engine mixedUp = (requests, d, seen) -> reference.run(requests, new Options(
                        d.tap(), d.policy() == KvPolicy.KEEP ? KvPolicy.REBUILD : KvPolicy.KEEP, d.depth(),
                        d.restore()), seen);
                int vocab = oracle.model().config().shape().vocabSize();
                for (KvPolicy declared : KvPolicy.values()) {
                    TargetJudge.Counts counts = new TargetJudge.Counts(0, 0, 0, 0, 0);
                    for (int run = 0; run < LOOP_RUNS; run++) {
                        long seed = TargetMutantRuns.SEED + run;
                        TargetJudge j = new TargetJudge(TargetTolerance.calibration());
                        SpeculativeLoopCheck.check(mixedUp, oracle, reference, SpeculativeLoopCheck.requests(seed,
                                vocab), SpeculativeLoopCheck.options(seed, HiddenTap.POST_NORM, declared), j);
                        counts = counts.plus(j.counts());
                    }
                    print("KEEP_REBUILD_MIXED_UP declared " + declared.label(), LOOP_RUNS, counts.nmse());
                }
            }
        }
    }

    /** Per median kind: chains judged, then the 1st, 5th, 50th percentiles and the largest per-chain median. */
    static void print(String what, int chains, Map<String, NmseHistogram> nmse) {
        nmse.forEach((kind, h) -> {
            if (kind.startsWith("drafter") && h.total() > 0) {
                System.out.printf(Locale.ROOT, "%s: %s: %d comparisons; p50 %.3g p90 %.3g p99 %.3g max %.3g%n", what,
                        kind, h.total(), h.quantile(0.5), h.quantile(0.9), h.quantile(0.99), h.max());
            }
            if (kind.startsWith(ChainMedians.PREFIX) && h.total() > 0) {
                System.out.printf(Locale.ROOT, "%s: %s: %d of %d chains judged; p1 %.3g p5 %.3g p50 %.3g max %.3g%n",
                        what, kind, h.total(), chains, h.quantile(0.01), h.quantile(0.05), h.quantile(0.5), h.max());
            }
        });
    }
}
