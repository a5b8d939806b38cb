package org.mtporacle.wire;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.mtporacle.api.DraftModel;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.Tolerance;
import org.mtporacle.conformance.Campaign;
import org.mtporacle.conformance.FixtureRecipe;
import org.mtporacle.conformance.chain.ChainGenerator;
import org.mtporacle.conformance.trace.ChainTrace;
import org.mtporacle.conformance.trace.TraceFiles;
import org.mtporacle.reference.ReferenceBackend;
import org.mtporacle.reference.ReferenceDraftModel;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Campaigns against engines whose faults are not plain divergences: a hang costs one timeout, not one per shrink
 * attempt; a fault of one process's history is recorded as a trace that replays and is said not to reproduce in a
 * fresh process.
 */
class ExecCampaignFaultsTest {
    @TempDir
    Path tmp;

    private Campaign.Result campaign(String mode, String marker, Duration timeout) {
        MtpModel model = FixtureRecipe.named("tiny").load(TestEngines.fixtureCache());
        ExecBackend b = new ExecBackend(TestEngines.javaCommand(MisbehavingWireMain.class, mode, marker), timeout);
        Campaign.Settings s = new Campaign.Settings("tiny", b.name(), Map.of(), Tolerance.EXACT, 1, 7, 0, 1,
                ChainGenerator.Limits.defaults(), tmp.resolve("traces"), 20); // each attempt is a chain on the wire
        try (ReferenceDraftModel oracle = ReferenceBackend.load(model, ReferenceBackend.configuredMode(), 1);
             DraftModel subject = b.load(model, Map.of())) {
            return Campaign.run(s, oracle, subject, null, (d, t, p) -> { }, () -> b.load(model, Map.of()),
                    () -> false);
        }
    }

    private static void assertReplayable(Campaign.Failure f) {
        ChainTrace t = TraceFiles.read(f.trace()); // refuses an action index outside the chain
        assertThat(t.divergence().actionIndex()).isBetween(0, t.actions().size() - 1);
        assertThat(t.actions()).isEqualTo(f.shrunk());
        // an exec: command's relative paths resolve where it ran: the trace says where
        assertThat(t.workingDirectory()).isEqualTo(Path.of("").toAbsolutePath().toString());
    }

    @Test
    void aHangingEngineIsTimedOutOnceAndItsChainIsNotShrunk() {
        long start = System.nanoTime();
        Campaign.Result r = campaign("hang", "always", Duration.ofSeconds(2));
        double seconds = (System.nanoTime() - start) / 1e9;
        assertThat(r.failures()).hasSize(1);
        Campaign.Failure f = r.failures().getFirst();
        assertThat(f.divergence().message()).contains("no reply within 2 s").contains("not shrunk");
        assertThat(f.shrunk()).hasSize(f.divergence().actionIndex() + 1); // the chain as it ran, up to the hang
        assertReplayable(f);
        // shrinking would have waited 2 s on every attempt that reaches the prefill (dozens of them)
        assertThat(seconds).as("one timeout, not one per shrink attempt").isLessThan(30);
    }

    @Test
    void aFaultOfOneProcesssHistoryIsRecordedReplayablyAndSaidNotToReproduceInAFreshProcess() {
        Campaign.Result r = campaign("crash", tmp.resolve("crashed-once").toString(), Duration.ofSeconds(30));
        assertThat(r.failures()).hasSize(1);
        Campaign.Failure f = r.failures().getFirst();
        assertThat(f.divergence().message()).contains("exited with status 7")
                .contains("did not fail when replayed in a fresh process");
        assertReplayable(f);
    }

    @Test
    void aReplyWhoseTensorBytesDoNotMatchItsShapeIsAMalformedFrameNotAStrayPrint() throws Exception {
        Path engine = tmp.resolve("engine.sh");
        java.nio.file.Files.writeString(engine, "read line\nprintf '%s\\n' '{\"id\":1,\"ok\":true,\"result\":"
                + "{\"protocol\":\"mtp-oracle-wire/1\",\"engine\":{\"name\":\"toy\",\"version\":\"1\"},"
                + "\"profiles\":[{\"label\":\"toy\",\"options\":{},\"tolerance\":{\"name\":\"f32\","
                + "\"tokenGap\":1e-4,\"kvNmse\":1e-9,\"hiddenNmse\":0}}],\"capabilities\":{}}}'\nread line\n"
                + "printf '%s\\n' '{\"id\":2,\"ok\":true,\"result\":{\"model\":1},\"tensors\":[{\"dtype\":"
                + "\"F32\",\"shape\":[2],\"nbytes\":4}]}'\nsleep 5\n");
        ExecBackend b = new ExecBackend("sh '" + engine + "'", Duration.ofSeconds(10));
        MtpModel model = FixtureRecipe.named("tiny").load(TestEngines.fixtureCache());
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> b.load(model, Map.of()))
                .hasMessageContaining("reply frame is malformed").hasMessageContaining("nbytes = 4, expected 8")
                .hasMessageNotContaining("log to stderr");
    }
}
