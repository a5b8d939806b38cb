package org.mtporacle.tools;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.stream.Stream;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A broken plug-in is bad input (exit 3) naming the jar and the class, never "a check failed" or an internal error. */
class BrokenPluginTest {
    @TempDir
    Path tmp;

    /** A jar with {@code source} (class {@code p.B}) compiled, listing {@code listed} as its backend. */
    private Path jar(String name, String source, String listed) throws IOException {
        Path src = Files.createDirectories(tmp.resolve(name + "-src/p"));
        Path classes = Files.createDirectories(tmp.resolve(name + "-classes"));
        if (source != null) {
            Files.writeString(src.resolve("B.java"), source);
            JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
            Assumptions.assumeTrue(javac != null, "skipped: this JVM has no system Java compiler (a JRE, not a JDK)");
            assertThat(javac.run(null, null, null, "-d", classes.toString(), "-classpath",
                    System.getProperty("java.class.path"), "-proc:none", src.resolve("B.java").toString())).isZero();
        }
        Path jar = tmp.resolve(name + ".jar");
        try (JarOutputStream out = new JarOutputStream(Files.newOutputStream(jar))) {
            out.putNextEntry(new JarEntry(Plugins.SERVICES));
            out.write((listed + "\n").getBytes(StandardCharsets.UTF_8));
            out.closeEntry();
            try (Stream<Path> s = Files.walk(classes)) {
                for (Path p : s.filter(Files::isRegularFile).toList()) {
                    out.putNextEntry(new JarEntry(classes.relativize(p).toString().replace('\\', '/')));
                    Files.copy(p, out);
                    out.closeEntry();
                }
            }
        }
        return jar;
    }

    private static final String BACKEND = "package p;\nimport org.mtporacle.api.*;\nimport java.util.Map;\n"
            + "public class B implements MtpBackend {\n  CTOR\n"
            + "  public String name() { NAME }\n  public String description() { return \"b\"; }\n"
            + "  public Availability availability() { return Availability.yes(\"b\"); }\n"
            + "  public DraftModel load(MtpModel m, Map<String, String> o) { throw new UnsupportedOperationException(); }\n"
            + "}\n";

    private void assertRefused(Path jar, String... parts) {
        Cli r = Cli.run("--plugin", jar.toString(), "backends");
        assertThat(r.exit()).as(r.out()).isEqualTo(MtpCommand.EXIT_ERROR);
        assertThat(r.out().strip().lines()).as(r.out()).hasSize(1);
        assertThat(r.out()).contains(jar.toString()).contains(parts).doesNotContain("internal error")
                .doesNotContain("\tat ");
    }

    @Test
    void aListedClassThatIsMissingIsRefusedNamingTheJarAndTheClass() throws IOException {
        assertRefused(jar("missing", null, "p.NoSuchBackend"), "p.NoSuchBackend");
    }

    @Test
    void aProviderWhoseConstructorThrowsIsRefusedNamingTheJarAndTheClass() throws IOException {
        assertRefused(jar("ctor", BACKEND.replace("CTOR", "public B() { throw new IllegalStateException(\"boom\"); }")
                .replace("NAME", "return \"b\";"), "p.B"), "p.B", "cannot be instantiated");
    }

    @Test
    void aProviderWhoseNameThrowsIsRefusedNamingTheJarAndTheClass() throws IOException {
        assertRefused(jar("name", BACKEND.replace("CTOR", "").replace("NAME",
                "throw new IllegalStateException(\"no name\");"), "p.B"), "p.B", "name()");
    }

    @Test
    void aProviderWhoseNameThrowsAnErrorIsRefusedNamingTheJarAndTheClass() throws IOException {
        // a plug-in built against a library it does not carry: NoClassDefFoundError, an Error, not an exception
        assertRefused(jar("nameError", BACKEND.replace("CTOR", "").replace("NAME",
                "throw new NoClassDefFoundError(\"q/Missing\");"), "p.B"), "p.B", "name()", "NoClassDefFoundError");
    }

    @Test
    void aProviderWhoseAvailabilityThrowsIsRefusedBeforeTheCommandRuns() throws IOException {
        assertRefused(jar("availability", BACKEND.replace("CTOR", "").replace("NAME", "return \"b\";")
                .replace("return Availability.yes(\"b\");", "throw new IllegalStateException(\"probe\");"), "p.B"),
                "p.B", "availability()", "probe");
    }

    @Test
    void aProviderWhoseNameIsTakenOrIsNotOneWordIsRefused() throws IOException {
        assertRefused(jar("taken", BACKEND.replace("CTOR", "").replace("NAME", "return \"reference\";"), "p.B"),
                "p.B", "'reference'", "another backend");
        assertRefused(jar("lines", BACKEND.replace("CTOR", "").replace("NAME", "return \"b\\nreference ok\";"),
                "p.B"), "p.B", "'b\\nreference ok'", "one printable word");
    }
}
