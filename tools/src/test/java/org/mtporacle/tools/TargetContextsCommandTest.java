package org.mtporacle.tools;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.mtporacle.api.HiddenTap;
import org.mtporacle.conformance.chain.ContextSource;
import org.mtporacle.conformance.trace.ChainTrace;
import org.mtporacle.conformance.trace.TraceFiles;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** {@code --contexts target} on conform, replay, tck and golden record: the kit on a reference target's taps. */
class TargetContextsCommandTest {
    private static final String POST = "contexts: target reference (tap post)";

    @TempDir
    Path dir;

    @Test
    void conformOnATargetFixtureTakesItsContextsFromTheTargetAndSaysSo() throws Exception {
        Cli r = Cli.run("conform", "--backend", "reference", "--fixture", "tiny-target", "--contexts", "target",
                "--chains", "4", "--report", dir.toString(), "--quiet");
        assertThat(r.exit()).as(r.out()).isZero();
        assertThat(r.out()).contains("mtp conform: seed 1, 4 chains per entry; " + POST)
                .containsPattern("reference +tiny-target +exact +passed");
        JsonNode json = new ObjectMapper().readTree(dir.resolve("report.json").toFile());
        assertThat(json.get("contexts").asText()).startsWith("target reference (tap post)").contains("§13.4");
        assertThat(Files.readString(dir.resolve("report.html"))).contains("target reference (tap post)");
    }

    @Test
    void targetContextsWithoutAFixtureRunTheFixturesThatHaveATarget() throws Exception {
        Cli r = Cli.run("conform", "--backend", "reference", "--contexts", "target", "--tap", "pre", "--chains", "1",
                "--max-actions", "6", "--report", dir.toString(), "--quiet", "--json");
        assertThat(r.exit()).as(r.out()).isZero();
        JsonNode json = new ObjectMapper().readTree(dir.resolve("report.json").toFile());
        assertThat(json.get("contexts").asText()).startsWith("target reference (tap pre)");
        assertThat(json.at("/plan/fixtures")).extracting(JsonNode::asText)
                .containsExactly("tiny-target", "small-target", "tiny-moe-target");
    }

    @Test
    void targetContextsOnAFixtureWithoutATargetAreAUsageErrorNamingIt() {
        Cli r = Cli.run("conform", "--backend", "reference", "--fixture", "tiny-target", "--fixture", "tiny",
                "--contexts", "target", "--report", dir.toString());
        assertThat(r.exit()).isEqualTo(MtpCommand.EXIT_USAGE);
        assertThat(r.out()).contains("--contexts target: fixture tiny has no target (fixtures with one: tiny-target,");
        assertThat(dir.resolve("report.json")).doesNotExist();
        Cli tap = Cli.run("conform", "--backend", "reference", "--tap", "pre", "--report", dir.toString());
        assertThat(tap.exit()).isEqualTo(MtpCommand.EXIT_USAGE);
        assertThat(tap.out()).contains("--tap 'pre': a tap needs --contexts target");
        Cli bad = Cli.run("conform", "--contexts", "real", "--report", dir.toString());
        assertThat(bad.exit()).isEqualTo(MtpCommand.EXIT_USAGE);
        assertThat(bad.out()).contains("--contexts 'real': expected synthetic or target");
    }

    @Test
    void aFailingChainsTraceRecordsTheTapAndReplaysToTheSameDivergence() throws Exception {
        Cli r = Cli.run("conform", "--backend", "drifting", "--fixture", "tiny-target", "--contexts", "target",
                "--tap", "pre", "--chains", "2", "--report", dir.toString(), "--quiet");
        assertThat(r.exit()).as(r.out()).isEqualTo(MtpCommand.EXIT_FAILED);
        List<Path> traces;
        try (var s = Files.list(dir.resolve("traces"))) {
            traces = s.toList();
        }
        assertThat(traces).isNotEmpty();
        ChainTrace t = TraceFiles.read(traces.getFirst());
        assertThat(t.contexts()).isEqualTo(new ContextSource.Target(HiddenTap.PRE_NORM));
        Cli replay = Cli.run("replay", traces.getFirst().toString(), "--backend", "drifting");
        assertThat(replay.exit()).as(replay.out()).isEqualTo(MtpCommand.EXIT_FAILED);
        assertThat(replay.out()).contains("contexts: target reference (tap pre)")
                .contains("diverged at action " + t.divergence().actionIndex() + " (")
                .contains(t.divergence().message());
    }

    @Test
    void aTraceAskingForTargetContextsOnAFixtureWithoutATargetIsBadInput() throws Exception {
        Path trace = dir.resolve("t.json");
        TraceFiles.write(new ChainTrace(ChainTrace.FORMAT, "tiny", "", "reference", java.util.Map.of(),
                org.mtporacle.api.Tolerance.EXACT, new ContextSource.Target(HiddenTap.POST_NORM), 5,
                List.of(new org.mtporacle.conformance.chain.Action.Append(List.of(-1), false)), null, 1), trace);
        Cli r = Cli.run("replay", trace.toString(), "--backend", "reference");
        assertThat(r.exit()).isEqualTo(MtpCommand.EXIT_ERROR);
        assertThat(r.out()).contains("contexts 'target', but fixture tiny has no target");
    }

    @Test
    void theTckRunsItsLockstepRulesOnTheTargetFixtures() throws Exception {
        Cli r = Cli.run("tck", "--backend", "reference", "--contexts", "target", "--chains", "1", "--prefill-split",
                "12", "--report", dir.toString());
        assertThat(r.exit()).as(r.out()).isZero();
        assertThat(r.out()).contains("fixtures tiny-target and tiny-target-q4")
                .contains("contexts of the lockstep rules: target reference (tap post)");
        JsonNode json = new ObjectMapper().readTree(dir.resolve("report.json").toFile());
        assertThat(json.get("fixture").asText()).isEqualTo("tiny-target");
        assertThat(json.get("quantizedFixture").asText()).isEqualTo("tiny-target-q4");
        assertThat(json.get("contexts").asText()).startsWith("target reference (tap post)");
        assertThat(json.get("failed").asInt()).isZero();
        Cli wrong = Cli.run("tck", "--backend", "reference", "--contexts", "target", "--quantized-fixture", "tiny-q4",
                "--report", dir.resolve("w").toString());
        assertThat(wrong.exit()).isEqualTo(MtpCommand.EXIT_USAGE);
        assertThat(wrong.out()).contains("fixture tiny-q4 has no target");
    }

    @Test
    void goldenRecordStoresTheTargetsTapsAndTheGoldenVerifiesWithoutATarget() throws Exception {
        Cli r = Cli.run("golden", "record", "--fixture", "tiny-target", "--scenario", "lifecycle", "--contexts",
                "target", "--out", dir.toString(), "--quiet");
        assertThat(r.exit()).as(r.out()).isZero();
        Path golden = dir.resolve("tiny-target-lifecycle-tap-post.json");
        assertThat(golden).exists();
        JsonNode json = new ObjectMapper().readTree(golden.toFile());
        assertThat(json.at("/options/contexts").asText()).isEqualTo("tap");
        assertThat(json.at("/options/tap").asText()).isEqualTo("post-norm");
        Cli v = Cli.run("golden", "verify", golden.toString());
        assertThat(v.exit()).as(v.out()).isZero();
        Cli none = Cli.run("golden", "record", "--fixture", "tiny", "--contexts", "target", "--out",
                dir.resolve("n").toString());
        assertThat(none.exit()).isEqualTo(MtpCommand.EXIT_USAGE);
        assertThat(none.out()).contains("fixture tiny has no target");
    }
}
