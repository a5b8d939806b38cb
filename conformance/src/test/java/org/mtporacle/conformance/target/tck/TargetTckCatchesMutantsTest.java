package org.mtporacle.conformance.target.tck;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.platform.engine.DiscoverySelector;
import org.junit.platform.testkit.engine.EngineTestKit;
import org.junit.platform.testkit.engine.Events;
import org.mtporacle.api.DraftModel;
import org.mtporacle.api.LoadedTarget;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.TargetModel;
import org.mtporacle.conformance.mutants.Mutation;
import org.mtporacle.conformance.mutants.SimpleBackend;
import org.mtporacle.conformance.target.lockstep.SpeculativeLoopCheck;
import org.mtporacle.conformance.target.lockstep.TargetTolerance;
import org.mtporacle.conformance.target.mutants.SimpleTarget;
import org.mtporacle.conformance.target.mutants.TargetMutation;
import org.mtporacle.reference.target.SpeculativeDecoding.KvPolicy;
import org.mtporacle.reference.target.SpeculativeDecoding.Options;

import java.nio.file.Path;
import java.util.Arrays;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectMethod;

/**
 * The target TCK tests itself: the standalone simple target passes every check (the replay design: the rollback
 * checks; lockstep runs it whole), and each
 * mutant fails the check of the rule it breaks (only those checks run, to keep this quick).
 */
class TargetTckCatchesMutantsTest {
    /** Which mutation and rollback design the nested verification class loads; set before each engine run. */
    static volatile TargetMutation current = TargetMutation.NONE;
    static volatile SimpleTarget.Rollback design = SimpleTarget.Rollback.SNAPSHOTS;
    /** Whether the subject refuses Qwen3-Next releases, as an engine that wires Qwen3.5's layout only does. */
    static volatile boolean qwen35Only = false;

    private static final String COMMIT = "required_s13_3_commitKeepsAcceptedPlusOneTokens";
    private static final String ROLLBACK = "required_s13_3_rollbackEqualsNeverFeedingTheRejected";
    private static final String MOE = "optional_s12_moeTargetChainsFollowTheReference";
    private static final String RANDOM = "stochastic_s13_3_randomChainsFollowTheReference";

    static Stream<Arguments> cases() {
        return Stream.of(
                Arguments.of(TargetMutation.CONV_NOT_ROLLED_BACK, new String[] {COMMIT, ROLLBACK}),
                Arguments.of(TargetMutation.STATE_NOT_ROLLED_BACK, new String[] {COMMIT, ROLLBACK}),
                Arguments.of(TargetMutation.SNAPSHOT_OFF_BY_ONE, new String[] {COMMIT, ROLLBACK}),
                Arguments.of(TargetMutation.PADS_DECAY_STATE, new String[] {COMMIT, ROLLBACK}),
                Arguments.of(TargetMutation.ZERO_DRAFT_STALE_SLOT,
                        new String[] {"required_s13_3_zeroDraftRoundEqualsAPlainStep"}),
                Arguments.of(TargetMutation.TRANSPOSED_STATE,
                        new String[] {"required_s13_2_stateMatchesTheReferenceInTheDeclaredLayout"}),
                Arguments.of(TargetMutation.V_HEADS_TILED,
                        new String[] {"required_s13_1_logitsAndTapsMatchTheReference"}),
                Arguments.of(TargetMutation.WRONG_TAP,
                        new String[] {"required_s13_1_logitsAndTapsMatchTheReference"}),
                Arguments.of(TargetMutation.QK_NORM_AFTER_ROPE,
                        new String[] {"required_s13_1_logitsAndTapsMatchTheReference"}),
                Arguments.of(TargetMutation.CHUNK_BOUNDARY_OFF_BY_ONE,
                        new String[] {"required_s13_3_splitPrefillEqualsOnePrefill"}),
                Arguments.of(TargetMutation.KEEP_REBUILD_MIXED_UP,
                        new String[] {"required_s13_4_loopFollowsTheReferenceUnderTheDeclaredPolicy"}),
                // the MoE mutants: the TCK's default fixture is dense, and the §12 rule runs the MoE targets
                Arguments.of(TargetMutation.MOE_NORM_TOPK_FLAG_IGNORED, new String[] {MOE}),
                Arguments.of(TargetMutation.MOE_TOPK_NOT_RENORMALISED, new String[] {MOE}),
                Arguments.of(TargetMutation.MOE_SHARED_GATE_MISSING, new String[] {MOE}),
                Arguments.of(TargetMutation.MOE_EXPERT_WEIGHTS_REVERSED, new String[] {MOE}));
    }

