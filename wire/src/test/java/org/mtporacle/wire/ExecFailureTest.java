package org.mtporacle.wire;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.mtporacle.api.DType;
import org.mtporacle.api.DraftModel;
import org.mtporacle.api.DraftRows;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.MtpModel;
import org.mtporacle.conformance.FixtureRecipe;
import org.mtporacle.conformance.chain.Action;
import org.mtporacle.conformance.lockstep.ChainOutcome;
import org.mtporacle.conformance.lockstep.Lockstep;
import org.mtporacle.api.Tolerance;
import org.mtporacle.reference.ReferenceBackend;
import org.mtporacle.reference.ReferenceDraftModel;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * An engine that crashes, hangs or writes garbage mid-chain is a failing chain of that backend — the divergence names
 * what happened and quotes the engine's stderr — never an exception or a hang of the runner; the next chain gets a
 * fresh process. The fake engines misbehave once (a marker file), so the next chain must pass.
 */
class ExecFailureTest {
    private static final List<Action> CHAIN = List.of(new Action.Append(List.of(-1, -1), false),
            new Action.Prefill(3, 11), new Action.Draft(2, 12, false),
            new Action.Commit(Action.Acceptance.RANDOM, 13), new Action.Capture(14));

    @TempDir
    Path tmp;

    private static MtpModel tiny() {
        return FixtureRecipe.named("tiny").load(TestEngines.fixtureCache());
    }

    private ChainOutcome[] twoChains(String mode, Duration timeout) {
        MtpModel model = tiny();
        ExecBackend b = new ExecBackend(TestEngines.javaCommand(MisbehavingWireMain.class, mode,
                tmp.resolve("marker-" + mode).toString()), timeout);
        try (ReferenceDraftModel oracle = ReferenceBackend.load(model, ReferenceBackend.configuredMode(), 1);
             DraftModel subject = b.load(model, Map.of())) {
            Lockstep l = new Lockstep(oracle, subject, Tolerance.EXACT);
            return new ChainOutcome[] {l.run(1, CHAIN), l.run(2, CHAIN)};
        }
    }

    @Test
    void anEngineThatExitsMidChainFailsThatChainWithItsExitStatusAndStderrThenTheNextChainGetsAFreshProcess() {
        ChainOutcome[] out = twoChains("crash", Duration.ofSeconds(30));
        assertThat(out[0].passed()).isFalse();
        assertThat(out[0].divergence().actionIndex()).isEqualTo(1);
        assertThat(out[0].divergence().message()).contains("prefill").contains("exited with status 7")
                .contains("fake engine: crashing in prefill");
        assertThat(out[1].passed()).as("%s", out[1].divergence()).isTrue();
    }

    @Test
    void anEngineThatHangsIsStoppedAtThePerCallTimeout() {
        long start = System.nanoTime();
        ChainOutcome[] out = twoChains("hang", Duration.ofSeconds(5));
        double seconds = (System.nanoTime() - start) / 1e9;
        assertThat(out[0].passed()).isFalse();
        assertThat(out[0].divergence().message()).contains("no reply within 5 s")
                .contains("fake engine: hanging in prefill");
        assertThat(out[1].passed()).as("%s", out[1].divergence()).isTrue();
        assertThat(seconds).as("one timeout, not a hang").isLessThan(60);
    }

    @Test
    void anEngineWhoseExpertsListIsMalformedFailsThatChainNamingTheEntry() {
        ChainOutcome[] out = twoChains("bad-experts", Duration.ofSeconds(30));
        assertThat(out[0].passed()).isFalse();
        assertThat(out[0].divergence().actionIndex()).isEqualTo(1);
        assertThat(out[0].divergence().message()).contains("prefill").contains("result.experts[0] is [0,0]")
                .contains("WIRE.md §5");
        assertThat(out[1].passed()).as("%s", out[1].divergence()).isTrue();
    }

    @Test
    void anEngineThatWritesGarbageOnStdoutIsReportedWithTheBytes() {
        ChainOutcome[] out = twoChains("garbage", Duration.ofSeconds(30));
        assertThat(out[0].passed()).isFalse();
        assertThat(out[0].divergence().message()).contains("not a frame").contains("Traceback (most recent call")
                .contains("fake engine: writing garbage in prefill");
        assertThat(out[1].passed()).as("%s", out[1].divergence()).isTrue();
    }

