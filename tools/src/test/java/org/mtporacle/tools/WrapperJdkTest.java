package org.mtporacle.tools;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledOnOs;
import org.junit.jupiter.api.condition.OS;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Maven wrapper started with a Java older than 25 (the default {@code java} of many machines) says that the build
 * needs JDK 25 and runs again through {@code ./jdk25}, instead of dying on {@code .mvn/jvm.config}'s flag: the real
 * {@code mvnw}, a stand-in JDK 17 home (its {@code release} file) and a stand-in {@code jdk25} that reports how it
 * was called.
 */
@EnabledOnOs({OS.LINUX, OS.MAC})
class WrapperJdkTest {
    @TempDir
    Path root;

    @Test
    void anOlderJavaIsNamedAndTheBuildRunsThroughJdk25() throws Exception {
        Path repo = Path.of(System.getProperty("mtp.repo.root", ".."));
        Files.copy(repo.resolve("mvnw"), root.resolve("mvnw"));
        Files.setPosixFilePermissions(root.resolve("mvnw"), PosixFilePermissions.fromString("rwxr-xr-x"));
        Files.writeString(root.resolve("jdk25"), "#!/usr/bin/env bash\necho \"jdk25 ran: $*\"\n",
                StandardCharsets.UTF_8);
        Files.setPosixFilePermissions(root.resolve("jdk25"), PosixFilePermissions.fromString("rwxr-xr-x"));
        Path old = Files.createDirectories(root.resolve("jdk17/bin"));
        Files.writeString(root.resolve("jdk17/release"), "JAVA_VERSION=\"17.0.15\"\n");
        ProcessBuilder pb = new ProcessBuilder("./mvnw", "-B", "verify").directory(root.toFile())
                .redirectErrorStream(true);
        pb.environment().put("JAVA_HOME", old.getParent().toString());
        Process p = pb.start();
        assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.exitValue()).as(out).isZero();
        assertThat(out).contains("mvnw: MTP Oracle needs JDK 25 (JAVA_HOME/PATH has Java 17); running through ./jdk25",
                "jdk25 ran: ./mvnw -B verify");
    }
}
