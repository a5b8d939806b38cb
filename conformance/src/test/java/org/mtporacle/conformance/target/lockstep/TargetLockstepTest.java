package org.mtporacle.conformance.target.lockstep;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.mtporacle.conformance.target.TinyTarget;
import org.mtporacle.conformance.target.chain.TargetChainGenerator;
import org.mtporacle.conformance.target.mutants.SimpleTarget;
import org.mtporacle.conformance.target.mutants.TargetMutation;
import org.mtporacle.reference.target.ReferenceTarget;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Target lockstep on the tiny hybrid target: the reference against itself under {@code exact}, and the standalone
 * {@link SimpleTarget} (no code shared with the skeleton; both rollback designs; its own state layout, declared)
 * against the reference under {@code f32}. Both must pass every chain; the chains must reach every acceptance length.
 */
class TargetLockstepTest {
    private static final long SEED = 20261201L;

    @Test
    void theReferenceFollowsItselfExactly() {
        try (ReferenceTarget oracle = TinyTarget.reference(); ReferenceTarget subject = TinyTarget.reference()) {
            TargetCampaign.Result r = TargetCampaign.run(settings(30), new TargetLockstep(oracle, subject,
                    TargetTolerance.EXACT));
            report("reference vs reference (exact)", r);
            assertThat(r.failure()).as("%s", r.failure()).isNull();
            long longAccepts = java.util.Arrays.stream(r.matchedAccepts()).skip(3).sum();
            assertThat(r.matchedAccepts()[0]).as("matched commits rejecting every draft").isPositive();
            assertThat(longAccepts).as("matched commits accepting 3 or more drafts (greedy-true drafts)").isPositive();
        }
    }

    @ParameterizedTest(name = "{0} rollback")
    @EnumSource(SimpleTarget.Rollback.class)
    void theStandaloneSimpleTargetFollowsTheReference(SimpleTarget.Rollback rollback) {
        try (ReferenceTarget oracle = TinyTarget.reference();
             SimpleTarget simple = new SimpleTarget(TinyTarget.fixture().target(), TargetMutation.NONE, rollback)) {
            TargetCampaign.Result r = TargetCampaign.run(settings(30), new TargetLockstep(oracle, simple,
                    TargetTolerance.F32));
            report("simple (" + rollback + ") vs reference (f32)", r);
            assertThat(r.failure()).as("%s", r.failure()).isNull();
            assertThat(r.counts().maxStateNmse()).isLessThan(1e-11);
            // the distributions the bf16 bounds are derived from: every greedy position, every compared NMSE
            assertThat(r.counts().gaps().positions()).isEqualTo(r.counts().comparedTokens());
            assertThat(r.counts().nmse().get("logits").total()).isPositive();
            assertThat(r.counts().nmse().get("recurrentStates").total()).isPositive()
                    .isLessThanOrEqualTo(r.counts().comparedStates());
            assertThat(r.counts().nmse().get("recurrentStates").max()).isLessThan(1e-11);
        }
    }

    private static void report(String what, TargetCampaign.Result r) {
        TargetJudge.Counts c = r.counts();
        System.out.printf("target lockstep %s: %d chains, %d tokens compared (%d near-ties), %d row states, "
                + "max logits/taps NMSE %.3g, max state NMSE %.3g, %d bad calls, matched accepts by count %s%n", what,
                r.chainsRun(), c.comparedTokens(), c.nearTies(), c.comparedStates(), c.maxOutputNmse(),
                c.maxStateNmse(), r.badCalls(), java.util.Arrays.toString(java.util.Arrays.copyOf(r.matchedAccepts(),
                        7)));
    }

    private static TargetCampaign.Settings settings(int chains) {
        return new TargetCampaign.Settings("tiny-target", "test", chains, SEED, TargetChainGenerator.Limits.defaults(),
                null, 300);
    }
}
