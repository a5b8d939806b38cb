package org.mtporacle.tools;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.mtporacle.api.MtpBackend;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.Tolerance;
import org.mtporacle.conformance.chain.Action;
import org.mtporacle.conformance.chain.ContextSource;
import org.mtporacle.conformance.trace.ChainTrace;
import org.mtporacle.conformance.trace.TraceFiles;
import org.mtporacle.wire.ExecBackend;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A trace replays from any folder: an exec: run records where the engine's command ran, and a relative {@code --report}
 * still prints and writes absolute trace paths.
 */
class ReplayAnywhereTest {
    @TempDir
    Path dir;

    @Test
    void theTracesEngineStartsInTheFolderItWasRecordedIn() throws Exception {
        Files.writeString(dir.resolve("engine.sh"), "read line\nprintf '%s\\n' '{\"id\":1,\"ok\":true,\"result\":"
                + "{\"protocol\":\"mtp-oracle-wire/1\",\"engine\":{\"name\":\"toy\",\"version\":\"1\"},\"profiles\":"
                + "[{\"label\":\"toy\",\"options\":{},\"tolerance\":{\"name\":\"f32\",\"tokenGap\":1e-4,\"kvNmse\":1e-9,"
                + "\"hiddenNmse\":0}}],\"capabilities\":{}}}'\nread line\n");
        String backend = "exec:sh engine.sh"; // relative to the folder the run was started in
        Path file = dir.resolve("trace.json");
        TraceFiles.write(new ChainTrace(ChainTrace.FORMAT, "tiny", "", backend, Map.of(), Tolerance.F32,
                ContextSource.SYNTHETIC, 1, List.of(new Action.Append(List.of(-1), false)), null, 1,
                dir.toAbsolutePath().toString()), file);
        ChainTrace t = TraceFiles.read(file);
        assertThat(t.workingDirectory()).isEqualTo(dir.toAbsolutePath().toString());

        ExecBackend here = new ExecBackend("sh engine.sh", Duration.ofSeconds(10)); // this test's folder: no engine
        assertThatThrownBy(here::requireHandshake).isInstanceOf(MtpException.class);
        MtpBackend there = ReplayCommand.inRecordedDirectory(new ExecBackend("sh engine.sh", Duration.ofSeconds(10)),
                t);
        assertThat(there.availability().reason()).contains("toy 1");
        MtpBackend other = new ExecBackend("sh other.sh", Duration.ofSeconds(10));
        assertThat(ReplayCommand.inRecordedDirectory(other, t)).isSameAs(other); // only the trace's own command
    }

    @Test
    void aRelativeReportFolderGivesAbsoluteTracePathsInTheConsoleAndTheReportFiles() throws Exception {
        Path relative = Path.of("").toAbsolutePath().relativize(dir.toAbsolutePath()).resolve("rel-report");
        assertThat(relative.isAbsolute()).isFalse();
        Cli c = Cli.run("conform", "--backend", "drifting", "--fixture", "tiny", "--chains", "1", "--report",
                relative.toString());
        assertThat(c.exit()).as(c.out()).isEqualTo(1);
        Path report = dir.toAbsolutePath().normalize().resolve("rel-report");
        String traces = report.resolve("traces").toString();
        assertThat(c.out()).as(c.out()).contains("mtp replay --backend drifting " + traces + "/chain-")
                .contains("report: " + report.resolve("report.json"));
        var json = new com.fasterxml.jackson.databind.ObjectMapper().readTree(report.resolve("report.json").toFile());
        List<String> written = json.findValuesAsText("trace");
        assertThat(written).isNotEmpty().allSatisfy(t -> assertThat(Path.of(t)).isAbsolute().exists()
                .startsWith(report));
        assertThat(Files.readString(report.resolve("report.html"))).contains("mtp replay --backend drifting "
                + traces + "/chain-");
        Cli replay = Cli.run("replay", "--backend", "drifting", written.getFirst());
        assertThat(replay.exit()).as(replay.out()).isEqualTo(1); // the trace replays to its divergence
    }
}
