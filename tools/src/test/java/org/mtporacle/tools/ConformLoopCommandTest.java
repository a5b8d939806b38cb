package org.mtporacle.tools;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code mtp conform --loop}: loop chains (target and drafter together) in an ordinary report, their traces replayed
 * by {@code mtp replay}, and the option's usage errors.
 */
class ConformLoopCommandTest {
    @TempDir
    Path dir;

    @Test
    void theReferencePassesItsOwnLoopChainsOnThePreTap() throws Exception {
        Cli r = Cli.run("conform", "--loop", "--tap", "pre", "--backend", "reference", "--fixture", "tiny-target",
                "--chains", "3", "--report", dir.toString());
        assertThat(r.exit()).as(r.out()).isZero();
        JsonNode json = new ObjectMapper().readTree(dir.resolve("report.json").toFile());
        JsonNode e = json.get("entries").get(0);
        assertThat(e.get("status").asText()).isEqualTo("PASSED");
        assertThat(e.get("chainsRun").asInt()).isEqualTo(3);
        assertThat(e.get("stats").get("comparedTokens").asLong()).isPositive();
        assertThat(e.get("stats").get("comparedCheckpoints").asLong()).isPositive();
        assertThat(json.get("contexts").asText()).contains("loop chains").contains("pre-norm tap");
        assertThat(r.out()).as("the reproduce line runs loop chains again").contains("--loop --tap pre");
    }

    @Test
    void aDriftingTargetFailsWithATraceThatReplays() throws Exception {
        Cli r = Cli.run("conform", "--loop", "--backend", "drifting", "--fixture", "tiny-target", "--chains", "2",
                "--report", dir.resolve("d").toString());
        assertThat(r.exit()).as(r.out()).isEqualTo(MtpCommand.EXIT_FAILED);
        JsonNode f = new ObjectMapper().readTree(dir.resolve("d/report.json").toFile()).get("entries").get(0)
                .get("failures").get(0);
        assertThat(f.get("details").get("group").asText()).isEqualTo("target");
        assertThat(f.get("shrunkActions").size()).as("shrunk: %s", f).isLessThanOrEqualTo(4);
        String trace = f.get("trace").asText();
        Cli still = Cli.run("replay", trace, "--backend", "drifting");
        assertThat(still.exit()).as(still.out()).isEqualTo(MtpCommand.EXIT_FAILED);
        assertThat(still.out()).contains("replaying loop trace").contains("diverged at action").contains("target");
        String recordedOn = new ObjectMapper().readTree(Path.of(trace).toFile()).get("modelIdentity").asText();
        assertThat(still.out()).as("replayed on the target the trace was recorded on")
                .contains("(target " + org.mtporacle.api.UntrustedText.digestPrefix(recordedOn) + ")");
        Cli fixed = Cli.run("replay", trace, "--backend", "reference");
        assertThat(fixed.exit()).as(fixed.out()).isZero();
    }

    @Test
    void loopWithTargetOrTargetContextsIsAUsageError() {
        Cli both = Cli.run("conform", "--loop", "--target", "--backend", "reference", "--report", dir.toString());
        assertThat(both.exit()).as(both.out()).isEqualTo(MtpCommand.EXIT_USAGE);
        Cli contexts = Cli.run("conform", "--loop", "--contexts", "target", "--backend", "reference", "--report",
                dir.toString());
        assertThat(contexts.exit()).as(contexts.out()).isEqualTo(MtpCommand.EXIT_USAGE);
        Cli tap = Cli.run("conform", "--loop", "--tap", "middle", "--backend", "reference", "--report",
                dir.toString());
        assertThat(tap.exit()).as(tap.out()).isEqualTo(MtpCommand.EXIT_USAGE);
        Cli kv = Cli.run("conform", "--loop", "--kv", "drop", "--backend", "reference", "--report", dir.toString());
        assertThat(kv.exit()).as(kv.out()).isEqualTo(MtpCommand.EXIT_USAGE);
        assertThat(kv.out()).contains("expected keep or rebuild");
        Cli kvAlone = Cli.run("conform", "--target", "--kv", "rebuild", "--backend", "reference", "--report",
                dir.toString());
        assertThat(kvAlone.exit()).as(kvAlone.out()).isEqualTo(MtpCommand.EXIT_USAGE);
        assertThat(kvAlone.out()).contains("--kv: only with --loop");
    }

    /** Under the rebuild policy the report says so, and the reproduce line and a failure's trace keep it. */
    @Test
    void theRebuildPolicyIsDeclaredInTheReportTheReproduceLineAndTheTrace() throws Exception {
        Cli r = Cli.run("conform", "--loop", "--kv", "rebuild", "--backend", "reference", "--fixture",
                "tiny-target", "--chains", "2", "--report", dir.toString());
        assertThat(r.exit()).as(r.out()).isZero();
        JsonNode json = new ObjectMapper().readTree(dir.resolve("report.json").toFile());
        assertThat(json.get("contexts").asText()).contains("drafter KV rebuild");
        assertThat(r.out()).contains("--fixture tiny-target --loop --kv rebuild\n");
        Cli d = Cli.run("conform", "--loop", "--kv", "rebuild", "--backend", "drifting", "--fixture", "tiny-target",
                "--chains", "1", "--report", dir.resolve("d").toString());
        assertThat(d.exit()).as(d.out()).isEqualTo(MtpCommand.EXIT_FAILED);
        String trace = new ObjectMapper().readTree(dir.resolve("d/report.json").toFile()).get("entries").get(0)
                .get("failures").get(0).get("trace").asText();
        assertThat(new ObjectMapper().readTree(Path.of(trace).toFile()).get("kv").asText()).isEqualTo("rebuild");
        Cli replay = Cli.run("replay", trace, "--backend", "reference");
        assertThat(replay.exit()).as(replay.out()).isZero();
        assertThat(replay.out()).contains("drafter KV rebuild");
    }
}