    @Test
    void aProtocolMismatchIsAClearErrorNamingBothVersions() {
        ExecBackend b = new ExecBackend(TestEngines.javaCommand(MisbehavingWireMain.class, "wrong-protocol"),
                Duration.ofSeconds(30));
        assertThatThrownBy(() -> b.load(tiny(), Map.of())).isInstanceOfSatisfying(MtpException.class, e -> {
            assertThat(e.kind()).isEqualTo(MtpException.Kind.BACKEND_FAILURE);
            assertThat(e.getMessage()).contains("protocol mismatch: the engine speaks mtp-oracle-wire/9, this runner "
                    + "speaks mtp-oracle-wire/1");
        });
    }

    @Test
    void theHandshakesCapabilitiesBoundTheGeneratedChains() {
        ExecBackend b = new ExecBackend(TestEngines.javaCommand(MisbehavingWireMain.class, "greedy-only"),
                Duration.ofSeconds(30));
        assertThat(b.capabilities()).isEqualTo(new org.mtporacle.api.BackendCapabilities(false, 2, 3));
        var l = org.mtporacle.conformance.Conform.within(org.mtporacle.conformance.chain.ChainGenerator.Limits
                .defaults(), b.capabilities());
        assertThat(l.stochasticRate()).isZero();
        assertThat(l.maxRows()).isEqualTo(2);
        assertThat(l.maxDepth()).isEqualTo(3);
        assertThat(new ExecBackend(TestEngines.javaCommand(ReferenceWireMain.class), Duration.ofSeconds(30))
                .capabilities()).isEqualTo(new org.mtporacle.api.BackendCapabilities(true, 1 << 20, 64));
    }

    @Test
    void aCommandThatCannotStartCannotRunHere() {
        ExecBackend b = new ExecBackend("'" + tmp.resolve("no-such-engine") + "' --flag", Duration.ofSeconds(5));
        assertThat(b.availability().available()).isFalse();
        assertThat(b.availability().reason()).startsWith("cannot run here: ").contains("no-such-engine");
        assertThatThrownBy(() -> b.load(tiny(), Map.of())).isInstanceOfSatisfying(MtpException.class, e -> {
            assertThat(e.kind()).isEqualTo(MtpException.Kind.UNAVAILABLE);
            assertThat(e.getMessage()).contains("cannot start").contains("no-such-engine");
        });
    }

    @Test
    void anEngineThatFailsItsHandshakeFailsFastOnceWithOneLine() throws Exception {
        Path engine = tmp.resolve("mute.sh");
        java.nio.file.Files.writeString(engine, "read line\necho 'engine: no hello for you' >&2\nexit 5\n");
        ExecBackend b = new ExecBackend("sh '" + engine + "'", Duration.ofSeconds(5));
        assertThat(b.availability().available()).isTrue(); // a failing backend, not a missing one
        assertThatThrownBy(b::requireHandshake).isInstanceOfSatisfying(MtpException.class, e -> {
            assertThat(e.kind()).isEqualTo(MtpException.Kind.BACKEND_FAILURE);
            assertThat(e.getMessage()).contains("failed its handshake").contains("hello")
                    .contains("exited with status 5").contains("no hello for you").doesNotContain("\n");
        });
        ExecBackend good = new ExecBackend(TestEngines.javaCommand(ReferenceWireMain.class), Duration.ofSeconds(30));
        good.requireHandshake(); // no exception
    }

    @Test
    void theRunnerSendsMalformedArgumentsAsTheyAreForTheEngineToJudge() {
        ExecBackend b = new ExecBackend(TestEngines.javaCommand(MisbehavingWireMain.class, "lenient"),
                Duration.ofSeconds(30));
        try (DraftModel m = b.load(tiny(), Map.of()); DraftRows g = m.openRows(List.of())) {
            // no rows, BOOL tokens of a wrong shape, no context: the reference would refuse every one of these;
            // an engine that accepts them gets them, so the runner did not refuse them first
            g.prefill(HostTensor.copyOf(DType.BOOL, new int[] {3, 1}, java.lang.foreign.MemorySegment.ofArray(
                    new byte[] {1, 0, 1})), null);
            g.commit(new int[] {-5, 99}, null);
            assertThat(g.rowCount()).isZero();
        }
    }
}
