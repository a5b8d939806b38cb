package org.mtporacle.conformance.loop;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.mtporacle.api.HiddenTap;
import org.mtporacle.api.Tolerance;
import org.mtporacle.conformance.loop.chain.LoopChainGenerator;
import org.mtporacle.conformance.loop.lockstep.LoopCampaign;
import org.mtporacle.conformance.loop.lockstep.LoopLockstep;
import org.mtporacle.conformance.mutants.Mutation;
import org.mtporacle.conformance.mutants.SimpleBackend;
import org.mtporacle.conformance.target.TinyTarget;
import org.mtporacle.conformance.target.mutants.SimpleTarget;
import org.mtporacle.conformance.target.mutants.TargetMutation;
import org.mtporacle.reference.ReferenceDraftModel;
import org.mtporacle.reference.kernels.KernelMode;
import org.mtporacle.reference.kernels.Kernels;
import org.mtporacle.reference.target.ReferenceTarget;

import java.util.Arrays;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Loop lockstep on the tiny hybrid target and its MTP head: the reference's target and drafter against themselves
 * under {@code exact}, and the standalone pair ({@link SimpleTarget} and {@link SimpleBackend}, no code shared with
 * either skeleton) against the reference under {@code f32}, both taps. Every chain must pass, and the chains must
 * reach zero-draft rounds and rows that accept different counts.
 */
class LoopLockstepTest {
    private static final long SEED = 20261202L;
    private static ReferenceTarget oracleTarget;
    private static ReferenceDraftModel oracleDrafter;

    @BeforeAll
    static void load() {
        oracleTarget = TinyTarget.reference();
        oracleDrafter = referenceDrafter();
    }

    @AfterAll
    static void close() {
        oracleDrafter.close();
        oracleTarget.close();
    }

    static ReferenceDraftModel referenceDrafter() {
        return new ReferenceDraftModel(TinyTarget.fixture().drafter(), new Kernels(KernelMode.VECTOR, 1));
    }

    @Test
    void theReferenceFollowsItselfExactly() {
        try (ReferenceTarget target = TinyTarget.reference(); ReferenceDraftModel drafter = referenceDrafter()) {
            LoopCampaign.Result r = LoopCampaign.run(settings(12), new LoopLockstep(oracleTarget, oracleDrafter,
                    target, drafter, Tolerance.EXACT, HiddenTap.POST_NORM));
            report("reference vs reference (exact, post)", r);
            assertThat(r.failure()).as("%s", r.failure()).isNull();
            assertThat(r.accepts()[0]).as("rows that accepted no draft").isPositive();
            assertThat(Arrays.stream(r.accepts()).skip(1).sum()).as("rows that accepted drafts").isPositive();
        }
    }

    @Test
    void theStandalonePairFollowsTheReferenceOnBothTaps() {
        for (HiddenTap tap : HiddenTap.values()) {
            try (SimpleTarget target = new SimpleTarget(TinyTarget.fixture().target(), TargetMutation.NONE);
                 SimpleBackend drafter = new SimpleBackend(TinyTarget.fixture().drafter(), Mutation.NONE)) {
                LoopCampaign.Result r = LoopCampaign.run(settings(12), new LoopLockstep(oracleTarget, oracleDrafter,
                        target, drafter, Tolerance.F32, tap));
                report("simple pair vs reference (f32, " + tap.label() + ")", r);
                assertThat(r.failure()).as("%s", r.failure()).isNull();
                assertThat(r.stats().comparedStates()).isPositive();
            }
        }
    }

    @Test
    void aCorrectFusedEngineFollowsTheReference() {
        try (SimpleTarget target = new SimpleTarget(TinyTarget.fixture().target(), TargetMutation.NONE);
             SimpleBackend drafter = new SimpleBackend(TinyTarget.fixture().drafter(), Mutation.NONE)) {
            FusedEngine fused = new FusedEngine(target, drafter, HiddenTap.POST_NORM, FusedEngine.Bug.NONE);
            LoopCampaign.Result r = LoopCampaign.run(settings(10), new LoopLockstep(oracleTarget, oracleDrafter,
                    fused.target, fused.drafter, Tolerance.F32, HiddenTap.POST_NORM));
            assertThat(r.failure()).as("%s", r.failure()).isNull();
        }
    }

    static void report(String what, LoopCampaign.Result r) {
        System.out.printf("loop lockstep %s: %d chains, %d tokens compared (%d near-ties), %d states, max state NMSE "
                + "%.3g, max output NMSE %.3g, rows accepting 0..4 drafts %s%n", what, r.chainsRun(),
                r.stats().comparedTokens(), r.stats().nearTies(), r.stats().comparedStates(), r.stats().maxStateNmse(),
                r.stats().maxOutputNmse(), Arrays.toString(Arrays.copyOf(r.accepts(), 5)));
    }

    static LoopCampaign.Settings settings(int chains) {
        return new LoopCampaign.Settings("tiny-target", "test", chains, SEED, LoopChainGenerator.Limits.defaults(),
                null, 300);
    }
}
