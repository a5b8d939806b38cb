package org.mtporacle.tools;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledOnOs;
import org.junit.jupiter.api.condition.OS;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The {@code ./mtp} launcher under concurrency: the real script, in a copy of the repository's skeleton whose
 * {@code mvnw} is a slow stand-in that writes the jar in two halves a second apart and whose {@code java} refuses a
 * half-written jar. Two launchers started together on a fresh checkout, and again after a source change, must both
 * run, with one build each time.
 */
@EnabledOnOs({OS.LINUX, OS.MAC})
class LauncherTest {
    @TempDir
    Path root;

    private void script(Path file, String body) throws IOException {
        Files.createDirectories(file.getParent());
        Files.writeString(file, "#!/usr/bin/env bash\n" + body, StandardCharsets.UTF_8);
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rwxr-xr-x"));
    }

    @Test
    void twoLaunchersStartedTogetherBothRunWithOneBuild() throws Exception {
        Path repo = Path.of(System.getProperty("mtp.repo.root", ".."));
        Files.copy(repo.resolve("mtp"), root.resolve("mtp"));
        Files.setPosixFilePermissions(root.resolve("mtp"), PosixFilePermissions.fromString("rwxr-xr-x"));
        Files.writeString(root.resolve("pom.xml"), "<project/>");
        Files.createDirectories(root.resolve("tools/src/main/java"));
        Files.writeString(root.resolve("tools/src/main/java/A.java"), "class A {}");
        script(root.resolve("jdk25"), "echo \"$(dirname \"$0\")/jdk\"\n");
        // The stand-in build: counts itself, writes the jar in two halves (as a real package step rewrites it).
        script(root.resolve("mvnw"), """
                echo build >> builds.log
                mkdir -p tools/target
                printf 'half' > tools/target/mtp.jar
                sleep 1
                printf 'half+rest' > tools/target/mtp.jar
                """);
        // The stand-in JVM: fails on a half-written jar, else says which jar it ran.
        script(root.resolve("jdk/bin/java"), """
                for a in "$@"; do [ "$prev" = "-jar" ] && jar="$a"; prev="$a"; done
                [ "$(cat "$jar")" = "half+rest" ] || { echo "half-written jar: $(cat "$jar")"; exit 9; }
                echo "ran $jar"
                """);

        assertBothRun();
        assertThat(Files.readAllLines(root.resolve("builds.log"))).as("one build for two launchers").hasSize(1);

        Thread.sleep(1100); // a source change after the jar (mtimes have one-second resolution on some file systems)
        Files.writeString(root.resolve("tools/src/main/java/A.java"), "class A { int x; }");
        assertBothRun();
        assertThat(Files.readAllLines(root.resolve("builds.log"))).as("one more after the change").hasSize(2);
    }

    private void assertBothRun() throws Exception {
        List<Process> ps = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            ps.add(new ProcessBuilder("bash", root.resolve("mtp").toString(), "backends").directory(root.toFile())
                    .redirectErrorStream(true).start());
        }
        for (Process p : ps) {
            assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertThat(p.exitValue()).as(out).isZero();
            assertThat(out).contains("ran " + root.resolve("tools/target/launch/mtp.jar"));
        }
    }

    /**
     * The JDK's incubator warning, which the JVM prints first on standard error while it boots, does not reach the
     * user; every other line on standard error does, the exit status is the JVM's, and the JVM is told on which
     * descriptor the real standard error is (the tool puts it back on 2 itself, which a stand-in cannot).
     */
    @Test
    void theIncubatorWarningIsDroppedAndEverythingElsePassesThrough() throws Exception {
        Path repo = Path.of(System.getProperty("mtp.repo.root", ".."));
        Files.copy(repo.resolve("mtp"), root.resolve("mtp"));
        Files.writeString(root.resolve("pom.xml"), "<project/>");
        Files.createDirectories(root.resolve("tools/target/launch"));
        Files.writeString(root.resolve("tools/target/launch/mtp.jar"), "jar"); // newer than every source: no build
        script(root.resolve("jdk25"), "echo \"$(dirname \"$0\")/jdk\"\n");
        script(root.resolve("jdk/bin/java"), """
                echo "WARNING: Using incubator modules: jdk.incubator.vector" >&2
                echo "mtp: a real message" >&2
                printf 'no newline at the end' >&2
                echo "fd=$MTP_STDERR_FD" >&"$MTP_STDERR_FD"
                echo "the output"
                exit 7
                """);
        Path err = root.resolve("err.txt");
        Process p = new ProcessBuilder("bash", root.resolve("mtp").toString(), "--version").directory(root.toFile())
                .redirectError(err.toFile()).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).as("the JVM's exit status").isEqualTo(7);
        assertThat(out).isEqualTo("the output\n");
        String stderr = "";
        for (int i = 0; i < 50 && !stderr.contains("no newline at the end"); i++) { // the filter may finish last
            Thread.sleep(100);
            stderr = Files.readString(err);
        }
        assertThat(stderr).doesNotContain("incubator").contains("mtp: a real message\n")
                .contains("no newline at the end").contains("fd=3\n");
    }
}
