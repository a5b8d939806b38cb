package org.mtporacle.conformance.loop;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.mtporacle.api.HiddenTap;
import org.mtporacle.api.Tolerance;
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
import org.mtporacle.conformance.target.mutants.SimpleTarget;
import org.mtporacle.conformance.target.mutants.TargetMutation;
import org.mtporacle.reference.ReferenceDraftModel;
import org.mtporacle.reference.target.ReferenceTarget;
import org.mtporacle.reference.target.SpeculativeDecoding.KvPolicy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Loop chains under the declared drafter KV policy, and with bad calls (spec §13.5): the reference follows itself under
 * {@code rebuild} exactly and the standalone pair follows it under {@code f32}; an engine running the other policy than
 * the one declared is caught under the declared one (and passes under the one it runs); an engine that accepts an
 * invalid call to either group is caught. Each counterexample is shrunk to at most 10 actions and written as a trace
 * that replays to the same failure.
 */
class LoopPoliciesAndBadCallsTest {
    private static final int MAX_CHAINS = 60;
    private static final int PASSING_CHAINS = 6;
    private static final int MAX_SHRUNK_ACTIONS = 10;
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

    @Test
    void theReferenceAndTheStandalonePairFollowTheReferenceUnderRebuildThroughBadCalls() {
        try (ReferenceTarget target = TinyTarget.reference(); ReferenceDraftModel drafter =
                LoopLockstepTest.referenceDrafter()) {
            LoopCampaign.Result r = LoopCampaign.run(LoopLockstepTest.settings(PASSING_CHAINS), new LoopLockstep(
                    oracleTarget, oracleDrafter, target, drafter, Tolerance.EXACT, HiddenTap.PRE_NORM,
                    KvPolicy.REBUILD));
            LoopLockstepTest.report("reference vs reference (exact, pre, rebuild)", r);
            assertThat(r.failure()).as("%s", r.failure()).isNull();
            assertThat(Arrays.stream(r.accepts()).skip(1).sum()).as("rows whose accepted drafts were re-run")
                    .isPositive();
            assertThat(r.stats().badCalls()).as("bad calls made").isPositive();
        }
        try (SimpleTarget target = new SimpleTarget(TinyTarget.fixture().target(), TargetMutation.NONE);
             SimpleBackend drafter = new SimpleBackend(TinyTarget.fixture().drafter(), Mutation.NONE)) {
            LoopCampaign.Result r = LoopCampaign.run(LoopLockstepTest.settings(PASSING_CHAINS), new LoopLockstep(
                    oracleTarget, oracleDrafter, target, drafter, Tolerance.F32, HiddenTap.POST_NORM,
                    KvPolicy.REBUILD));
            LoopLockstepTest.report("simple pair vs reference (f32, post, rebuild)", r);
            assertThat(r.failure()).as("%s", r.failure()).isNull();
        }
    }

    /**
     * Keep and rebuild mixed up: each fused engine passes loop chains under the policy it runs and is caught under the
     * other, declared one (under {@code f32}; the engine that rebuilds where keep is declared differs only in the
     * drafted rows' K/V).
     */
    @ParameterizedTest(name = "{0} declared {2}")
    @CsvSource({"KEEPS_WHAT_THE_TARGET_ACCEPTED, KEEP, REBUILD", "REBUILDS_ON_COMMIT, REBUILD, KEEP"})
    void anEngineRunningTheOtherKvPolicyIsCaughtUnderTheDeclaredOneAndShrunk(FusedEngine.Bug bug, KvPolicy runs,
                                                                             KvPolicy declared) throws Exception {
        try (SimpleTarget target = new SimpleTarget(TinyTarget.fixture().target(), TargetMutation.NONE);
             SimpleBackend drafter = new SimpleBackend(TinyTarget.fixture().drafter(), Mutation.NONE)) {
            FusedEngine fused = new FusedEngine(target, drafter, HiddenTap.POST_NORM, bug);
            LoopCampaign.Result ok = LoopCampaign.run(LoopLockstepTest.settings(PASSING_CHAINS), new LoopLockstep(
                    oracleTarget, oracleDrafter, fused.target, fused.drafter, Tolerance.F32, HiddenTap.POST_NORM,
                    runs));
            assertThat(ok.failure()).as("under the policy it runs: %s", ok.failure()).isNull();
            caughtAndShrunk(bug, fused, declared, "drafter");
        }
    }

    /** An engine that clamps an accepted count instead of refusing it, in the target or the drafter. */
    @ParameterizedTest(name = "{0}")
    @CsvSource({"TARGET_CLAMPS_ACCEPTED, target", "DRAFTER_CLAMPS_ACCEPTED, drafter"})
    void anEngineAcceptingABadCallIsCaughtAndShrunk(FusedEngine.Bug bug, String group) throws Exception {
        try (SimpleTarget target = new SimpleTarget(TinyTarget.fixture().target(), TargetMutation.NONE);
             SimpleBackend drafter = new SimpleBackend(TinyTarget.fixture().drafter(), Mutation.NONE)) {
            LoopCampaign.Failure f = caughtAndShrunk(bug, new FusedEngine(target, drafter, HiddenTap.POST_NORM, bug),
                    KvPolicy.KEEP, group);
            assertThat(f.divergence().kind()).isEqualTo("MISSING_ERROR");
            assertThat(f.shrunk()).as("the counterexample makes the bad call").anyMatch(a -> group.equals("target")
                    ? a instanceof LoopAction.BadTarget : a instanceof LoopAction.BadDrafter);
        }
    }

    private LoopCampaign.Failure caughtAndShrunk(FusedEngine.Bug bug, FusedEngine fused, KvPolicy declared,
                                                 String group) throws Exception {
        Path traces = Files.createTempDirectory("loop-policy-traces");
        LoopLockstep loop = new LoopLockstep(oracleTarget, oracleDrafter, fused.target, fused.drafter, Tolerance.F32,
                HiddenTap.POST_NORM, declared);
        LoopCampaign.Result r = LoopCampaign.run(new LoopCampaign.Settings("tiny-target", "fused-"
                + bug.name().toLowerCase(), Map.of("precision", "f32"), MAX_CHAINS, 7,
                LoopChainGenerator.Limits.defaults(), traces, 400), loop);
        assertThat(r.failure()).as("caught within %d chains", MAX_CHAINS).isNotNull();
        LoopCampaign.Failure f = r.failure();
        assertThat(f.divergence().group()).isEqualTo(group);
        assertThat(f.shrunk().size()).as("shrunk to %s", f.shrunk()).isLessThanOrEqualTo(MAX_SHRUNK_ACTIONS);
        LoopChainTrace trace = LoopTraceFiles.read(f.trace());
        assertThat(trace.actions()).isEqualTo(f.shrunk());
        assertThat(trace.kv()).isEqualTo(declared.label());
        assertThat(trace.backendOptions()).as("the trace records the campaign's backend options")
                .containsExactlyEntriesOf(Map.of("precision", "f32"));
        LoopChainOutcome replay = loop.run(trace.seed(), trace.actions());
        assertThat(replay.passed()).as("the trace replays to a failure").isFalse();
        assertThat(replay.divergence().shrinkKey()).isEqualTo(f.divergence().shrinkKey());
        System.out.printf("%s (declared %s) caught after %d chain(s): %s shrunk %d -> %d actions: %s%n    %s%n", bug,
                declared.label(), f.chainsRun(), f.divergence().kind(), f.originalLength(), f.shrunk().size(),
                f.divergence().message(), f.shrunk().stream().map(LoopAction::describe).toList());
        return f;
    }
}
