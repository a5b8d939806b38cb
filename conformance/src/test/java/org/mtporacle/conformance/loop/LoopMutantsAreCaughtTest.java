package org.mtporacle.conformance.loop;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.mtporacle.api.HiddenTap;
import org.mtporacle.api.Tolerance;
import org.mtporacle.conformance.chain.ChainGenerator;
import org.mtporacle.conformance.lockstep.ChainOutcome;
import org.mtporacle.conformance.lockstep.Lockstep;
import org.mtporacle.conformance.lockstep.TargetTaps;
import org.mtporacle.conformance.loop.chain.LoopAction;
import org.mtporacle.conformance.loop.chain.LoopChainGenerator;
import org.mtporacle.conformance.loop.lockstep.LoopCampaign;
import org.mtporacle.conformance.loop.lockstep.LoopChainOutcome;
import org.mtporacle.conformance.loop.lockstep.LoopLockstep;
import org.mtporacle.conformance.loop.trace.LoopChainTrace;
import org.mtporacle.conformance.loop.trace.LoopTraceFiles;
import org.mtporacle.conformance.mutants.Mutation;
import org.mtporacle.conformance.mutants.SimpleBackend;
import org.mtporacle.conformance.target.TinyTarget;
import org.mtporacle.conformance.target.chain.TargetChainGenerator;
import org.mtporacle.conformance.target.lockstep.TargetChainOutcome;
import org.mtporacle.conformance.target.lockstep.TargetLockstep;
import org.mtporacle.conformance.target.lockstep.TargetTolerance;
import org.mtporacle.conformance.target.mutants.SimpleTarget;
import org.mtporacle.conformance.target.mutants.TargetMutation;
import org.mtporacle.reference.ReferenceDraftModel;
import org.mtporacle.reference.target.ReferenceTarget;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Bugs that only the interleaving shows ({@link FusedEngine.Bug}): a fused engine whose drafter reads its commit
 * context from the target's tap buffer, which a zero-draft verify does not refresh, or takes its accepted counts from
 * the target's last commit off by one. Each one's drafter passes drafter chains and its target passes target chains;
 * loop chains catch it and shrink the counterexample to at most 10 actions, written as a trace that replays to the
 * same failure.
 */
class LoopMutantsAreCaughtTest {
    private static final int MAX_CHAINS = 100;
    private static final int MAX_SHRUNK_ACTIONS = 10;
    private static final int SEPARATE_CHAINS = 6;
    private static ReferenceTarget oracleTarget;
    private static ReferenceDraftModel oracleDrafter;

    @BeforeAll
    static void load() {
        oracleTarget = TinyTarget.reference();
        oracleDrafter = LoopLockstepTest.referenceDrafter();
    }

    @AfterAll
    static void close() {
        oracleDrafter.close();
        oracleTarget.close();
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(value = FusedEngine.Bug.class, names = {"STALE_TAP_AFTER_ZERO_DRAFT_ROUND",
            "DRAFTER_COUNT_FROM_TARGET_OFF_BY_ONE"})
    void aBugOfTheFusedEngineIsCaughtOnlyByLoopChainsAndShrunk(FusedEngine.Bug bug) throws Exception {
        try (SimpleTarget target = new SimpleTarget(TinyTarget.fixture().target(), TargetMutation.NONE);
             SimpleBackend drafter = new SimpleBackend(TinyTarget.fixture().drafter(), Mutation.NONE)) {
            // each half alone passes its own chains (one engine each: the buffer is the engine's state)
            TargetLockstep targetOnly = new TargetLockstep(oracleTarget, new FusedEngine(target, drafter, HiddenTap.POST_NORM, bug).target,
                    TargetTolerance.F32);
            TargetChainGenerator targetChains = new TargetChainGenerator(TargetChainGenerator.Limits.defaults());
            Lockstep drafterOnly = new Lockstep(oracleDrafter, new FusedEngine(target, drafter, HiddenTap.POST_NORM, bug).drafter, Tolerance.F32,
                    new TargetTaps(oracleTarget, HiddenTap.POST_NORM));
            ChainGenerator drafterChains = new ChainGenerator(ChainGenerator.Limits.defaults());
            for (long seed = 1; seed <= SEPARATE_CHAINS; seed++) {
                TargetChainOutcome t = targetOnly.run(seed, targetChains.generate(seed));
                assertThat(t.passed()).as("target chain %d: %s", seed, t.divergence()).isTrue();
                ChainOutcome d = drafterOnly.run(seed, drafterChains.generate(seed));
                assertThat(d.passed()).as("drafter chain %d: %s", seed, d.divergence()).isTrue();
            }

            // the loop catches it
            FusedEngine fused = new FusedEngine(target, drafter, HiddenTap.POST_NORM, bug);
            Path traces = Files.createTempDirectory("loop-mutant-traces");
            LoopLockstep loop = new LoopLockstep(oracleTarget, oracleDrafter, fused.target, fused.drafter,
                    Tolerance.F32, HiddenTap.POST_NORM);
            LoopCampaign.Result r = LoopCampaign.run(new LoopCampaign.Settings("tiny-target", "fused-" + bug.name().toLowerCase(),
                    MAX_CHAINS, 7, LoopChainGenerator.Limits.defaults(), traces, 400), loop);
            assertThat(r.failure()).as("caught within %d chains", MAX_CHAINS).isNotNull();
            LoopCampaign.Failure f = r.failure();
            assertThat(f.divergence().group()).isEqualTo("drafter");
            assertThat(f.shrunk().size()).as("shrunk to %s", f.shrunk()).isLessThanOrEqualTo(MAX_SHRUNK_ACTIONS);
            if (bug == FusedEngine.Bug.STALE_TAP_AFTER_ZERO_DRAFT_ROUND) {
                assertThat(f.shrunk()).as("the counterexample has a zero-draft round")
                        .contains(new LoopAction.Draft(0));
            }

            LoopChainTrace trace = LoopTraceFiles.read(f.trace());
            assertThat(trace.actions()).isEqualTo(f.shrunk());
            assertThat(trace.tap()).isEqualTo("post");
            LoopChainOutcome replay = loop.run(trace.seed(), trace.actions());
            assertThat(replay.passed()).as("the trace replays to a failure").isFalse();
            assertThat(replay.divergence().shrinkKey()).isEqualTo(f.divergence().shrinkKey());
            System.out.printf(bug + " caught after %d chain(s): %s shrunk %d -> %d actions "
                    + "(%d attempts): %s%n    %s%n", f.chainsRun(), f.divergence().kind(), f.originalLength(),
                    f.shrunk().size(), f.shrinkAttempts(), f.divergence().message(),
                    f.shrunk().stream().map(LoopAction::describe).toList());
        }
    }
}
