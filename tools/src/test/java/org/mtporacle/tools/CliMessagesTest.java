package org.mtporacle.tools;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/** The messages a new user met, each one line naming what was wrong and where, and the state left unchanged. */
class CliMessagesTest {
    @TempDir
    Path dir;

    @Test
    void inspectNamesWhatAFileOrFolderIsNot() throws Exception {
        Path readme = Files.writeString(dir.resolve("README.md"), "# hello\n");
        Cli r = Cli.run("inspect", readme.toString());
        assertThat(r.exit()).isEqualTo(MtpCommand.EXIT_ERROR);
        assertThat(r.out().strip()).isEqualTo("mtp inspect: " + readme + ": not a safetensors file, checkpoint, "
                + "chain trace or golden trace; inspect reads a model directory, a .safetensors file, a checkpoint, a "
                + "chain trace or a golden trace");
        Path goldens = Files.createDirectories(dir.resolve("golden"));
        Files.writeString(goldens.resolve("tiny-lifecycle.json"), "{}");
        Cli g = Cli.run("inspect", goldens.toString());
        assertThat(g.exit()).isEqualTo(MtpCommand.EXIT_ERROR);
        assertThat(g.out()).contains(goldens + ": a directory without config.json, so not a model directory")
                .contains("(give one of its .json files)").doesNotContain("missing config.json");
    }

    @Test
    void convertFromAMissingFolderSaysNoSuchDirectory() {
        Path missing = dir.resolve("nonexistent");
        Cli r = Cli.run("convert", "--from", missing.toString(), "--out", dir.resolve("out").toString());
        assertThat(r.exit()).isEqualTo(MtpCommand.EXIT_ERROR);
        assertThat(r.out().strip()).isEqualTo("mtp convert: --from " + missing + ": no such directory");
        assertThat(dir.resolve("out")).doesNotExist();
    }

    @Test
    void benchNamesTheOptionOfABadThreadCount() {
        Cli r = Cli.run("bench", "--threads", "0", "--quick");
        assertThat(r.exit()).isEqualTo(MtpCommand.EXIT_USAGE);
        assertThat(r.out()).startsWith("mtp bench: --threads 0: every thread count must be ≥ 1");
    }

    @Test
    void goldenRecordRefusesToOverwriteBeforeRecordingAnything() throws Exception {
        Path existing = Files.writeString(dir.resolve("tiny-lifecycle.json"), "mine");
        Cli r = Cli.run("golden", "record", "--fixture", "tiny", "--scenario", "lifecycle", "--out", dir.toString(),
                "--quiet");
        assertThat(r.exit()).isEqualTo(MtpCommand.EXIT_ERROR);
        assertThat(r.out().strip()).isEqualTo("mtp golden record: " + dir + " already holds tiny-lifecycle.json "
                + "(give --force to replace them)");
        assertThat(Files.readString(existing)).isEqualTo("mine");
        assertThat(dir.resolve("tiny-lifecycle.safetensors")).doesNotExist();
    }

    @Test
    void aReportFolderThatCannotBeWrittenFailsBeforeAnyChainRuns() throws Exception {
        Path file = Files.writeString(dir.resolve("taken"), "x");
        Cli r = Cli.run("conform", "--backend", "reference", "--fixture", "tiny", "--chains", "1", "--report",
                file.toString(), "--quiet");
        assertThat(r.exit()).isEqualTo(MtpCommand.EXIT_ERROR);
        assertThat(r.out()).contains("report: cannot write into " + file).doesNotContain("mtp conform: seed");
        assertThat(Files.readString(file)).isEqualTo("x");
    }

    @Test
    void countsAgreeWithTheirNounsAndTheRunSaysHowToReproduceIt() {
        Cli r = Cli.run("conform", "--backend", "reference", "--fixture", "tiny", "--chains", "1", "--seed", "5",
                "--report", dir.resolve("r").toString(), "--quiet");
        assertThat(r.exit()).as(r.out()).isZero();
        assertThat(r.out()).contains("mtp conform: seed 5, 1 chain per entry").contains("OK: 1 of 1 entry passed")
                .contains("reproduce: mtp conform --seed 5 --chains 1 --max-actions 30 --backend reference "
                        + "--fixture tiny").doesNotContain("1 entries").doesNotContain("1 chains");
        assertThat(r.out()).as("no colour into a pipe").doesNotContain("\u001b[");
    }

    @Test
    void backendsShowProfilesWhereEachCameFromAndThatPlugInsExist() {
        Cli r = Cli.run("backends");
        assertThat(r.exit()).isZero();
        assertThat(r.out()).contains("reference").contains("profiles: ").contains("from: built in")
                .contains("no plug-ins loaded; add backends with --plugin JAR or MTP_PLUGINS");
        for (String line : r.out().lines().toList()) {
            assertThat(line.length()).as(line).isLessThanOrEqualTo(BackendsCommand.WIDTH);
        }
        Cli unknown = Cli.run("conform", "--backend", "example");
        assertThat(unknown.exit()).isEqualTo(MtpCommand.EXIT_USAGE);
        assertThat(unknown.out()).contains("--backend example: no such backend or profile")
                .contains("a backend from a plug-in needs --plugin JAR or MTP_PLUGINS");
    }

    @Test
    void colourOnlyForATerminalAndNeverUnderNoColor() {
        assertThat(Terminal.colour(null, true)).isTrue();
        assertThat(Terminal.colour("", true)).isTrue();
        assertThat(Terminal.colour("1", true)).isFalse();
        assertThat(Terminal.colour(null, false)).isFalse();
    }
}
