package org.mtporacle.conformance.target.mutants;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.mtporacle.api.HiddenTap;
import org.mtporacle.conformance.target.TinyTarget;
import org.mtporacle.conformance.target.chain.TargetChainGenerator;
import org.mtporacle.conformance.target.lockstep.SpeculativeLoopCheck;
import org.mtporacle.conformance.target.lockstep.TargetCampaign;
import org.mtporacle.conformance.target.lockstep.TargetChainOutcome;
import org.mtporacle.conformance.target.lockstep.TargetDivergence;
import org.mtporacle.conformance.target.lockstep.TargetLockstep;
import org.mtporacle.conformance.target.lockstep.TargetTolerance;
import org.mtporacle.conformance.target.trace.TargetChainTrace;
import org.mtporacle.conformance.target.trace.TargetTraceFiles;
import org.mtporacle.reference.ReferenceDraftModel;
import org.mtporacle.reference.kernels.KernelMode;
import org.mtporacle.reference.kernels.Kernels;
import org.mtporacle.reference.target.ReferenceTarget;
import org.mtporacle.reference.target.SpeculativeDecoding.KvPolicy;
import org.mtporacle.reference.target.SpeculativeDecoding.Options;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The kit proves it catches the real bugs of target rollback (research/gdn-anchors.md §2): each mutant of the
 * standalone {@link SimpleTarget} fails target lockstep with a counterexample shrunk to at most 10 actions, written as
 * a trace that replays to the same failure; the loop-level mutant (an engine declaring one drafter KV policy and
 * running the other) fails the speculative-loop check. Each prints the chains it took and the shrunk length.
 */
class TargetMutantsAreCaughtTest {
    private static final int MAX_CHAINS = 200;
    private static final int MAX_SHRUNK_ACTIONS = 10;
    private static final long SEED = 7;
    private static ReferenceTarget oracle;

    @BeforeAll
    static void load() {
        oracle = TinyTarget.reference();
    }

    @AfterAll
    static void close() {
        oracle.close();
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(value = TargetMutation.class, names = {"NONE", "KEEP_REBUILD_MIXED_UP"},
            mode = EnumSource.Mode.EXCLUDE)
    void everyRowMutantIsCaughtWithAShortReplayableCounterexample(TargetMutation mutation) throws Exception {
        Path traces = Files.createTempDirectory("target-mutant-traces");
        long start = System.nanoTime();
        try (SimpleTarget mutant = new SimpleTarget(TinyTarget.fixture().target(), mutation)) {
            TargetLockstep lockstep = new TargetLockstep(oracle, mutant, TargetTolerance.F32);
            TargetCampaign.Result r = TargetCampaign.run(new TargetCampaign.Settings("tiny-target",
                    "simple-" + mutation.name().toLowerCase(), MAX_CHAINS, SEED,
                    TargetChainGenerator.Limits.defaults(), traces, 400), lockstep);
            Duration took = Duration.ofNanos(System.nanoTime() - start);
            assertThat(r.failure()).as("%s must be caught within %d chains", mutation, MAX_CHAINS).isNotNull();
            TargetCampaign.Failure f = r.failure();
            assertThat(f.shrunk().size()).as("%s shrunk to %s", mutation, f.shrunk())
                    .isLessThanOrEqualTo(MAX_SHRUNK_ACTIONS);

            TargetChainTrace trace = TargetTraceFiles.read(f.trace());
            assertThat(trace.actions()).isEqualTo(f.shrunk());
            TargetChainOutcome replay = lockstep.run(trace.seed(), trace.actions());
            assertThat(replay.passed()).as("the trace replays to a failure").isFalse();
            assertThat(replay.divergence().category()).isEqualTo(f.divergence().category());
            System.out.printf("%-26s caught after %3d chain(s): %-12s shrunk %2d -> %2d actions (%3d attempts), %5d ms:"
                    + " %s%n", mutation, f.chainsRun(), f.divergence().kind(), f.originalLength(), f.shrunk().size(),
                    f.shrinkAttempts(), took.toMillis(), f.divergence().message());
            System.out.println("    " + f.shrunk().stream().map(a -> a.describe()).toList());
        }
    }

    /**
     * Keep vs rebuild mixed up lives in the loop, not in the rows: both policies keep speculative == plain, so only
     * the acceptance, compared with the reference's loop under the declared policy, shows it.
     */
    @Test
    void anEngineRunningTheOtherKvPolicyThanItDeclaresIsCaught() {
        try (ReferenceDraftModel drafter = new ReferenceDraftModel(TinyTarget.fixture().drafter(),
                new Kernels(KernelMode.VECTOR, 1))) {
            SpeculativeLoopCheck.Engine reference = SpeculativeLoopCheck.of(oracle, drafter);
            SpeculativeLoopCheck.Engine mixedUp = (requests, declared, seen) -> reference.run(requests, new Options(
                    declared.tap(), declared.policy() == KvPolicy.KEEP ? KvPolicy.REBUILD : KvPolicy.KEEP,
                    declared.depth(), declared.restore()), seen);
            int vocab = oracle.model().config().shape().vocabSize();
            for (KvPolicy declared : KvPolicy.values()) {
                TargetDivergence d = null;
                int runs = 0;
                while (d == null && runs < 20) {
                    long seed = SEED + runs++;
                    Options o = SpeculativeLoopCheck.options(seed, HiddenTap.POST_NORM, declared);
                    var requests = SpeculativeLoopCheck.requests(seed, vocab);
                    assertThat(SpeculativeLoopCheck.check(reference, oracle, reference, requests, o,
                            TargetTolerance.EXACT)).isNull();
                    d = SpeculativeLoopCheck.check(mixedUp, oracle, reference, requests, o, TargetTolerance.F32);
                }
                assertThat(d).as("declared %s, ran the other", declared).isNotNull();
                assertThat(d.message()).containsAnyOf("accepted per round", "the drafter's");
                System.out.printf("%-26s caught after %3d loop run(s) (declared %s): %s%n", "KEEP_REBUILD_MIXED_UP",
                        runs, declared.label(), d.message());
            }
        }
    }
}
