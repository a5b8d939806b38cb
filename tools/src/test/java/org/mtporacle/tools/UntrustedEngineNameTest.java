package org.mtporacle.tools;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.mtporacle.api.Tolerance;
import org.mtporacle.conformance.chain.Action;
import org.mtporacle.conformance.report.ConformReport;
import org.mtporacle.conformance.report.ReportFiles;
import org.mtporacle.conformance.trace.ChainTrace;
import org.mtporacle.conformance.trace.TraceFiles;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A file never chooses a command, and what a file or an engine says is printed escaped: {@code mtp replay} runs only
 * the backend the command line names (or, with {@code --trace-backend}, the trace's, printed first).
 */
class UntrustedEngineNameTest {
    private static final List<Action> CHAIN = List.of(new Action.Append(List.of(-1), false), new Action.Prefill(4, 1),
            new Action.Draft(3, 2, false), new Action.Commit(Action.Acceptance.FULL, 3));

    @TempDir
    Path dir;

    private Path trace(String backend, Map<String, String> options) throws Exception {
        Path f = dir.resolve("t.json");
        TraceFiles.write(new ChainTrace(ChainTrace.FORMAT, "tiny", "", backend, options, Tolerance.EXACT, 5, CHAIN,
                null, 4), f);
        return f;
    }

    @Test
    void replayNeverRunsTheCommandATraceNamesUnlessTheCommandLineSaysSo() throws Exception {
        Path marker = dir.resolve("ran");
        Path t = trace("exec:touch " + marker, Map.of());
        Cli r = Cli.run("replay", t.toString());
        assertThat(Files.exists(marker)).as("the trace's command ran").isFalse();
        assertThat(r.exit()).as(r.out()).isEqualTo(MtpCommand.EXIT_USAGE);
        assertThat(r.out()).contains("--backend").contains("--trace-backend").contains("exec:touch");

        Cli ok = Cli.run("replay", t.toString(), "--backend", "reference");
        assertThat(Files.exists(marker)).isFalse();
        assertThat(ok.exit()).as(ok.out()).isZero();

        Cli confirmed = Cli.run("replay", t.toString(), "--trace-backend");
        assertThat(confirmed.out()).contains("running the trace's backend 'exec:touch");
        assertThat(Files.exists(marker)).as("--trace-backend runs the trace's engine").isTrue();
    }

    @Test
    void replayPrintsTheTracesOptionsEscaped() throws Exception {
        Path t = trace("reference", Map.of("k", "v\u001b[2J\nok   forged line"));
        Cli r = Cli.run("replay", t.toString(), "--backend", "reference");
        assertThat(r.out()).doesNotContain("\u001b").contains("\\u001b[2J\\nok   forged line");
        assertThat(r.out().lines()).noneMatch(l -> l.startsWith("ok   forged"));
    }

    @Test
    void tckPrintsAnEnginesHandshakeLabelAndOptionsEscaped() throws Exception {
        Path engine = dir.resolve("engine.sh");
        Files.writeString(engine, "read line\nprintf '%s\\n' '{\"id\":1,\"ok\":true,\"result\":{\"protocol\":"
                + "\"mtp-oracle-wire/1\",\"engine\":{\"name\":\"toy\",\"version\":\"1\"},\"profiles\":[{\"label\":"
                + "\"toy\\u001b[31m\",\"options\":{\"o\":\"x\\u001b[2J\\u202e\"},\"tolerance\":{\"name\":\"f32\","
                + "\"tokenGap\":1e-4,\"kvNmse\":1e-9,\"hiddenNmse\":0}}],\"capabilities\":{}}}'\n");
        Cli r = Cli.run("tck", "--backend", "exec:sh " + engine, "--chains", "1", "--report",
                dir.resolve("tck").toString());
        assertThat(r.out()).contains("toy\\u001b[31m").doesNotContain("\u001b").doesNotContain("\u202e");
    }

    @Test
    void mergeOfAReportWhoseTraceIsARootOrHoldsANulIsAFailureNotAnInternalError() throws Exception {
        ConformReport.Stats s = new ConformReport.Stats(1, 0, 0, 0, 0, 0, 0);
        for (String trace : List.of("/", "a\u0000b")) {
            ConformReport r = new ConformReport("t", "now", 1, 2, List.of("1/1"), "c", List.of(new ConformReport.Entry(
                    "reference", "reference", Map.of(), "tiny", "", "", Tolerance.F32, "", ConformReport.Status.FAILED,
                    "", 2, 1, 1, s, List.of(new ConformReport.FailureRecord(1, 2, List.of("append [-1]"), 0,
                    "DRAFT_TOKEN", "m", Map.of(), trace)))));
            Path shard = ReportFiles.write(r, dir.resolve("shard" + trace.length()));
            Cli m = Cli.run("conform", "merge", "--report", dir.resolve("merged" + trace.length()).toString(),
                    shard.toString());
            assertThat(m.exit()).as(m.out()).isEqualTo(MtpCommand.EXIT_FAILED);
        }
    }

    @Test
    void goldenVerifyCountsAnEngineThatCrashesAsAFailureOfThatEngineNotAMalformedGolden() throws Exception {
        Path engine = dir.resolve("crash.sh");
        Files.writeString(engine, "read line\nprintf '%s\\n' '{\"id\":1,\"ok\":true,\"result\":{\"protocol\":"
                + "\"mtp-oracle-wire/1\",\"engine\":{\"name\":\"toy\",\"version\":\"1\"},\"profiles\":[{\"label\":"
                + "\"toy\",\"options\":{},\"tolerance\":{\"name\":\"f32\",\"tokenGap\":1e-4,\"kvNmse\":1e-9,"
                + "\"hiddenNmse\":0}}],\"capabilities\":{}}}'\necho 'engine: crashing' >&2\nexit 9\n");
        Path golden = Path.of(System.getProperty("mtp.repo.root", "..")).resolve("golden/tiny-lifecycle.json");
        Cli r = Cli.run("golden", "verify", golden.toString(), "--backend", "exec:sh " + engine, "--quiet");
        assertThat(r.exit()).as(r.out()).isEqualTo(MtpCommand.EXIT_FAILED);
        assertThat(r.out()).contains("exited with status 9").contains("1 failed").doesNotContain("BAD ");
    }
}
