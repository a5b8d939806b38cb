package org.mtporacle.conformance.golden;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.mtporacle.api.MtpException;

/**
 * Golden traces as untrusted documents: every field is read with its type and within its bound, files named inside
 * stay in the golden's folder, and nothing of a named file is printed (which observables a step must carry is
 * {@code GoldenStructureTest}'s). Each case edits the committed {@code golden/tiny-lifecycle.json} and re-seals its
 * contentSha256, so only the edit can be refused.
 */
class GoldenParsingTest {
    @TempDir
    Path dir;

    static Path committed(String name) {
        return GoldenForgery.committed(name);
    }

    /** A copy of tiny-lifecycle in {@code dir}, edited, with contentSha256 recomputed. */
    private Path edited(Consumer<ObjectNode> edit) throws IOException {
        return GoldenForgery.edited(dir, "tiny-lifecycle", edit);
    }

    private static ObjectNode step(ObjectNode root, int i) {
        return (ObjectNode) root.get("steps").get(i);
    }

    private static ObjectNode expect(ObjectNode root, int i) {
        return (ObjectNode) step(root, i).get("expect");
    }

    private void assertMalformed(Consumer<ObjectNode> edit, String... message) throws IOException {
        Path f = edited(edit);
        assertThatThrownBy(() -> GoldenFiles.read(f)).isInstanceOfSatisfying(MtpException.class, e -> {
            assertThat(e.kind()).isEqualTo(MtpException.Kind.MALFORMED_FILE);
            assertThat(e.getMessage()).contains(message).doesNotContain("\n");
        });
    }

    @Test
    void theUneditedCopyReads() throws IOException {
        GoldenFiles.Golden g = GoldenFiles.read(edited(r -> { }));
        assertThat(g.trace().steps()).hasSize(25);
    }

    @Test
    void typesAreStrict() throws IOException {
        assertMalformed(r -> expect(r, 2).put("rowCount", 2.5), "'rowCount' must be an integer");
        assertMalformed(r -> expect(r, 2).put("rowCount", "3"), "'rowCount' must be an integer");
        assertMalformed(r -> step(r, 4).put("depth", 1.5), "'depth' must be an integer");
        assertMalformed(r -> step(r, 4).put("depth", 65), "'depth' = 65", "[0, 64]");
        assertMalformed(r -> ((ObjectNode) r.get("model")).put("identity", 7), "'identity' must be a string");
        assertMalformed(r -> ((ObjectNode) r.get("tensors")).put("sha256", "abc"), "64 lowercase hex digits");
        assertMalformed(r -> ((ObjectNode) r.get("options")).putObject("engineOptions").put("mode", 1),
                "expected a string");
    }

    @Test
    void tensorsFileMustBeAPlainFileNameInTheGoldensFolder() throws IOException {
        for (String name : new String[] {"/etc/passwd", "../tiny-lifecycle.safetensors", "..", "sub/x.safetensors",
                "", "a\nb"}) {
            assertMalformed(r -> ((ObjectNode) r.get("tensors")).put("file", name), "tensors.file",
                    "expected a file name in the same folder");
        }
    }

    @Test
    void aDeviceOrOversizedTensorsFileIsRefusedUnreadAndNoBytesArePrinted() throws IOException {
        Path zero = Path.of("/dev/zero");
        if (Files.exists(zero)) {
            Files.createSymbolicLink(dir.resolve("zero.safetensors"), zero);
            assertMalformed(r -> ((ObjectNode) r.get("tensors")).put("file", "zero.safetensors"),
                    "not a regular file");
        }
        try (RandomAccessFile raf = new RandomAccessFile(dir.resolve("big.safetensors").toFile(), "rw")) {
            raf.setLength(GoldenFiles.MAX_TENSOR_BYTES + 1);
        }
        assertMalformed(r -> ((ObjectNode) r.get("tensors")).put("file", "big.safetensors"), "more than the");
        Files.writeString(dir.resolve("secret.safetensors"), "\u0010\0\0\0\0\0\0\0TOP-SECRET-CONTENT");
        Path f = edited(r -> ((ObjectNode) r.get("tensors")).put("file", "secret.safetensors"));
        assertThatThrownBy(() -> GoldenFiles.read(f)).isInstanceOf(MtpException.class)
                .satisfies(e -> assertThat(e.getMessage()).doesNotContain("SECRET"));
    }

    @Test
    void duplicateKeysAndTrailingContentAreRefused() throws IOException {
        Path f = edited(r -> { });
        String text = Files.readString(f);
        Files.writeString(f, text.replaceFirst("\\{", "{\"name\": \"x\", "));
        assertThatThrownBy(() -> GoldenFiles.read(f)).hasMessageContaining("Duplicate field 'name'");
        Files.writeString(f, text + "{}");
        assertThatThrownBy(() -> GoldenFiles.read(f)).hasMessageContaining("not valid JSON");
    }
}
