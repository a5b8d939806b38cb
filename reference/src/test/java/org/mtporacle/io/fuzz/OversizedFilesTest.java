package org.mtporacle.io.fuzz;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.mtporacle.api.MtpException;
import org.mtporacle.io.ModelConfigReader;
import org.mtporacle.io.SafetensorsFile;
import org.mtporacle.io.ShardedTensorStore;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Files too large to fuzz: sparse files of several gigabytes (no disk used) must be refused by size, before anything
 * proportional to them is allocated.
 */
class OversizedFilesTest {
    private static final long HUGE = 3L << 30;

    private static Path sparse(Path file, long size, byte[] head) throws IOException {
        try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "rw")) {
            f.write(head);
            f.setLength(size);
        }
        return file;
    }

    @Test
    void aHugeConfigIsRefusedBySizeWithoutReadingIt(@TempDir Path dir) throws IOException {
        Path cfg = sparse(dir.resolve("config.json"), HUGE, "{\"hidden_size\": 32}".getBytes());
        long used = FuzzProperty.check("huge config", 0, () -> ModelConfigReader.read(cfg));
        assertThat(used).isLessThan(FuzzProperty.ALLOCATION_SLACK);
        assertThatThrownBy(() -> ModelConfigReader.read(cfg)).isInstanceOf(MtpException.class)
                .hasMessageContaining("more than the " + ModelConfigReader.MAX_CONFIG_BYTES);
    }

    @Test
    void aHugeShardIndexIsRefusedBySizeWithoutReadingIt(@TempDir Path dir) throws IOException {
        sparse(dir.resolve(ShardedTensorStore.INDEX_FILE), HUGE, "{\"weight_map\": {}}".getBytes());
        long used = FuzzProperty.check("huge index", 0, () -> ShardedTensorStore.open(dir));
        assertThat(used).isLessThan(FuzzProperty.ALLOCATION_SLACK);
        assertThatThrownBy(() -> ShardedTensorStore.open(dir)).isInstanceOf(MtpException.class)
                .hasMessageContaining("more than the " + ShardedTensorStore.MAX_INDEX_BYTES);
    }

    @Test
    void aSafetensorsHeaderClaimingMoreThanTheLimitIsRefusedBeforeAllocation(@TempDir Path dir) throws IOException {
        byte[] len = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN)
                .putLong(SafetensorsFile.MAX_HEADER_BYTES + 1).array();
        Path f = sparse(dir.resolve("big.safetensors"), HUGE, len);
        long used = FuzzProperty.check("huge header", 0, () -> SafetensorsFile.open(f).close());
        assertThat(used).isLessThan(FuzzProperty.ALLOCATION_SLACK);
        assertThatThrownBy(() -> SafetensorsFile.open(f)).isInstanceOf(MtpException.class)
                .hasMessageContaining("header length");
    }

    @Test
    void aHugeTensorInAHugeSparseFileIsOnlyMapped(@TempDir Path dir) throws IOException {
        String header = "{\"t\":{\"dtype\":\"F32\",\"shape\":[805306368],\"data_offsets\":[0,3221225472]}}";
        byte[] h = header.getBytes();
        ByteBuffer b = ByteBuffer.allocate(8 + h.length).order(ByteOrder.LITTLE_ENDIAN);
        b.putLong(h.length).put(h);
        Path f = sparse(dir.resolve("mapped.safetensors"), 8 + h.length + 3221225472L, b.array());
        long used = FuzzProperty.check("mapped", 0, () -> {
            try (SafetensorsFile s = SafetensorsFile.open(f)) {
                assertThat(s.tensor("t").elementCount()).isEqualTo(805306368L);
            }
        });
        assertThat(used).as("opening maps, never copies").isLessThan(FuzzProperty.ALLOCATION_SLACK);
        assertThat(Files.size(f)).isGreaterThan(HUGE);
    }
}
