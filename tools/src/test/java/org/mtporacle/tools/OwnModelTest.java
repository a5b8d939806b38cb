package org.mtporacle.tools;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code --model DIR} in conform, tck and golden record: a checkpoint written on disk (here by {@code mtp fixture},
 * a raw Hugging Face layout) goes through the lockstep kit and the goldens like a bundled fixture.
 */
class OwnModelTest {
    @TempDir
    Path dir;

    private Path fixture(String preset, String name) {
        Path out = dir.resolve(name);
        Cli f = Cli.run("fixture", "--preset", preset, "--seed", "41", "--out", out.toString(), "--quiet");
        assertThat(f.exit()).as(f.out()).isZero();
        return out;
    }

    @Test
    void aDrafterCheckpointRunsInConformTckAndGoldenRecord() throws Exception {
        Path model = fixture("tiny", "my-drafter");
        Path report = dir.resolve("conform");
        Cli c = Cli.run("conform", "--model", model.toString(), "--backend", "reference", "--chains", "3",
                "--quiet", "--report", report.toString());
        assertThat(c.exit()).as(c.out()).isZero();
        JsonNode json = new ObjectMapper().readTree(report.resolve("report.json").toFile());
        assertThat(json.get("entries")).hasSize(1); // the user's model only, not the bundled fixtures
        assertThat(json.get("entries").get(0).get("fixture").asText())
                .isEqualTo("model:" + model.toAbsolutePath().normalize());
        assertThat(json.get("entries").get(0).get("status").asText()).isEqualTo("PASSED");

        Cli t = Cli.run("tck", "--backend", "reference", "--model", model.toString(), "--rule",
                "required_s5_8_commitKeepsAcceptedPlusOneRows", "--chains", "1", "--report",
                dir.resolve("tck").toString());
        assertThat(t.exit()).as(t.out()).isZero();
        assertThat(t.out()).contains("fixtures model:" + model.toAbsolutePath().normalize() + " and tiny-q4")
                .contains("1 rules passed, 0 failed, 0 skipped");

        Path goldens = dir.resolve("goldens");
        Cli g = Cli.run("golden", "record", "--model", model.toString(), "--scenario", "lifecycle", "--out",
                goldens.toString(), "--quiet");
        assertThat(g.exit()).as(g.out()).isZero();
        Path golden = goldens.resolve("model-lifecycle.json");
        assertThat(golden).exists();
        Cli v = Cli.run("golden", "verify", golden.toString(), "--model", model.toString(), "--quiet");
        assertThat(v.exit()).as(v.out()).isZero();
    }

    @Test
    void aHybridReleaseGivesTargetContextsAndADrafterOnlyOneSaysItHasNoTarget() throws Exception {
        Path release = fixture("tiny-target", "my-release");
        Cli c = Cli.run("conform", "--model", release.toString(), "--contexts", "target", "--backend", "reference",
                "--chains", "2", "--quiet", "--report", dir.resolve("c").toString());
        assertThat(c.exit()).as(c.out()).isZero();
        assertThat(c.out()).contains("target");

        Path drafter = fixture("tiny", "drafter-only");
        Cli bad = Cli.run("conform", "--model", drafter.toString(), "--contexts", "target", "--backend",
                "reference", "--chains", "1", "--quiet", "--report", dir.resolve("bad").toString());
        assertThat(bad.exit()).as(bad.out()).isEqualTo(MtpCommand.EXIT_USAGE);
        assertThat(bad.out()).contains("drafter-only").contains("has no target");
    }

    @Test
    void aDirectoryThatIsNotAModelIsOneLineExitThree() throws Exception {
        Path empty = Files.createDirectories(dir.resolve("empty"));
        for (String cmd : new String[] {"conform", "tck", "golden record"}) {
            String[] words = (cmd + " --model " + empty + (cmd.equals("golden record") ? "" : " --backend reference"))
                    .split(" ");
            Cli r = Cli.run(words);
            assertThat(r.exit()).as(cmd + ": " + r.out()).isEqualTo(MtpCommand.EXIT_ERROR);
            assertThat(r.out().strip().lines()).as(r.out()).hasSize(1);
            assertThat(r.out()).contains("config.json");
        }
    }
}
