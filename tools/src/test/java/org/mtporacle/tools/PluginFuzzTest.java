package org.mtporacle.tools;

import com.code_intelligence.jazzer.junit.FuzzTest;
import org.junit.jupiter.api.Test;

import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Comparator;
import java.util.Set;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Fuzz target for plug-in loading ({@code --plugin JAR}, then {@code mtp backends}): the jar is the fuzzer's bytes, or
 * a jar (or class folder) holding one compiled provider {@code p.F} whose every step — class initialisation,
 * constructor, {@code name()}, {@code description()}, {@code availability()}, {@code profiles()},
 * {@code capabilities()} — does what the input says: work, throw a runtime exception, throw
 * {@code NoClassDefFoundError} (a plug-in missing a dependency), return null, return blank, return text with control
 * and bidirectional characters, throw {@code StackOverflowError}, or throw an {@code MtpException} with such text; its
 * name can be the input's text, and its services file can list the input's text. The property: exit 0 or 3, never 1
 * (a check failed) or 4 (an internal error), nothing thrown past the command line, no stack frame, every printed line
 * free of raw control and bidirectional characters, and a refusal names the jar. A normal run replays
 * {@code src/test/resources/org/mtporacle/tools/PluginFuzzTestInputs/plugins/}.
 */
class PluginFuzzTest {
    /** The provider; {@code F.behaviour} in its jar holds one code per step, then the name's text. */
    static final String PROVIDER = """
            package p;
            import org.mtporacle.api.*;
            import java.util.Map;
            public class F implements MtpBackend {
              static final byte[] B;
              static {
                byte[] b = new byte[0];
                try (var in = F.class.getResourceAsStream("F.behaviour")) {
                  if (in != null) b = in.readAllBytes();
                } catch (java.io.IOException e) {
                }
                B = b;
                act(0);
              }
              static String act(int step) {
                int code = step < B.length ? B[step] & 7 : 0;
                switch (code) {
                  case 1: throw new IllegalStateException("boom at step " + step);
                  case 2: throw new NoClassDefFoundError("q/Missing");
                  case 3: return null;
                  case 4: return " ";
                  case 5: return "\\u001b[31mred\\u202e\\nsecond line\\r";
                  case 6: throw new StackOverflowError();
                  case 7: throw new MtpException(MtpException.Kind.INVALID_ARGUMENT, "plugin says \\u001b[2J\\nno");
                  default:
                    return step == 2 && B.length > 7 ? new String(B, 7, B.length - 7,
                        java.nio.charset.StandardCharsets.UTF_8) : "fz" + step;
                }
              }
              public F() { act(1); }
              public String name() { return act(2); }
              public String description() { return act(3); }
              public Availability availability() {
                String s = act(4);
                return s == null ? null : B.length > 4 && (B[4] & 7) == 5 ? Availability.no(s) : Availability.yes(s);
              }
              public DraftModel load(MtpModel m, Map<String, String> o) {
                throw new MtpException(MtpException.Kind.UNAVAILABLE, "fuzz plug-in");
              }
              public java.util.List<BackendProfile> profiles() {
                return act(5) == null ? null : MtpBackend.super.profiles();
              }
              public BackendCapabilities capabilities() {
                return act(6) == null ? null : MtpBackend.super.capabilities();
              }
            }
            """;
    private static final Path DIR;
    private static final byte[] CLASS_FILE;
    private static final Set<Integer> ALLOWED = Set.of(MtpCommand.EXIT_OK, MtpCommand.EXIT_ERROR);
    private static final java.util.regex.Pattern FRAME = java.util.regex.Pattern.compile(
            "\\s*at [\\w$./]+\\((\\w+\\.java:\\d+|Native Method|Unknown Source)\\)\\s*");
    /** What {@code UntrustedText.line} escapes: C0 but newline, DEL, C1, line/paragraph separators, bidi controls. */
    private static final java.util.regex.Pattern RAW = java.util.regex.Pattern.compile(
            "[\\x00-\\x09\\x0b-\\x1f\\x7f-\\x9f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069]");

