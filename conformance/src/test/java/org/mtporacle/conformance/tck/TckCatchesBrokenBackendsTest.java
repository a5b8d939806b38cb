package org.mtporacle.conformance.tck;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.platform.testkit.engine.EngineTestKit;
import org.junit.platform.testkit.engine.Events;
import org.mtporacle.api.Availability;
import org.mtporacle.api.DraftModel;
import org.mtporacle.api.MtpBackend;
import org.mtporacle.api.MtpModel;
import org.mtporacle.conformance.mutants.Mutation;
import org.mtporacle.conformance.mutants.SimpleBackend;

import java.nio.file.Path;
import java.util.Map;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;

/** The TCK tests itself: run against a deliberately broken backend, the checks for the broken rule fail. */
class TckCatchesBrokenBackendsTest {

    /** Which mutation the nested verification classes load; set before each engine run. */
    static volatile Mutation current = Mutation.NONE;

    static Stream<Arguments> cases() {
        return Stream.of(
                Arguments.of(Mutation.NONE, new String[0]),
                Arguments.of(Mutation.BAD_APPEND_HALF_MUTATES,
                        new String[] {"required_s11_1_badInputCatalogue", "required_s10_1_9_failedAppendIsAtomic"}),
                Arguments.of(Mutation.CHECKPOINT_OFFSET_OFF_BY_ONE,
                        new String[] {"required_s10_1_1_alignment", "required_s10_1_7_checkpointRoundTripIsByteIdentical"}),
                Arguments.of(Mutation.FILTER_REORDERS_HIDDEN_NOT_KV,
                        new String[] {"required_s10_1_11_filterRowsPermutesRows"}),
                Arguments.of(Mutation.APPEND_AFTER_CLOSE,
                        new String[] {"required_s11_1_closedGroupRefusesEveryCall"}),
                Arguments.of(Mutation.MODEL_CLOSE_IGNORED,
                        new String[] {"required_s11_11_closedModelRefusesEveryCall"}),
                Arguments.of(Mutation.GATE_NOT_APPLIED,
                        new String[] {"stochastic_s5_randomChainsFollowTheReference",
                                "required_s5_8_commitKeepsAcceptedPlusOneRows"}));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void theChecksOfTheBrokenRuleFail(Mutation mutation, String[] mustFail) {
        current = mutation;
        Events tests = EngineTestKit.engine("junit-jupiter").selectors(selectClass(Subject.class)).execute()
                .testEvents();
        var failed = tests.failed().stream().map(e -> e.getTestDescriptor().getLegacyReportingName()).toList();
        if (mustFail.length == 0) {
            assertThat(failed).as("a correct second implementation passes every check").isEmpty();
            assertThat(tests.succeeded().count()).isGreaterThanOrEqualTo(13);
        } else {
            for (String check : mustFail) {
                assertThat(failed).as("%s must fail %s", mutation, check).anyMatch(n -> n.startsWith(check));
            }
        }
        var messages = tests.failed().stream().map(e -> e.getTestDescriptor().getLegacyReportingName() + ": "
                + e.getPayload(org.junit.platform.engine.TestExecutionResult.class).flatMap(r -> r.getThrowable())
                .map(Throwable::getMessage).orElse("")).toList();
        assertThat(messages).as("%s: failures say what differed", mutation)
                .noneMatch(m -> m.contains("Expecting value to be true") || m.contains("Expecting value to be false"));
        assertThat(messages).as("%s: each failure's first line (what mtp tck prints) says what was expected", mutation)
                .allSatisfy(m -> assertThat(m.lines().findFirst().orElse("").toLowerCase(java.util.Locale.ROOT))
                        .contains("expected"));
        if (mutation == Mutation.FILTER_REORDERS_HIDDEN_NOT_KV) {
            assertThat(messages).anyMatch(m -> m.contains("not byte-identical: filterRows [3, 0, 2]: new row 0 "
                    + "(old row 3): P=8 draftOffset=7, the expected state has P=6 draftOffset=5"));
        }
        if (mutation == Mutation.APPEND_AFTER_CLOSE) { // the first line (what mtp tck prints) says what was expected
            assertThat(messages).anyMatch(m -> m.lines().findFirst().orElse("").contains("expected ILLEGAL_STATE"));
        }
        if (mutation == Mutation.CHECKPOINT_OFFSET_OFF_BY_ONE) {
            assertThat(messages).anyMatch(m -> m.contains("draftOffset (P − 1) after a prefill of 6"));
        }
    }

    static final String MOE_RULE = "optional_s12_moeChainsFollowTheReference";

    /** The events of the §12 rule alone, on {@code subject} with its default fixtures (what {@code mtp tck} runs). */
    private static Events moeRule(Class<?> subject) {
        return EngineTestKit.engine("junit-jupiter").selectors(org.junit.platform.engine.discovery.DiscoverySelectors
                .selectMethod(subject, MOE_RULE)).execute().testEvents();
    }

    /**
     * The MoE mutants fail the TCK with its default fixtures (no {@code --fixture tiny-moe}): the §12 rule runs the
     * MoE fixtures because the backend loads MoE models. Ignoring {@code norm_topk_prob} fails on
     * {@code tiny-moe-ties}, the one fixture with the flag false. (A correct second implementation passes it:
     * {@link #theChecksOfTheBrokenRuleFail} with {@code NONE} runs every rule.)
     */
    @ParameterizedTest(name = "{0}")
    @org.junit.jupiter.params.provider.EnumSource(value = Mutation.class, names = {"MOE_SHARED_GATE_MISSING",
            "MOE_NORM_TOPK_FLAG_IGNORED", "MOE_EXPERT_WEIGHTS_REVERSED"})
    void theMoeMutantsFailTheTckByDefault(Mutation mutation) {
        current = mutation;
        Events tests = moeRule(Subject.class);
        assertThat(tests.failed().count()).as("%s fails %s", mutation, MOE_RULE).isEqualTo(1);
        String message = tests.failed().stream().findFirst().flatMap(e -> e.getPayload(
                org.junit.platform.engine.TestExecutionResult.class)).flatMap(r -> r.getThrowable())
                .map(Throwable::getMessage).orElse("");
        assertThat(message).startsWith(mutation == Mutation.MOE_NORM_TOPK_FLAG_IGNORED ? "tiny-moe-ties: "
                : "tiny-moe: ").contains("chains diverged");
    }

    /** A backend that refuses MoE models skips the §12 rule, saying why; it does not fail it. */
    @org.junit.jupiter.api.Test
    void aBackendThatRefusesMoeModelsSkipsTheMoeRule() {
        Events tests = moeRule(DenseOnly.class);
        assertThat(tests.aborted().count()).as("skipped by an assumption").isEqualTo(1);
        assertThat(tests.aborted().stream().findFirst().flatMap(e -> e.getPayload(
                org.junit.platform.engine.TestExecutionResult.class)).flatMap(r -> r.getThrowable())
                .map(Throwable::getMessage).orElse("")).contains("does not load MoE models", "tiny-moe");
    }

    /**
     * Held to {@code exact}, the reference with its router breaking exact ties toward the higher index fails the §12
     * rule (on {@code tiny-moe-ties}), where an allowance would accept each tie as a near-tie of gap 0.
     */
    @org.junit.jupiter.api.Test
    void underExactARouterBreakingTiesTowardTheHigherIndexFailsTheMoeRule() {
        Events tests = moeRule(ExactHigherTies.class);
        assertThat(tests.failed().count()).isEqualTo(1);
        assertThat(tests.failed().stream().findFirst().flatMap(e -> e.getPayload(
                org.junit.platform.engine.TestExecutionResult.class)).flatMap(r -> r.getThrowable())
                .map(Throwable::getMessage).orElse("")).startsWith("tiny-moe-ties: ")
                .contains("an exact tie broken toward the higher expert index");
    }

    /** The reference, refusing MoE models as INCOMPATIBLE_MODEL. */
    static class DenseOnly extends Subject {
        @Override
        protected MtpBackend createBackend() {
            return new MtpBackend() {
                @Override
                public String name() {
                    return "dense-only";
                }

                @Override
                public String description() {
                    return "the reference, for dense models only";
                }

                @Override
                public Availability availability() {
                    return Availability.yes("in-process");
                }

                @Override
                public DraftModel load(MtpModel model, Map<String, String> options) {
                    if (model.weights().mlp() instanceof org.mtporacle.api.MlpWeights.Moe) {
                        throw org.mtporacle.api.MtpException.incompatibleModel("load: MoE models are not supported");
                    }
                    return org.mtporacle.reference.ReferenceBackend.load(model,
                            org.mtporacle.reference.ReferenceBackend.configuredMode(), 1);
                }
            };
        }
    }

    /** The reference whose router breaks exact ties toward the higher index, declaring the exact profile. */
    static class ExactHigherTies extends Subject {
        @Override
        protected MtpBackend createBackend() {
            return new MtpBackend() {
                @Override
                public String name() {
                    return "reference-higher-ties";
                }

                @Override
                public String description() {
                    return "the reference, its router breaking exact ties toward the higher expert index";
                }

                @Override
                public Availability availability() {
                    return Availability.yes("in-process");
                }

                @Override
                public java.util.List<org.mtporacle.api.BackendProfile> profiles() {
                    return java.util.List.of(new org.mtporacle.api.BackendProfile(name(), Map.of(),
                            org.mtporacle.api.Tolerance.EXACT));
                }

                @Override
                public DraftModel load(MtpModel model, Map<String, String> options) {
                    return new org.mtporacle.conformance.mutants.HigherIndexTies(
                            org.mtporacle.reference.ReferenceBackend.load(model,
                                    org.mtporacle.reference.ReferenceBackend.configuredMode(), 1));
                }
            };
        }
    }

    /** The TCK over {@link SimpleBackend} with {@link #current}; run only through the engine test kit above. */
    static class Subject extends BackendVerification {
        @Override
        protected MtpBackend createBackend() {
            Mutation m = current;
            return new MtpBackend() {
                @Override
                public String name() {
                    return "simple-" + m.name().toLowerCase();
                }

                @Override
                public String description() {
                    return "a plain second implementation with " + m;
                }

                @Override
                public Availability availability() {
                    return Availability.yes("in-process");
                }

                @Override
                public DraftModel load(MtpModel model, Map<String, String> options) {
                    return new SimpleBackend(model, m);
                }
            };
        }

        @Override
        protected int lockstepChains() {
            return 25;
        }

        /** The plain implementation is one position at a time in scalar mode; the reference test covers 2050. */
        @Override
        protected int prefillSplitLength() {
            return 60;
        }

        @Override
        protected int overlapTrials() {
            return 10;
        }

        /** A MoE bug shows on the first MoE forward: fewer chains than the default's 10 keep these runs short. */
        @Override
        protected int moeChains() {
            return 5;
        }

        @Override
        protected Path fixtureCache() {
            return Path.of("target", "fixture-cache");
        }
    }
}
