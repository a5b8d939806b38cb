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

        @Override
        protected Path fixtureCache() {
            return Path.of("target", "fixture-cache");
        }
    }
}
