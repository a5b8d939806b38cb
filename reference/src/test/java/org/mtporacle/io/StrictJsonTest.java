package org.mtporacle.io;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.mtporacle.api.MtpException;
import org.mtporacle.io.fuzz.FuzzProperty;

/** The one strict JSON reader: every way past the happy path is MALFORMED_FILE naming the document. */
class StrictJsonTest {
    @TempDir
    Path dir;

    private Path file(String name, String text) throws IOException {
        Path f = dir.resolve(name);
        Files.writeString(f, text, StandardCharsets.UTF_8);
        return f;
    }

    private void assertRefused(String text, String... message) throws IOException {
        Path f = file("doc.json", text);
        assertThatThrownBy(() -> StrictJson.read(f, 1 << 20, "trace")).isInstanceOfSatisfying(MtpException.class,
                e -> {
                    assertThat(e.kind()).isEqualTo(MtpException.Kind.MALFORMED_FILE);
                    assertThat(e.getMessage()).startsWith("trace " + f).contains(message).doesNotContain("\n");
                });
    }

    @Test
    void duplicateKeysAndTrailingContentAreRefused() throws IOException {
        assertRefused("{\"a\": 1, \"a\": 2}", "Duplicate field 'a'");
        assertRefused("{\"a\": {\"b\": 1, \"b\": 1}}", "Duplicate field 'b'");
        assertRefused("{\"a\": 1} {\"b\": 2}", "not valid JSON");
        assertRefused("{\"a\": 1} x", "not valid JSON");
    }

    @Test
    void numbersOutsideTheDoubleRangeAndHugeExponentsAreRefused() throws IOException {
        assertRefused("{\"a\": 1e400}", "'a'", "outside the finite double range");
        assertRefused("{\"a\": [0, -1.5e309]}", "'a[1]'", "outside the finite double range");
        assertRefused("{\"a\": 1e999999999}", "outside the finite double range");
        assertRefused("{\"a\": 1e99999999999}", "not valid JSON");
        assertRefused("{\"a\": 123456789012345678901234567890}", "outside the signed 64-bit range");
        assertRefused("{\"a\": " + "9".repeat(StrictJson.MAX_NUMBER_CHARS + 1) + "}", "not valid JSON");
    }

    @Test
    void nestingDeeperThanTheLimitIsRefused() throws IOException {
        String deep = "[".repeat(StrictJson.MAX_DEPTH + 1) + "]".repeat(StrictJson.MAX_DEPTH + 1);
        assertRefused("{\"a\": " + deep + "}", "not valid JSON");
    }

    @Test
    void aRootThatIsNotAnObjectAndInvalidUtf8AreRefused() throws IOException {
        assertRefused("[1, 2]", "not a JSON object");
        assertRefused("", "not a JSON object");
        Path f = dir.resolve("latin1.json");
        Files.write(f, new byte[] {'{', '"', 'a', '"', ':', '"', (byte) 0xE9, '"', '}'});
        assertThatThrownBy(() -> StrictJson.read(f, 100, "config")).isInstanceOf(MtpException.class)
                .hasMessageContaining("not valid JSON");
    }

    @Test
    void integersRefuseFractionsInsteadOfTruncatingThem() throws IOException {
        var root = StrictJson.read(file("i.json", "{\"a\": 1.5, \"b\": 1.0, \"c\": 7, \"s\": \"7\"}"), 100, "trace");
        for (String f : new String[] {"a", "b", "s"}) {
            assertThatThrownBy(() -> StrictJson.integer(root, f, "trace x")).isInstanceOf(MtpException.class)
                    .hasMessageContaining("'" + f + "' must be an integer");
        }
        assertThat(StrictJson.integer(root, "c", "trace x")).isEqualTo(7);
        assertThatThrownBy(() -> StrictJson.integer(root, "c", 0, 6, "trace x")).hasMessageContaining("[0, 6]");
        assertThatThrownBy(() -> StrictJson.text(root, "c", "trace x")).hasMessageContaining("must be a string");
    }

    @Test
    void decimalsAreKeptExactly() throws IOException {
        var root = StrictJson.read(file("d.json", "{\"a\": 0.1000000000000000055511151231257827}"), 100, "g");
        assertThat(root.get("a").decimalValue().toPlainString()).isEqualTo("0.1000000000000000055511151231257827");
    }

    @Test
    void aFileOverTheLimitIsRefusedBeforeItIsRead() throws IOException {
        Path big = dir.resolve("big.json");
        try (RandomAccessFile raf = new RandomAccessFile(big.toFile(), "rw")) {
            raf.setLength(4L << 30); // sparse: 4 GiB claimed, nothing on disk
        }
        long used = FuzzProperty.check("big", 0, () -> StrictJson.read(big, 1 << 20, "report"));
        assertThat(used).isLessThan(FuzzProperty.ALLOCATION_SLACK);
        assertThatThrownBy(() -> StrictJson.read(big, 1 << 20, "report")).hasMessageContaining(
                "4294967296 bytes, more than the 1048576 a report may have");
    }

    @Test
    void aDeviceOrAFolderIsNotReadAtAll() {
        Path zero = Path.of("/dev/zero");
        if (Files.exists(zero)) {
            assertThatThrownBy(() -> StrictJson.read(zero, 1 << 20, "golden")).isInstanceOf(MtpException.class)
                    .hasMessageContaining("not a regular file");
        }
        assertThatThrownBy(() -> StrictJson.read(dir, 1 << 20, "golden")).hasMessageContaining("not a regular file");
        assertThatThrownBy(() -> StrictJson.read(dir.resolve("absent.json"), 1 << 20, "golden"))
                .isInstanceOf(MtpException.class).hasMessageContaining("cannot read");
    }

    @Test
    void valuesInMessagesAreEscapedAndClipped() throws IOException {
        var root = StrictJson.read(file("m.json", "{\"a\": \"x\\nok   passed\\r\\u001b[2J\", \"b\": \""
                + "y".repeat(1000) + "\"}"), 1 << 20, "trace");
        assertThatThrownBy(() -> StrictJson.integer(root, "a", "trace t")).isInstanceOfSatisfying(MtpException.class,
                e -> assertThat(e.getMessage()).contains("'x\\nok   passed\\r\\u001b[2J'").doesNotContain("\n")
                        .doesNotContain("\r").doesNotContain("\u001b"));
        assertThatThrownBy(() -> StrictJson.integer(root, "b", "trace t")).isInstanceOfSatisfying(MtpException.class,
                e -> assertThat(e.getMessage().length()).isLessThan(400));
    }
}
