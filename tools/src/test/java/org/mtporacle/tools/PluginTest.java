package org.mtporacle.tools;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.stream.Stream;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A backend built outside the project's modules (the {@code examples/backend-template} sources, compiled here into a
 * jar of their own) runs through {@code --plugin JAR} and {@code MTP_PLUGINS}; bad plugin paths are refused.
 */
class PluginTest {
    @TempDir
    static Path tmp;
    static Path jar;

    @BeforeAll
    static void buildTheTemplateJar() throws IOException {
        Path template = Path.of(System.getProperty("mtp.repo.root", "..")).resolve("examples/backend-template");
        Assumptions.assumeTrue(Files.isDirectory(template), () -> "skipped: no " + template);
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        Assumptions.assumeTrue(javac != null, "skipped: this JVM has no system Java compiler (a JRE, not a JDK)");
        Path classes = Files.createDirectories(tmp.resolve("classes"));
        List<String> args = new ArrayList<>(List.of("-d", classes.toString(), "-classpath",
                System.getProperty("java.class.path"), "-proc:none"));
        try (Stream<Path> s = Files.walk(template.resolve("src/main/java"))) {
            s.filter(p -> p.toString().endsWith(".java")).forEach(p -> args.add(p.toString()));
        }
        assertThat(javac.run(null, null, null, args.toArray(String[]::new))).as("javac on the template").isZero();
        Path resources = template.resolve("src/main/resources");
        jar = tmp.resolve("example-backend.jar");
        try (JarOutputStream out = new JarOutputStream(Files.newOutputStream(jar))) {
            for (Path root : List.of(classes, resources)) {
                try (Stream<Path> s = Files.walk(root)) {
                    for (Path p : s.filter(Files::isRegularFile).sorted().toList()) {
                        out.putNextEntry(new JarEntry(root.relativize(p).toString().replace('\\', '/')));
                        Files.copy(p, out);
                        out.closeEntry();
                    }
                }
            }
        }
    }

    @Test
    void aPluginJarsBackendIsListedAndPassesConformance() {
        Cli listed = Cli.run("--plugin", jar.toString(), "backends");
        assertThat(listed.exit()).as(listed.out()).isZero();
        assertThat(listed.out()).containsPattern("(?m)^example +available");
        Cli r = Cli.run("conform", "--plugin", jar.toString(), "--backend", "example", "--fixture", "tiny",
                "--chains", "3", "--quiet", "--report", tmp.resolve("report").toString());
        assertThat(r.exit()).as(r.out()).isZero();
        assertThat(r.out()).contains("example");
    }

    @Test
    void withoutThePluginTheBackendIsUnknown() {
        Cli r = Cli.run("conform", "--backend", "example", "--fixture", "tiny", "--chains", "1", "--quiet",
                "--report", tmp.resolve("none").toString());
        assertThat(r.exit()).as(r.out()).isEqualTo(MtpCommand.EXIT_USAGE);
        assertThat(r.out()).contains("--backend example: no such backend");
    }

    @Test
    void aMissingPluginIsRefusedInOneLineNamingIt() {
        Path missing = tmp.resolve("missing.jar");
        Cli r = Cli.run("backends", "--plugin", missing.toString());
        assertThat(r.exit()).isEqualTo(MtpCommand.EXIT_ERROR);
        assertThat(r.out().strip()).isEqualTo("mtp backends: plugin: no such jar or folder " + missing
                + " (--plugin / MTP_PLUGINS)");
    }

    @Test
    void aJarThatListsNoBackendIsRefused() throws IOException {
        Path empty = tmp.resolve("empty.jar");
        try (OutputStream o = new JarOutputStream(Files.newOutputStream(empty))) {
            o.flush();
        }
        Cli r = Cli.run("--plugin", empty.toString(), "backends");
        assertThat(r.exit()).isEqualTo(MtpCommand.EXIT_ERROR);
        assertThat(r.out()).contains("plugin: " + empty, "lists no backend",
                "META-INF/services/org.mtporacle.api.MtpBackend is missing");
    }

    /** The environment variable, read by a real {@code mtp} process. */
    @Test
    void mtpPluginsAddsTheBackendInAFreshProcess() throws Exception {
        ProcessBuilder pb = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--add-modules", "jdk.incubator.vector", "-cp", System.getProperty("java.class.path"),
                MtpCommand.class.getName(), "backends").redirectErrorStream(true);
        pb.environment().put("MTP_PLUGINS", tmp.resolve("not-there.jar") + java.io.File.pathSeparator + jar);
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).as(out).isEqualTo(MtpCommand.EXIT_ERROR);
        assertThat(out).contains("no such jar or folder " + tmp.resolve("not-there.jar"));

        pb.environment().put("MTP_PLUGINS", jar.toString());
        p = pb.start();
        out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).as(out).isZero();
        assertThat(out).containsPattern("(?m)^example +available").containsPattern("(?m)^reference +available");
    }
}
