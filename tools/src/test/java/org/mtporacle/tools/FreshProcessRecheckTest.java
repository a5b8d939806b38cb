package org.mtporacle.tools;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.mtporacle.conformance.trace.ChainTrace;
import org.mtporacle.conformance.trace.TraceFiles;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A fault of an exec: engine's history (its 3rd draft and later drift): the campaign shrinks the failure in the
 * process that has the history, re-runs the shrunk chain in a fresh process, where it passes, and the report says the
 * failure did not reproduce there; the trace it wrote still replays.
 */
class FreshProcessRecheckTest {
    @TempDir
    Path dir;

    /** {@code mtp serve-wire --backend drifting-late} in a JVM of its own, as an exec: backend. */
    private static String engine() {
        List<String> words = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java")
                .toString(), "--add-modules", "jdk.incubator.vector", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                "-Xss4m")); // C1 only: the engine's work is small, its JVM's start is what costs
        if (System.getProperty("mtp.cache") != null) {
            words.add("-Dmtp.cache=" + System.getProperty("mtp.cache")); // the fixtures other tests wrote
        }
        words.addAll(List.of("-cp", System.getProperty("java.class.path"), MtpCommand.class.getName(), "serve-wire",
                "--backend", "drifting-late"));
        StringBuilder b = new StringBuilder("exec:");
        for (String w : words) {
            b.append(b.length() == 5 ? "" : " ").append('\'').append(w.replace("'", "'\"'\"'")).append('\'');
        }
        return b.toString();
    }

    @Test
    void aFailureThatDoesNotReproduceInAFreshProcessIsReportedSoAndItsTraceReplays() throws Exception {
        String backend = engine();
        Path report = dir.resolve("report");
        Cli c = Cli.run("conform", "--backend", backend, "--fixture", "tiny", "--chains", "1", "--seed", "3",
                "--max-actions", "12", "--report", report.toString());
        assertThat(c.exit()).as(c.out()).isEqualTo(1);
        assertThat(c.out()).contains("did not fail when replayed in a fresh process");

        JsonNode json = new ObjectMapper().readTree(report.resolve("report.json").toFile());
        List<JsonNode> failures = json.findValues("failures").stream().flatMap(f -> f.valueStream()).toList();
        assertThat(failures).hasSize(1);
        JsonNode f = failures.getFirst();
        assertThat(f.get("message").asText()).contains("did not fail when replayed in a fresh process");
        assertThat(f.get("chainSeed").asLong()).isNotZero();

        ChainTrace t = TraceFiles.read(Path.of(f.get("trace").asText())); // refuses an action outside the chain
        assertThat(t.divergence().actionIndex()).isBetween(0, t.actions().size() - 1);
        assertThat(t.actions().size()).as("shrunk in the process with the history").isLessThan(
                t.originalLength());
        Cli replay = Cli.run("replay", "--backend", backend, f.get("trace").asText());
        assertThat(replay.exit()).as(replay.out()).isIn(MtpCommand.EXIT_OK, MtpCommand.EXIT_FAILED);
        System.out.println(replay.out());
    }
}
