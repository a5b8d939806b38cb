package org.mtporacle.tools;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/** {@code mtp conform target}: target lockstep entries for backends that run the target, in an ordinary report. */
class ConformTargetCommandTest {
    @TempDir
    Path dir;

    @Test
    void theReferenceTargetPassesItsOwnTargetChainsAndTheReportSaysWhatWasCompared() throws Exception {
        Cli r = Cli.run("conform", "target", "--backend", "reference", "--fixture", "tiny-target", "--chains", "3",
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
    void aFixtureWithoutATargetIsAUsageError() {
        Cli r = Cli.run("conform", "target", "--backend", "reference", "--fixture", "tiny", "--report",
                dir.toString());
        assertThat(r.exit()).as(r.out()).isEqualTo(MtpCommand.EXIT_USAGE);
        assertThat(r.out()).contains("tiny").contains("tiny-target");
    }
}
