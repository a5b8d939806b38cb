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

    /**
     * A calibration run (every numeric threshold off) is another run than the default one, so the command it prints to
     * run the campaign again says so, as it says the timeout given before or after the subcommand; the report keeps
     * both in its plan.
     */
    @Test
    void theReproduceLineOfACalibrationRunCalibratesAgainWithTheSameTimeout() throws Exception {
        Cli r = Cli.run("--timeout", "90", "conform", "--target", "--calibrate", "--backend", "reference",
                "--fixture", "tiny-target", "--chains", "1", "--max-actions", "4", "--report", dir.toString());
        assertThat(r.exit()).as(r.out()).isZero();
        assertThat(r.out()).contains("reproduce: mtp conform --seed 1 --chains 1 --max-actions 4 --backend reference "
                + "--fixture tiny-target --target --calibrate --timeout 90");
        JsonNode plan = new ObjectMapper().readTree(dir.resolve("report.json").toFile()).get("plan");
        assertThat(plan.get("options").toString()).isEqualTo("[\"--calibrate\",\"--timeout\",\"90\"]");
        Cli plain = Cli.run("conform", "--target", "--backend", "reference", "--fixture", "tiny-target", "--chains",
                "1", "--max-actions", "4", "--report", dir.resolve("plain").toString());
        assertThat(plain.out()).as(plain.out()).contains("--fixture tiny-target --target\n")
                .doesNotContain("--calibrate").doesNotContain("--timeout");
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
    void shardsOfATargetCampaignMergeIntoTheWholeCampaign() throws Exception {
        Cli whole = Cli.run("conform", "--target", "--backend", "reference", "--fixture", "tiny-target", "--chains",
                "3", "--report", dir.resolve("whole").toString(), "--quiet");
        assertThat(whole.exit()).as(whole.out()).isZero();
        for (String k : new String[] {"1", "2"}) {
            Cli shard = Cli.run("conform", "--target", "--backend", "reference", "--fixture", "tiny-target",
                    "--chains", "3", "--shard", k + "/2", "--report", dir.resolve("shard" + k).toString(), "--quiet");
            assertThat(shard.exit()).as(shard.out()).isZero();
            JsonNode part = new ObjectMapper().readTree(dir.resolve("shard" + k + "/report.json").toFile());
            assertThat(part.get("shards").get(0).asText()).isEqualTo(k + "/2");
            assertThat(part.get("entries").get(0).get("chainsRun").asInt()).as("chains 0 of 0-1, 1-2 of 1-3")
                    .isEqualTo(k.equals("1") ? 1 : 2);
        }
        Cli merged = Cli.run("conform", "merge", dir.resolve("shard1").toString(), dir.resolve("shard2").toString(),
                "--report", dir.resolve("merged").toString());
        assertThat(merged.exit()).as(merged.out()).isZero();
        JsonNode m = new ObjectMapper().readTree(dir.resolve("merged/report.json").toFile()).get("entries").get(0);
        JsonNode w = new ObjectMapper().readTree(dir.resolve("whole/report.json").toFile()).get("entries").get(0);
        assertThat(m.get("chainsRun").asInt()).isEqualTo(3);
        assertThat(m.get("status").asText()).isEqualTo("PASSED");
        for (String stat : new String[] {"comparedTokens", "comparedCheckpoints", "badCalls"}) {
            assertThat(m.get("stats").get(stat).asLong()).as("%s: the shards ran the whole campaign's chains", stat)
                    .isEqualTo(w.get("stats").get(stat).asLong());
        }
    }

    @Test
    void aFixtureWithoutATargetIsAUsageError() {
        Cli r = Cli.run("conform", "--target", "--backend", "reference", "--fixture", "tiny", "--report",
                dir.toString());
        assertThat(r.exit()).as(r.out()).isEqualTo(MtpCommand.EXIT_USAGE);
        assertThat(r.out()).contains("tiny").contains("tiny-target");
    }
}
