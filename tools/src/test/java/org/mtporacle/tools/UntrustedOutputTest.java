package org.mtporacle.tools;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.mtporacle.api.Tolerance;
import org.mtporacle.conformance.chain.Action;
import org.mtporacle.conformance.report.ConformReport;
import org.mtporacle.conformance.report.ReportFiles;
import org.mtporacle.conformance.trace.ChainTrace;
import org.mtporacle.conformance.trace.TraceFiles;

/** Text from a file cannot print a line of its own: a fake stack frame or a fake "passed" line stays inside its value. */
class UntrustedOutputTest {
    private static final String FORGED = "tiny\n    at org.mtporacle.Fake.frame(Fake.java:1)\nok   1 golden trace(s): 1 passed";

    private static void assertNoForgedLine(String out) {
        assertThat(out.lines()).noneMatch(l -> l.strip().startsWith("at org.mtporacle.Fake"))
                .noneMatch(l -> l.startsWith("ok   1 golden"));
    }

    @Test
    void inspectOfATraceKeepsEveryValueOnItsLine(@TempDir Path dir) throws Exception {
        Path f = dir.resolve("t.json");
        TraceFiles.write(new ChainTrace(ChainTrace.FORMAT, FORGED, "", "reference", Map.of("k", FORGED), Tolerance.EXACT, 5,
                List.of(new Action.Append(List.of(-1), false)), null, 1), f);
        Cli r = Cli.run("inspect", f.toString());
        assertThat(r.exit()).as(r.out()).isZero();
        assertThat(r.out()).contains("tiny\\n    at org.mtporacle.Fake.frame");
        assertNoForgedLine(r.out());
    }

    @Test
    void aBadTraceIsOneLineOfError(@TempDir Path dir) throws Exception {
        Path f = dir.resolve("t.json");
        Files.writeString(f, "{\"format\": \"mtp-oracle-chain/1\", \"fixture\": \"x\", \"backend\": \"r\", "
                + "\"tolerance\": \"f32\", \"seed\": 1, \"actions\": [{\"op\": " + TraceJson.quote(FORGED) + "}]}");
        Cli r = Cli.run("replay", f.toString());
        assertThat(r.exit()).isEqualTo(MtpCommand.EXIT_ERROR);
        assertThat(r.out().strip().lines()).hasSize(1);
        assertNoForgedLine(r.out());
    }

    @Test
    void mergeOfAShardReportKeepsEveryValueOnItsLine(@TempDir Path dir) throws Exception {
        ConformReport.Stats s = new ConformReport.Stats(1, 0, 0, 0, 0, 0, 0);
        ConformReport r = new ConformReport("t", "now", 1, 2, List.of("1/1"), FORGED, List.of(new ConformReport.Entry(
                "reference", FORGED, Map.of(), "tiny", "", "", Tolerance.F32, FORGED, ConformReport.Status.FAILED, "", 2, 1, 1,
                s, List.of(new ConformReport.FailureRecord(1, 2, List.of(FORGED), 0, "DRAFT_TOKEN", FORGED, Map.of(),
                        FORGED)))));
        Path shard = ReportFiles.write(r, dir.resolve("shard"));
        Cli m = Cli.run("conform", "merge", "--report", dir.resolve("merged").toString(), shard.toString());
        assertThat(m.exit()).as(m.out()).isEqualTo(MtpCommand.EXIT_FAILED);
        assertNoForgedLine(m.out());
        assertThat(Files.readString(dir.resolve("merged/report.html"))).doesNotContain("<script")
                .contains("tiny\\n    at"); // shown escaped, like every control character from a file
    }

    /** JSON string quoting for a hand-written trace. */
    private static final class TraceJson {
        static String quote(String s) {
            return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n") + "\"";
        }
    }
}