    @Test
    void theCorrectSimpleTargetPassesEveryCheck() {
        current = TargetMutation.NONE;
        design = SimpleTarget.Rollback.SNAPSHOTS;
        Events tests = EngineTestKit.engine("junit-jupiter").selectors(selectClass(Subject.class)).execute()
                .testEvents();
        assertThat(failures(tests)).isEmpty();
        // every target rule but the untested device-failure one: the §13.5 loop rule and the MoE target rule included
        assertThat(tests.succeeded().count()).isEqualTo(14);
        assertThat(tests.aborted().count()).isEqualTo(1);
    }

    /**
     * An engine that loads Qwen3.5's layout only refuses the Qwen3-Next MoE fixture: the §12 rule still runs and
     * judges the chains of the MoE fixture it loads (a pass, or a MoE mutant's failure), rather than reporting itself
     * not applicable after they ran.
     */
    @Test
    void theMoeRuleJudgesTheMoeFixtureALayoutLimitedEngineLoads() {
        design = SimpleTarget.Rollback.SNAPSHOTS;
        qwen35Only = true;
        try {
            current = TargetMutation.NONE;
            Events ok = EngineTestKit.engine("junit-jupiter").selectors(selectMethod(Subject.class, MOE)).execute()
                    .testEvents();
            assertThat(ok.succeeded().count()).as("%s", failures(ok)).isEqualTo(1);
            current = TargetMutation.MOE_SHARED_GATE_MISSING;
            Events bad = EngineTestKit.engine("junit-jupiter").selectors(selectMethod(Subject.class, MOE)).execute()
                    .testEvents();
            assertThat(bad.failed().count()).isEqualTo(1);
        } finally {
            qwen35Only = false;
            current = TargetMutation.NONE;
        }
    }

    /**
     * Under {@code bf16} a q/k norm applied after RoPE stays inside every bound on the narrow-gain default fixture
     * (keys typical NMSE about 2e-4, where conforming bf16 engines reach 2e-4 too), and the §13.3 rule's wide-gain
     * twin catches it: its keys' typical NMSE, 2e-3 or more, is over bf16's chain-level bound. The correct target
     * passes the same rule under {@code bf16}.
     */
    @Test
    void underBf16TheWideGainTwinCatchesAQkNormAfterRope() {
        design = SimpleTarget.Rollback.SNAPSHOTS;
        try {
            current = TargetMutation.NONE;
            Events ok = EngineTestKit.engine("junit-jupiter").selectors(selectMethod(Bf16Subject.class, RANDOM))
                    .execute().testEvents();
            assertThat(ok.succeeded().count()).as("%s", failures(ok)).isEqualTo(1);
            current = TargetMutation.QK_NORM_AFTER_ROPE;
            Events bad = EngineTestKit.engine("junit-jupiter").selectors(selectMethod(Bf16Subject.class, RANDOM))
                    .execute().testEvents();
            assertThat(failures(bad)).singleElement().asString().contains("wide-gain twin tiny-wide-target")
                    .contains("typical keys NMSE");
        } finally {
            current = TargetMutation.NONE;
        }
    }

