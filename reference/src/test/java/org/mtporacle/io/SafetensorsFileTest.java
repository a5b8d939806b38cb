package org.mtporacle.io;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import org.mtporacle.api.DType;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MtpException;

class SafetensorsFileTest {
    @TempDir
    Path dir;

    /** An 8-byte LE length, the header bytes, then the data. */
    private Path image(String name, long declaredLength, byte[] header, byte[] data) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(8 + header.length + data.length).order(ByteOrder.LITTLE_ENDIAN);
        b.putLong(declaredLength).put(header).put(data);
        Path p = dir.resolve(name);
        Files.write(p, b.array());
        return p;
    }

    private Path image(String header, int dataBytes) throws IOException {
        byte[] h = header.getBytes(StandardCharsets.UTF_8);
        return image("t.safetensors", h.length, h, new byte[dataBytes]);
    }

    private void assertMalformed(Path p, String... parts) {
        assertThatThrownBy(() -> SafetensorsFile.open(p)).isInstanceOfSatisfying(MtpException.class, e -> {
            assertThat(e.kind()).isEqualTo(MtpException.Kind.MALFORMED_FILE);
            assertThat(e.getMessage()).contains(p.toString());
            for (String part : parts) {
                assertThat(e.getMessage()).contains(part);
            }
        });
    }

    @Test
    void validImageExposesTensorsMetadataAndValuesReadFromTheBytes() throws IOException {
        String header = "{\"__metadata__\":{\"format\":\"pt\"},\"b\":{\"dtype\":\"I16\",\"shape\":[2],"
                + "\"data_offsets\":[8,12]},\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
        byte[] h = header.getBytes(StandardCharsets.UTF_8);
        ByteBuffer data = ByteBuffer.allocate(12).order(ByteOrder.LITTLE_ENDIAN);
        data.putFloat(1.5f).putFloat(-2.25f).putShort((short) -7).putShort((short) 300);
        Path p = image("ok.safetensors", h.length, h, data.array());
        try (SafetensorsFile f = SafetensorsFile.open(p)) {
            assertThat(f.names()).containsExactly("a", "b");
            assertThat(f.metadata()).containsEntry("format", "pt");
            assertThat(f.tensor("a").toFloatArray()).containsExactly(1.5f, -2.25f);
            assertThat(f.tensor("b").dtype()).isEqualTo(DType.I16);
            assertThat(f.tensor("b").toIntArray()).containsExactly(-7, 300);
            assertThatThrownBy(() -> f.tensor("c")).isInstanceOf(MtpException.class).hasMessageContaining("'c'");
        }
    }

    @Test
    void fileShorterThanEightBytesIsMalformed() throws IOException {
        Path p = dir.resolve("short.safetensors");
        Files.write(p, new byte[5]);
        assertMalformed(p, "5 bytes", "at least 8");
    }

    @Test
    void headerLengthBeyondTheFileIsRejectedBeforeAllocating() throws IOException {
        assertMalformed(image("big.safetensors", 1L << 40, "{}".getBytes(StandardCharsets.UTF_8), new byte[0]),
                "header length 1099511627776");
        assertMalformed(image("neg.safetensors", -1L, "{}".getBytes(StandardCharsets.UTF_8), new byte[0]),
                "header length 18446744073709551615");
    }

    @Test
    void headerLengthAboveTheLimitIsRejected() throws IOException {
        assertMalformed(image("huge.safetensors", SafetensorsFile.MAX_HEADER_BYTES + 1, new byte[16], new byte[0]),
                "header length " + (SafetensorsFile.MAX_HEADER_BYTES + 1));
    }

    @Test
    void invalidUtf8HeaderIsMalformed() throws IOException {
        byte[] h = {'{', '"', (byte) 0xC3, (byte) 0x28, '"', ':', '1', '}'};
        assertMalformed(image("utf.safetensors", h.length, h, new byte[0]), "UTF-8");
    }

    @Test
    void headerThatIsNotAJsonObjectIsMalformed() throws IOException {
        assertMalformed(image("{\"a\":", 0), "not valid JSON");
        assertMalformed(image("[1,2]", 0), "not a JSON object");
        assertMalformed(image("{} {}", 0), "not valid JSON");
    }

    @Test
    void unknownDtypeIsMalformedAndNamesTheTensor() throws IOException {
        assertMalformed(image("{\"w\":{\"dtype\":\"F8\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1),
                "tensor 'w'", "unknown dtype \"F8\"");
    }

    @Test
    void negativeOrFractionalShapeIsMalformed() throws IOException {
        assertMalformed(image("{\"w\":{\"dtype\":\"U8\",\"shape\":[-1],\"data_offsets\":[0,0]}}", 0),
                "tensor 'w'", "shape [-1]");
        assertMalformed(image("{\"w\":{\"dtype\":\"U8\",\"shape\":[1.5],\"data_offsets\":[0,1]}}", 1),
                "tensor 'w'", "shape");
    }

    @Test
    void offsetsWithBeginAfterEndAreMalformed() throws IOException {
        assertMalformed(image("{\"w\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[4,2]}}", 4),
                "tensor 'w'", "begin > end");
    }

    @Test
    void byteSizeNotMatchingShapeTimesDtypeIsMalformed() throws IOException {
        assertMalformed(image("{\"w\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,12]}}", 12),
                "tensor 'w'", "spans 12 bytes, expected 16");
    }

    @Test
    void hugeShapeWhoseByteSizeOverflowsIsMalformed() throws IOException {
        assertMalformed(image("{\"w\":{\"dtype\":\"F64\",\"shape\":[2147483647,2147483647,2147483647],"
                + "\"data_offsets\":[0,8]}}", 8), "tensor 'w'", "overflows");
    }

    @Test
    void offsetsOutsideTheDataSectionAreMalformed() throws IOException {
        assertMalformed(image("{\"w\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[2,6]}}", 4),
                "tensor 'w'", "outside the data section of 4 bytes");
    }

    @Test
    void overlappingTensorsAreMalformedAndBothAreNamed() throws IOException {
        assertMalformed(image("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]},"
                + "\"b\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[2,6]}}", 6), "'b'", "overlaps", "'a'");
    }

    @Test
    void duplicateTensorNamesAreMalformedInsteadOfSilentlyTakingTheLast() throws IOException {
        assertMalformed(image("{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
                + "\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1,2]}}", 2), "Duplicate field 'a'");
    }

    @Test
    void nonStringMetadataValueIsMalformed() throws IOException {
        assertMalformed(image("{\"__metadata__\":{\"n\":3}}", 0), "__metadata__ value of 'n'", "expected a string");
    }

    @Test
    void missingOffsetsAreMalformed() throws IOException {
        assertMalformed(image("{\"w\":{\"dtype\":\"U8\",\"shape\":[1]}}", 1), "tensor 'w'", "data_offsets null");
    }

    @Test
    void emptyTensorsAtTheSameOffsetDoNotOverlap() throws IOException {
        try (SafetensorsFile f = SafetensorsFile.open(image("{\"a\":{\"dtype\":\"F32\",\"shape\":[0],"
                + "\"data_offsets\":[0,0]},\"b\":{\"dtype\":\"F32\",\"shape\":[3,0],\"data_offsets\":[0,0]}}", 0))) {
            assertThat(f.tensor("b").shape()).containsExactly(3, 0);
            assertThat(f.tensor("a").elementCount()).isZero();
        }
    }

    @Test
    void viewsAreZeroCopyOfTheMapping() throws IOException {
        Path p = dir.resolve("rt.safetensors");
        new SafetensorsWriter().add("x", HostTensor.ofFloats(new float[] {1, 2, 3}, 3)).write(p);
        try (SafetensorsFile f = SafetensorsFile.open(p)) {
            assertThat(f.tensor("x").data().isMapped()).isTrue();
            assertThat(f.tensor("x").data().isReadOnly()).isTrue();
        }
    }
}
