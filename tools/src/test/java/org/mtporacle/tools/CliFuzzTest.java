package org.mtporacle.tools;

import com.code_intelligence.jazzer.junit.FuzzTest;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.junit.jupiter.api.Test;
import org.mtporacle.api.MtpException;
import org.mtporacle.conformance.golden.JsonText;
import org.mtporacle.io.StrictJson;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Comparator;
import java.util.Set;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Fuzz targets for the command line's readers of untrusted files: {@code mtp inspect} (any file: golden, chain
 * trace, checkpoint, safetensors), {@code mtp golden verify} (a golden beside the committed tensors files, its
 * contentSha256 re-sealed so that mutations reach the fields and the replay) and {@code mtp conform merge} (a
 * report.json). The property: the exit code is 0, 1 or 3, never 4 (an internal error), and every line the command
 * prints about the file is its own line (no value splits one). A normal run replays
 * {@code src/test/resources/org/mtporacle/tools/CliFuzzTestInputs/<target>/}.
 */
class CliFuzzTest {
    private static final Set<Integer> ALLOWED = Set.of(MtpCommand.EXIT_OK, MtpCommand.EXIT_FAILED,
            MtpCommand.EXIT_ERROR);
    private static final Path DIR;
    /** A line a JVM stack trace prints: {@code at pkg.Class.method(File.java:12)}. */
    private static final java.util.regex.Pattern FRAME = java.util.regex.Pattern.compile(
            "\\s*at [\\w$./]+\\((\\w+\\.java:\\d+|Native Method|Unknown Source)\\)\\s*");

    static {
        try {
            DIR = Files.createTempDirectory("mtp-cli-fuzz-");
            Path golden = Path.of(System.getProperty("mtp.repo.root", "..")).resolve("golden");
            try (DirectoryStream<Path> s = Files.newDirectoryStream(golden, "tiny-*.safetensors")) {
                for (Path p : s) {
                    Files.copy(p, DIR.resolve(p.getFileName()), StandardCopyOption.REPLACE_EXISTING);
                }
            }
            Runtime.getRuntime().addShutdownHook(new Thread(() -> deleteTree(DIR)));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static void check(String what, Cli r) {
        // the tool's own internal-error line starts a line; the same words inside an escaped untrusted value do not
        // count (a campaign's fuzzer learned the words and put them in a metadata key and a digest)
        if (!ALLOWED.contains(r.exit()) || r.out().lines().anyMatch(l -> l.matches("^\\S+: internal error, .*"))) {
            throw new AssertionError(what + ": exit " + r.exit() + "\n" + r.out());
        }
        for (String line : r.out().split("\n")) {
            if (FRAME.matcher(line).matches() || line.startsWith("Caused by")) {
                throw new AssertionError(what + ": printed a stack frame: " + line);
            }
        }
    }

    /** The first byte picks the file type the rest is written as. */
    @FuzzTest(maxDuration = "60s")
    void inspect(byte[] input) throws IOException {
        String suffix = input.length > 0 && (input[0] & 1) == 1 ? ".safetensors" : ".json";
        Path f = DIR.resolve("inspect" + suffix);
        Files.write(f, input.length > 0 ? java.util.Arrays.copyOfRange(input, 1, input.length) : input);
        check("inspect", Cli.run("inspect", f.toString()));
        check("inspect --json", Cli.run("inspect", "--json", f.toString()));
    }

    @FuzzTest(maxDuration = "60s")
    void goldenVerify(byte[] input) throws IOException {
        Path f = DIR.resolve("verify.json");
        Files.write(f, reseal(input));
        check("golden verify", Cli.run("golden", "verify", "--quiet", f.toString()));
    }

    @FuzzTest(maxDuration = "60s")
    void merge(byte[] input) throws IOException {
        Path f = DIR.resolve("shard").resolve("report.json");
        Files.createDirectories(f.getParent());
        Files.write(f, input);
        check("conform merge", Cli.run("conform", "merge", "--report", DIR.resolve("merged").toString(),
                f.toString()));
    }

    /**
     * {@code mtp replay} of a trace (replay's backend lookup): without {@code --backend} the trace never chooses what
     * runs, so the command must refuse (exit 2, or 3 for a trace it cannot read) and start no process, whatever the
     * trace's {@code backend} and {@code backendOptions} say; with {@code --backend reference} (the first byte odd) the
     * chain replays, exit 0, 1 or 3.
     */
    @FuzzTest(maxDuration = "60s")
    void replay(byte[] input) throws IOException {
        boolean run = input.length > 0 && (input[0] & 1) == 1;
        Path f = DIR.resolve("replay.json");
        Files.write(f, input.length > 0 ? java.util.Arrays.copyOfRange(input, 1, input.length) : input);
        long before = ProcessHandle.current().children().count();
        Cli r = run ? Cli.run("replay", "--backend", "reference", f.toString()) : Cli.run("replay", f.toString());
        if (ProcessHandle.current().children().count() > before) {
            throw new AssertionError("replay started a process:\n" + r.out());
        }
        if (!(run ? ALLOWED : Set.of(MtpCommand.EXIT_USAGE, MtpCommand.EXIT_ERROR)).contains(r.exit())) {
            throw new AssertionError("replay" + (run ? " --backend reference" : " without --backend") + ": exit "
                    + r.exit() + "\n" + r.out());
        }
        check("replay", new Cli(MtpCommand.EXIT_OK, r.out())); // the exit is checked above; lines and frames here
        for (String line : r.out().split("\n")) {
            if (RAW.matcher(line).find()) {
                throw new AssertionError("replay printed a raw control character: "
                        + org.mtporacle.api.UntrustedText.line(line));
            }
        }
    }

    /** What {@code UntrustedText.line} escapes: C0 but newline, DEL, C1, line/paragraph separators, bidi controls. */
    private static final java.util.regex.Pattern RAW = java.util.regex.Pattern.compile(
            "[\\x00-\\x09\\x0b-\\x1f\\x7f-\\x9f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069]");

    private static byte[] reseal(byte[] input) {
        try {
            ObjectNode root = StrictJson.parse(input, "fuzz");
            root.remove("contentSha256");
            root.put("contentSha256", JsonText.canonicalSha256(root));
            return JsonText.pretty(root).getBytes(StandardCharsets.UTF_8);
        } catch (MtpException e) {
            return input;
        }
    }

    static Path inputs(String target) {
        return Path.of(System.getProperty("mtp.repo.root", "..")).resolve(
                "tools/src/test/resources/org/mtporacle/tools/CliFuzzTestInputs").resolve(target);
    }

    @Test
    void everyTargetHasSeedsAndTheCorpusIsSmall() throws IOException {
        long total = 0;
        for (String t : new String[] {"inspect", "goldenVerify", "merge", "replay"}) {
            try (Stream<Path> s = Files.list(inputs(t))) {
                var files = s.toList();
                assertThat(files).as(t).anyMatch(p -> p.getFileName().toString().startsWith("seed-"));
                for (Path p : files) {
                    total += Files.size(p);
                }
            }
        }
        assertThat(total).isLessThan(1L << 20);
    }

    private static void deleteTree(Path dir) {
        try (Stream<Path> s = Files.walk(dir)) {
            s.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException ignored) {
            // a leftover temp dir is harmless
        }
    }
}