    /** The replay design runs the whole contract in lockstep elsewhere; here, the rules about rollback. */
    @Test
    void theCorrectSimpleTargetWithReplayRollbackPassesTheRollbackChecks() {
        current = TargetMutation.NONE;
        design = SimpleTarget.Rollback.REPLAY;
        Events tests = EngineTestKit.engine("junit-jupiter").selectors(selectMethod(Subject.class, COMMIT),
                selectMethod(Subject.class, ROLLBACK), selectMethod(Subject.class,
                        "required_s13_3_zeroDraftRoundEqualsAPlainStep")).execute().testEvents();
        assertThat(failures(tests)).isEmpty();
        assertThat(tests.succeeded().count()).isEqualTo(3);
    }

    private static java.util.List<String> failures(Events tests) {
        return tests.failed().stream().map(e -> e.getTestDescriptor().getDisplayName() + ": " + e.getPayload(
                org.junit.platform.engine.TestExecutionResult.class).flatMap(r -> r.getThrowable())
                .map(Throwable::getMessage).orElse("")).toList();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void eachMutantFailsTheCheckOfTheRuleItBreaks(TargetMutation mutation, String[] mustFail) {
        current = mutation;
        design = mutation.rollback();
        DiscoverySelector[] selectors = Arrays.stream(mustFail).map(m -> selectMethod(Subject.class, m))
                .toArray(DiscoverySelector[]::new);
        Events tests = EngineTestKit.engine("junit-jupiter").selectors(selectors).execute().testEvents();
        var failed = tests.failed().stream().map(e -> e.getTestDescriptor().getLegacyReportingName()).toList();
        for (String check : mustFail) {
            assertThat(failed).as("%s must fail %s", mutation, check).anyMatch(n -> n.startsWith(check));
        }
        assertThat(failures(tests)).as("%s: each failure's first line (what mtp tck prints) says what was expected",
                mutation).allSatisfy(m -> assertThat(m.lines().findFirst().orElse("").toLowerCase(
                java.util.Locale.ROOT)).contains("expected"));
        tests.failed().stream().forEach(e -> System.out.printf("%-26s fails %s: %s%n", mutation,
                e.getTestDescriptor().getLegacyReportingName(), e.getPayload(
                        org.junit.platform.engine.TestExecutionResult.class).flatMap(r -> r.getThrowable())
                        .map(t -> t.getMessage().lines().findFirst().orElse("")).orElse("")));
    }

    /** The target TCK over {@link SimpleTarget} with {@link #current}; run only through the engine test kit. */
    static class Subject extends TargetBackendVerification {
        @Override
        protected LoadedTarget createTarget(TargetModel model) {
            if (qwen35Only && "qwen3_next".equals(model.layout())) {
                throw MtpException.incompatibleModel("loadTarget: this engine wires Qwen3.5's layout only");
            }
            return new SimpleTarget(model, current, design);
        }

        /** The standalone drafter beside it, for §13.5's loop chains. */
        @Override
        protected DraftModel createDrafter(MtpModel model) {
            return new SimpleBackend(model, Mutation.NONE);
        }

        @Override
        protected SpeculativeLoopCheck.Engine speculativeEngine(LoadedTarget target, DraftModel drafter) {
            SpeculativeLoopCheck.Engine loop = SpeculativeLoopCheck.of(target, drafter);
            if (current != TargetMutation.KEEP_REBUILD_MIXED_UP) {
                return loop;
            }
            return (requests, declared, seen) -> loop.run(requests, new Options(declared.tap(),
                    declared.policy() == KvPolicy.KEEP ? KvPolicy.REBUILD : KvPolicy.KEEP, declared.depth(),
                    declared.restore()), seen);
        }

        @Override
        protected int lockstepChains() {
            return 8;
        }

        @Override
        protected Path fixtureCache() {
            return Path.of("target", "fixture-cache");
        }
    }

    /** {@link Subject} held to {@code bf16}; run only through the engine test kit. */
    static class Bf16Subject extends Subject {
        @Override
        protected TargetTolerance tolerance() {
            return TargetTolerance.BF16;
        }
    }
}
