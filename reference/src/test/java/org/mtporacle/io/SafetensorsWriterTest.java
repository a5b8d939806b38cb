package org.mtporacle.io;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.SplittableRandom;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import org.mtporacle.api.DType;
import org.mtporacle.api.HostTensor;

class SafetensorsWriterTest {
    private static final long SEED = 20260101L;

    @TempDir
    Path dir;

    @Test
    void everyDtypeRoundTripsByteForByte() {
        System.out.println("seed " + SEED);
        SplittableRandom rnd = new SplittableRandom(SEED);
        SafetensorsWriter w = new SafetensorsWriter().metadata("format", "pt").metadata("note", "ünïcode");
        java.util.Map<String, HostTensor> written = new java.util.TreeMap<>();
        for (DType t : DType.values()) {
            int[] shape = {3, 1 + rnd.nextInt(5)};
            byte[] bytes = new byte[shape[0] * shape[1] * t.byteSize()];
            rnd.nextBytes(bytes);
            if (t == DType.BOOL) {
                for (int i = 0; i < bytes.length; i++) {
                    bytes[i] &= 1;
                }
            }
            HostTensor h = HostTensor.copyOf(t, shape, MemorySegment.ofArray(bytes));
            written.put("t_" + t.safetensorsName(), h);
            w.add("t_" + t.safetensorsName(), h);
        }
        w.add("scalar", HostTensor.ofFloats(new float[] {7f}));
        Path p = dir.resolve("all.safetensors");
        w.write(p);
        try (SafetensorsFile f = SafetensorsFile.open(p)) {
            assertThat(f.metadata()).containsEntry("format", "pt").containsEntry("note", "ünïcode");
            written.forEach((name, h) -> assertThat(f.tensor(name).contentEquals(h)).as(name).isTrue());
            assertThat(f.tensor("scalar").rank()).isZero();
            assertThat(f.tensor("scalar").getFloat(0)).isEqualTo(7f);
        }
    }

    @Test
    void headerIsSpacePaddedToEightBytesAndTensorsAreSortedByName() throws IOException {
        Path p = dir.resolve("pad.safetensors");
        new SafetensorsWriter().add("zeta", HostTensor.ofInts(new int[] {1}, 1))
                .add("alpha", HostTensor.ofInts(new int[] {2}, 1)).write(p);
        byte[] all = Files.readAllBytes(p);
        long n = ByteBuffer.wrap(all).order(ByteOrder.LITTLE_ENDIAN).getLong(0);
        assertThat(n % 8).isZero();
        String header = new String(all, 8, (int) n, java.nio.charset.StandardCharsets.UTF_8);
        assertThat(header).startsWith("{").matches("(?s).*\\} *");
        assertThat(header.indexOf("\"alpha\"")).isLessThan(header.indexOf("\"zeta\""));
        // alpha's data comes first in the file
        assertThat(ByteBuffer.wrap(all).order(ByteOrder.LITTLE_ENDIAN).getInt(8 + (int) n)).isEqualTo(2);
        assertThat(all.length).isEqualTo(8 + n + 8);
    }
}
