package org.mtporacle.conformance.golden;

import com.code_intelligence.jazzer.junit.FuzzTest;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.junit.jupiter.api.Test;
import org.mtporacle.api.MtpException;
import org.mtporacle.io.StrictJson;
import org.mtporacle.io.fuzz.FuzzProperty;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Fuzz target for golden traces, with the property of {@link FuzzProperty}: {@link GoldenFiles#read} (checksums,
 * the named tensors file, every field), {@link GoldenFiles#fromJsonUnchecked} (the path of {@code mtp inspect} and
 * {@code mtp golden diff}) and a golden diff of the input against itself. The input is written beside copies of the
 * committed tensors files; when it is a JSON object its contentSha256 is re-sealed first, so mutations reach the
 * field checks instead of stopping at the checksum. A normal run replays
 * {@code src/test/resources/org/mtporacle/conformance/golden/GoldenFuzzTestInputs/goldens/}.
 */
class GoldenFuzzTest {
    private static final Path DIR;

    static {
        try {
            DIR = Files.createTempDirectory("mtp-golden-fuzz-");
            DIR.toFile().deleteOnExit();
            try (DirectoryStream<Path> s = Files.newDirectoryStream(GoldenParsingTest.committed(""), "*.safetensors")) {
                for (Path p : s) {
                    Files.copy(p, DIR.resolve(p.getFileName()), StandardCopyOption.REPLACE_EXISTING);
                }
            }
            Path seed = GoldenParsingTest.committed("tiny-lifecycle.json");
            GoldenFiles.read(Files.copy(seed, DIR.resolve("warm.json"), StandardCopyOption.REPLACE_EXISTING));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @FuzzTest(maxDuration = "60s")
    void goldens(byte[] input) throws IOException {
        Path file = DIR.resolve("input.json");
        byte[] bytes = reseal(input);
        Files.write(file, bytes);
        FuzzProperty.check("goldens", bytes.length, () -> {
            try {
                GoldenFiles.Golden g = GoldenFiles.read(file);
                g.trace().steps().forEach(GoldenTrace.Step::describe);
            } catch (MtpException e) {
                assertOneLine(e);
            }
            try {
                GoldenTrace t = GoldenFiles.fromJsonUnchecked(file);
                GoldenFiles.toJson(t);
                GoldenDiff.diff(file, file);
            } catch (MtpException e) {
                assertOneLine(e);
            }
        });
    }

    private static void assertOneLine(MtpException e) {
        if (e.getMessage().contains("\n") || e.getMessage().contains("\r")) {
            throw new AssertionError("message is not one line: " + e.getMessage());
        }
    }

    /** The input with contentSha256 recomputed when it is a JSON object, else unchanged. */
    private static byte[] reseal(byte[] input) {
        try {
            ObjectNode root = StrictJson.parse(input, "fuzz");
            root.remove("contentSha256");
            root.put("contentSha256", JsonText.canonicalSha256(root));
            return JsonText.pretty(root).getBytes(java.nio.charset.StandardCharsets.UTF_8);
        } catch (MtpException e) {
            return input;
        }
    }

    static Path inputs() {
        return Path.of(System.getProperty("mtp.repo.root", "..")).resolve(
                "conformance/src/test/resources/org/mtporacle/conformance/golden/GoldenFuzzTestInputs/goldens");
    }

    @Test
    void theCorpusHasSeedsAndIsSmall() throws IOException {
        FuzzProperty.assertSeededAndSmall(inputs());
    }
}
