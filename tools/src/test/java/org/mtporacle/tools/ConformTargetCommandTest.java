package org.mtporacle.tools;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/** {@code mtp conform --target}: target lockstep entries for backends that run the target, in an ordinary report. */
class ConformTargetCommandTest {
    @TempDir
    Path dir;

    @Test
    void theReferenceTargetPassesItsOwnTargetChainsAndTheReportSaysWhatWasCompared() throws Exception {
        Cli r = Cli.run("conform", "--target", "--backend", "reference", "--fixture", "tiny-target", "--chains", "3",
                "--report", dir.toString());
        assertThat(r.exit()).as(r.out()).isZero();
        JsonNode json = new ObjectMapper().readTree(dir.resolve("report.json").toFile());
        JsonNode e = json.get("entries").get(0);
        assertThat(e.get("fixture").asText()).isEqualTo("tiny-target");
        assertThat(e.get("status").asText()).isEqualTo("PASSED");
        assertThat(e.get("chainsRun").asInt()).isEqualTo(3);
        assertThat(e.get("stats").get("comparedTokens").asLong()).as("greedy tokens compared").isPositive();
        assertThat(e.get("stats").get("comparedCheckpoints").asLong()).as("row states compared").isPositive();
        assertThat(json.get("contexts").asText()).contains("target rows");
    }

    @Test
    void aDriftingTargetFailsWithAShrunkTraceAndAnAbsentOneIsUnavailable() throws Exception {
        Cli r = Cli.run("conform", "--target", "--backend", "drifting", "--fixture", "tiny-target", "--chains", "2",
                "--report", dir.resolve("d").toString());
        assertThat(r.exit()).as(r.out()).isEqualTo(MtpCommand.EXIT_FAILED);
        JsonNode e = new ObjectMapper().readTree(dir.resolve("d/report.json").toFile()).get("entries").get(0);
        assertThat(e.get("status").asText()).isEqualTo("FAILED");
        JsonNode f = e.get("failures").get(0);
        assertThat(f.get("shrunkActions").size()).as("shrunk: %s", f).isLessThanOrEqualTo(3);
        assertThat(java.nio.file.Path.of(f.get("trace").asText())).exists();
        Cli absent = Cli.run("conform", "--target", "--backend", "absent", "--fixture", "tiny-target", "--report",
                dir.resolve("a").toString());
        assertThat(absent.exit()).as(absent.out()).isEqualTo(MtpCommand.EXIT_ERROR);
    }

    @Test
    void aFixtureWithoutATargetIsAUsageError() {
        Cli r = Cli.run("conform", "--target", "--backend", "reference", "--fixture", "tiny", "--report",
                dir.toString());
        assertThat(r.exit()).as(r.out()).isEqualTo(MtpCommand.EXIT_USAGE);
        assertThat(r.out()).contains("tiny").contains("tiny-target");
    }
}
