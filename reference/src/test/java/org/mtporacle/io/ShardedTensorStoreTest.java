package org.mtporacle.io;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MtpException;

class ShardedTensorStoreTest {
    @TempDir
    Path dir;

    private void shards() {
        new SafetensorsWriter().add("a", HostTensor.ofFloats(new float[] {1, 2}, 2)).write(dir.resolve("s1.safetensors"));
        new SafetensorsWriter().add("b", HostTensor.ofFloats(new float[] {3}, 1)).write(dir.resolve("s2.safetensors"));
    }

    private void index(String weightMap) throws IOException {
        Files.writeString(dir.resolve(ShardedTensorStore.INDEX_FILE), "{\"metadata\":{},\"weight_map\":" + weightMap
                + "}");
    }

    @Test
    void indexedShardsServeEveryTensorFromItsFile() throws IOException {
        shards();
        index("{\"a\":\"s1.safetensors\",\"b\":\"s2.safetensors\"}");
        try (TensorStore s = TensorStore.open(dir)) {
            assertThat(s.names()).containsExactly("a", "b");
            assertThat(s.tensor("b").toFloatArray()).containsExactly(3f);
            assertThat(s.fileOf("a").getFileName().toString()).isEqualTo("s1.safetensors");
            assertThat(s.files()).hasSize(2);
        }
    }

    @Test
    void directoryWithoutIndexUsesEverySafetensorsFile() {
        shards();
        try (TensorStore s = TensorStore.open(dir)) {
            assertThat(s.names()).containsExactly("a", "b");
        }
    }

    @Test
    void missingShardFileIsNamed() throws IOException {
        shards();
        index("{\"a\":\"s1.safetensors\",\"b\":\"s3.safetensors\"}");
        assertThatThrownBy(() -> ShardedTensorStore.open(dir)).isInstanceOfSatisfying(MtpException.class, e -> {
            assertThat(e.kind()).isEqualTo(MtpException.Kind.MALFORMED_FILE);
            assertThat(e.getMessage()).contains("s3.safetensors", "'b'", "does not exist");
        });
    }

    @Test
    void tensorListedButAbsentIsNamed() throws IOException {
        shards();
        index("{\"a\":\"s1.safetensors\",\"b\":\"s2.safetensors\",\"c\":\"s2.safetensors\"}");
        assertThatThrownBy(() -> ShardedTensorStore.open(dir)).isInstanceOfSatisfying(MtpException.class, e -> {
            assertThat(e.kind()).isEqualTo(MtpException.Kind.MALFORMED_FILE);
            assertThat(e.getMessage()).contains("'c'", "s2.safetensors", "absent");
        });
    }

    @Test
    void tensorPresentInTwoShardsIsRefused() throws IOException {
        shards();
        new SafetensorsWriter().add("a", HostTensor.ofFloats(new float[] {9}, 1)).write(dir.resolve("s3.safetensors"));
        index("{\"a\":\"s1.safetensors\",\"b\":\"s2.safetensors\",\"x\":\"s3.safetensors\"}");
        assertThatThrownBy(() -> ShardedTensorStore.open(dir)).isInstanceOfSatisfying(MtpException.class, e -> {
            assertThat(e.kind()).isEqualTo(MtpException.Kind.MALFORMED_FILE);
            assertThat(e.getMessage()).contains("'a'", "two shards", "s1.safetensors", "s3.safetensors");
        });
    }

    @Test
    void shardPathEscapingTheDirectoryIsRefused() throws IOException {
        shards();
        index("{\"a\":\"../s1.safetensors\"}");
        assertThatThrownBy(() -> ShardedTensorStore.open(dir)).isInstanceOf(MtpException.class)
                .hasMessageContaining("expected a file name");
    }
}
