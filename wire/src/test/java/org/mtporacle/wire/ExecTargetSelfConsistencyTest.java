package org.mtporacle.wire;

import org.junit.jupiter.api.Test;
import org.mtporacle.api.LoadedTarget;
import org.mtporacle.conformance.target.chain.TargetChainGenerator;
import org.mtporacle.conformance.target.lockstep.TargetCampaign;
import org.mtporacle.conformance.target.lockstep.TargetFixture;
import org.mtporacle.conformance.target.lockstep.TargetLockstep;
import org.mtporacle.conformance.target.lockstep.TargetTolerance;
import org.mtporacle.reference.ReferenceBackend;
import org.mtporacle.reference.target.ReferenceTarget;

import java.time.Duration;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The reference target behind the wire ({@code exec:} of a JVM serving it, as {@code mtp serve-wire} does) against the
 * reference target in process, chain for chain, held to {@code exact}: every logit, tap and state byte of every
 * forward, every checkpoint and every error kind of generated target chains — bad calls included — must be
 * identical, which they can only be if the target ops (WIRE.md §5.2) carry every argument and reply without loss.
 */
class ExecTargetSelfConsistencyTest {

    @Test
    void theReferenceTargetOverTheWireIsBitIdenticalToTheReferenceTargetInProcess() {
        ExecBackend backend = new ExecBackend(TestEngines.javaCommand(ReferenceWireMain.class), Duration.ofSeconds(60));
        assertThat(backend.supportsTarget()).as("serve-wire claims the target capability").isTrue();
        TargetFixture fx = TargetFixture.load("tiny-target", TestEngines.fixtureCache());
        ReferenceBackend reference = new ReferenceBackend();
        try (ReferenceTarget oracle = reference.loadTarget(fx.target(), Map.of());
             LoadedTarget subject = backend.loadTarget(fx.target(), Map.of())) {
            TargetCampaign.Result r = TargetCampaign.run(new TargetCampaign.Settings("tiny-target", backend.name(),
                    8, 29L, TargetChainGenerator.Limits.defaults(), null, 0), new TargetLockstep(oracle, subject,
                    TargetTolerance.EXACT));
            assertThat(r.failure()).as("%s", r.failure()).isNull();
            assertThat(r.chainsRun()).isEqualTo(8);
            assertThat(r.counts().comparedTokens()).as("greedy tokens compared").isGreaterThan(30);
            assertThat(r.counts().comparedStates()).as("row states compared").isGreaterThan(12);
            assertThat(r.badCalls()).as("bad calls sent through the wire").isPositive();
            assertThat(r.counts().maxOutputNmse()).isZero();
            assertThat(r.counts().maxStateNmse()).isZero();
        }
    }

    /**
     * On a MoE target the served reference reports its router choices ({@code targetRouterChoices}, WIRE.md §5.2):
     * the kit compares every MoE layer's experts at every token, backend first, and the wire's choices are the
     * reference's own, so none differs.
     */
    @Test
    void theMoeTargetOverTheWireReportsItsRouterChoicesAndTheyAreTheReferences() {
        ExecBackend backend = new ExecBackend(TestEngines.javaCommand(ReferenceWireMain.class), Duration.ofSeconds(60));
        TargetFixture fx = TargetFixture.load("tiny-moe-target", TestEngines.fixtureCache());
        ReferenceBackend reference = new ReferenceBackend();
        try (ReferenceTarget oracle = reference.loadTarget(fx.target(), Map.of());
             LoadedTarget subject = backend.loadTarget(fx.target(), Map.of())) {
            try (org.mtporacle.api.TargetRows rows = subject.openRows(java.util.List.of())) {
                assertThat(rows).isInstanceOf(org.mtporacle.api.TargetRouterChoices.class);
            }
            TargetCampaign.Result r = TargetCampaign.run(new TargetCampaign.Settings("tiny-moe-target",
                    backend.name(), 3, 31L, TargetChainGenerator.Limits.defaults(), null, 0),
                    new TargetLockstep(oracle, subject, TargetTolerance.EXACT));
            assertThat(r.failure()).as("%s", r.failure()).isNull();
            // every layer of tiny-moe-target is MoE: 4 choices per token fed
            assertThat(r.router().compared()).isGreaterThanOrEqualTo(4 * r.counts().comparedTokens());
            assertThat(r.router().nearTies()).isZero();
        }
    }

    @Test
    void aDrafterOnlyEngineSaysSoWhenAskedForTheTarget() {
        ExecBackend backend = new ExecBackend(TestEngines.javaCommand(MisbehavingWireMain.class, "greedy-only"),
                Duration.ofSeconds(60));
        assertThat(backend.supportsTarget()).isFalse();
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> backend.loadTarget(
                        TargetFixture.load("tiny-target", TestEngines.fixtureCache()).target(), Map.of()))
                .isInstanceOfSatisfying(org.mtporacle.api.MtpException.class, e -> assertThat(e.kind())
                        .isEqualTo(org.mtporacle.api.MtpException.Kind.UNAVAILABLE))
                .hasMessageContaining("drafter only");
    }
}
