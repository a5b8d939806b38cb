package org.mtporacle.conformance.tck;

import org.junit.jupiter.api.Test;
import org.junit.platform.testkit.engine.EngineTestKit;
import org.junit.platform.testkit.engine.Events;
import org.mtporacle.api.Availability;
import org.mtporacle.api.DraftModel;
import org.mtporacle.api.DraftRows;
import org.mtporacle.api.DraftSampling;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MtpBackend;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.RowCheckpoint;
import org.mtporacle.reference.ReferenceBackend;

import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;

/** The first line of a TCK failure (what {@code mtp tck} prints) says what the rule expected, not only the engine's text. */
class RuleFailureLineTest {

    @Test
    void anEngineErrorIsPrefixedWithTheRuleAndWhatItExpected() {
        AssertionError e = RuleFailureLine.rewrite("§10.1.7 capture → restore → capture is byte-identical",
                new MtpException(MtpException.Kind.BACKEND_FAILURE, "capture: not yet"));
        assertThat(e.getMessage()).isEqualTo("§10.1.7 capture → restore → capture is byte-identical: expected a call "
                + "the rule relies on to succeed, the engine failed with BACKEND_FAILURE: capture: not yet\n"
                + "capture: not yet");
        assertThat(e.getCause()).isInstanceOf(MtpException.class);
    }

    @Test
    void anAssertionSpreadOverLinesIsJoinedSoItsFirstLineHasTheExpectedValue() {
        AssertionError assertj = catchAssertion(() -> assertThat(5).as("row 0: P after a prefill of 6").isEqualTo(6));
        assertThat(assertj.getMessage().lines().findFirst().orElse("")).doesNotContain("but was"); // AssertJ's layout
        String first = RuleFailureLine.rewrite("§10.1.1 alignment", assertj).getMessage().lines().findFirst()
                .orElse("");
        assertThat(first).isEqualTo("[row 0: P after a prefill of 6] expected: 6 but was: 5");
    }

    @Test
    void aMessageThatNamesNoExpectationIsPrefixedWithTheRuleAndOneThatDoesIsKept() {
        assertThat(RuleFailureLine.rewrite("§5.8 commit keeps accepted + 1 rows", new AssertionError("rows differ"))
                .getMessage()).isEqualTo("§5.8 commit keeps accepted + 1 rows: expected what the rule states; rows "
                + "differ\nrows differ");
        AssertionError kept = new AssertionError("append: expected INCOMPATIBLE_CHECKPOINT, the call was accepted");
        assertThat(RuleFailureLine.rewrite("§10.1.9", kept)).isSameAs(kept);
    }

    private static AssertionError catchAssertion(Runnable r) {
        try {
            r.run();
        } catch (AssertionError e) {
            return e;
        }
        throw new IllegalStateException("no assertion failed");
    }

    /**
     * An engine shaped like a first draft (capture not written yet) fails rule after rule on the engine's own error;
     * every failure's first line still says what the rule expected.
     */
    @Test
    void aBackendWithoutCaptureFailsEveryRuleWithAFirstLineThatSaysWhatWasExpected() {
        Events tests = EngineTestKit.engine("junit-jupiter").selectors(selectClass(NoCapture.class)).execute()
                .testEvents();
        List<String> firstLines = tests.failed().stream().map(e -> e.getTestDescriptor().getLegacyReportingName()
                + " | " + e.getPayload(org.junit.platform.engine.TestExecutionResult.class)
                .flatMap(r -> r.getThrowable()).map(t -> String.valueOf(t.getMessage()).lines().findFirst()
                        .orElse("")).orElse("")).toList();
        firstLines.forEach(System.out::println);
        // 18 of the 21 rules today: the 2 untested ones are skipped, the quantized one is switched off
        assertThat(firstLines).as("the rules that capture fail").hasSizeGreaterThanOrEqualTo(18);
        assertThat(firstLines).allSatisfy(l -> assertThat(l.toLowerCase(Locale.ROOT)).contains("expected"));
        assertThat(firstLines).anySatisfy(l -> assertThat(l).isEqualTo(
                "required_s10_1_7_checkpointRoundTripIsByteIdentical() | §10.1.7 capture → restore → capture is "
                        + "byte-identical: expected a call the rule relies on to succeed, the engine failed with "
                        + "BACKEND_FAILURE: capture: not yet"));
        assertThat(firstLines).as("none is the engine's text alone").noneMatch(l -> l.endsWith(" | capture: not yet"));
    }

    /** The reference whose capture always fails; run only through the engine test kit. */
    static class NoCapture extends BackendVerification {
        @Override
        protected MtpBackend createBackend() {
            return new MtpBackend() {
                @Override
                public String name() {
                    return "no-capture";
                }

                @Override
                public String description() {
                    return "the reference, capture not written yet";
                }

                @Override
                public Availability availability() {
                    return Availability.yes("in-process");
                }

                @Override
                public DraftModel load(MtpModel model, Map<String, String> options) {
                    DraftModel inner = ReferenceBackend.load(model, ReferenceBackend.configuredMode(), 1);
                    return new DraftModel() {
                        @Override
                        public MtpModel model() {
                            return inner.model();
                        }

                        @Override
                        public String numerics() {
                            return inner.numerics();
                        }

                        @Override
                        public DraftRows openRows(List<RowCheckpoint> checkpoints) {
                            return new WithoutCapture(inner.openRows(checkpoints));
                        }

                        @Override
                        public void close() {
                            inner.close();
                        }
                    };
                }
            };
        }

        @Override
        protected boolean supportsQuantizedWeights() {
            return false;
        }

        @Override
        protected int lockstepChains() {
            return 2;
        }

        @Override
        protected int moeChains() {
            return 1;
        }

        @Override
        protected int prefillSplitLength() {
            return 12;
        }

        @Override
        protected int overlapTrials() {
            return 1;
        }

        @Override
        protected Path fixtureCache() {
            return Path.of("target", "fixture-cache");
        }
    }

    private record WithoutCapture(DraftRows rows) implements DraftRows {
        @Override
        public int rowCount() {
            return rows.rowCount();
        }

        @Override
        public void append(List<RowCheckpoint> checkpoints) {
            rows.append(checkpoints);
        }

        @Override
        public void filterRows(int[] keep) {
            rows.filterRows(keep);
        }

        @Override
        public void prefill(HostTensor tokens, HostTensor context) {
            rows.prefill(tokens, context);
        }

        @Override
        public int[][] draft(int[] pending, int depth, long[] steps, DraftSampling sampling) {
            return rows.draft(pending, depth, steps, sampling);
        }

        @Override
        public void commit(int[] accepted, HostTensor context) {
            rows.commit(accepted, context);
        }

        @Override
        public RowCheckpoint capture(int row) {
            throw new MtpException(MtpException.Kind.BACKEND_FAILURE, "capture: not yet");
        }

        @Override
        public boolean isClosed() {
            return rows.isClosed();
        }

        @Override
        public void close() {
            rows.close();
        }
    }
}