    static {
        try {
            DIR = Files.createTempDirectory("mtp-plugin-fuzz-");
            Path src = Files.createDirectories(DIR.resolve("src/p"));
            Path classes = Files.createDirectories(DIR.resolve("classes"));
            Files.writeString(src.resolve("F.java"), PROVIDER);
            JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
            if (javac == null || javac.run(null, null, null, "-d", classes.toString(), "-classpath",
                    System.getProperty("java.class.path"), "-proc:none", src.resolve("F.java").toString()) != 0) {
                throw new IllegalStateException("PluginFuzzTest needs a JDK's compiler for its provider");
            }
            CLASS_FILE = Files.readAllBytes(classes.resolve("p/F.class"));
            Runtime.getRuntime().addShutdownHook(new Thread(() -> deleteTree(DIR)));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * {@code input[0] & 3}: 0 the rest is the jar's bytes; 1 a jar with {@code p.F}, the rest its behaviour; 2 the
     * same as a class folder; 3 a jar with {@code p.F} (behaving) whose services file is the rest.
     */
    @FuzzTest(maxDuration = "60s")
    void plugins(byte[] input) throws IOException {
        int form = input.length == 0 ? 0 : input[0] & 3;
        byte[] rest = input.length == 0 ? input : Arrays.copyOfRange(input, 1, input.length);
        Path plugin = switch (form) {
            case 0 -> Files.write(DIR.resolve("raw.jar"), rest);
            case 1 -> jar(DIR.resolve("behaving.jar"), "p.F\n".getBytes(StandardCharsets.UTF_8), rest);
            case 2 -> folder(DIR.resolve("folder"), rest);
            default -> jar(DIR.resolve("listing.jar"), rest, new byte[0]);
        };
        check(plugin, Cli.run("--plugin", plugin.toString(), "backends"));
    }

    static void check(Path plugin, Cli r) {
        String what = "--plugin " + plugin + " backends";
        if (!ALLOWED.contains(r.exit()) || r.out().lines().anyMatch(l -> l.matches("^\\S+: internal error, .*"))) {
            throw new AssertionError(what + ": exit " + r.exit() + "\n" + r.out());
        }
        for (String line : r.out().split("\n")) {
            if (FRAME.matcher(line).matches() || line.startsWith("Caused by")) {
                throw new AssertionError(what + ": printed a stack frame: " + line);
            }
            if (RAW.matcher(line).find()) {
                throw new AssertionError(what + ": printed a raw control character: "
                        + org.mtporacle.api.UntrustedText.line(line));
            }
        }
        if (r.exit() == MtpCommand.EXIT_ERROR && !r.out().contains(plugin.toString())) {
            throw new AssertionError(what + ": a refusal that does not name the jar: " + r.out());
        }
    }

    private static Path jar(Path jar, byte[] services, byte[] behaviour) throws IOException {
        try (JarOutputStream out = new JarOutputStream(Files.newOutputStream(jar))) {
            entry(out, org.mtporacle.tools.Plugins.SERVICES, services);
            entry(out, "p/F.class", CLASS_FILE);
            entry(out, "p/F.behaviour", behaviour);
        }
        return jar;
    }

    private static Path folder(Path dir, byte[] behaviour) throws IOException {
        deleteTree(dir);
        Path services = dir.resolve(org.mtporacle.tools.Plugins.SERVICES);
        Files.createDirectories(services.getParent());
        Files.createDirectories(dir.resolve("p"));
        Files.write(services, "p.F\n".getBytes(StandardCharsets.UTF_8));
        Files.write(dir.resolve("p/F.class"), CLASS_FILE);
        Files.write(dir.resolve("p/F.behaviour"), behaviour);
        return dir;
    }

    private static void entry(JarOutputStream out, String name, byte[] bytes) throws IOException {
        out.putNextEntry(new JarEntry(name));
        out.write(bytes);
        out.closeEntry();
    }

    @Test
    void theTargetHasSeedsAndItsCorpusIsSmall() throws IOException {
        try (Stream<Path> s = Files.list(CliFuzzTest.inputs("").getParent().resolve("PluginFuzzTestInputs/plugins"))) {
            var files = s.toList();
            assertThat(files).anyMatch(p -> p.getFileName().toString().startsWith("seed-"));
            long total = 0;
            for (Path p : files) {
                total += Files.size(p);
            }
            assertThat(total).isLessThan(64L << 10);
        }
    }

    private static void deleteTree(Path dir) {
        if (!Files.exists(dir)) {
            return;
        }
        try (Stream<Path> s = Files.walk(dir)) {
            s.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException ignored) {
            // a leftover temp dir is harmless
        }
    }
}
