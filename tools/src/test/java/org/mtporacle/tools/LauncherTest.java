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
}
