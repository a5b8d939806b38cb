package org.mtporacle.io;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.mtporacle.api.DType;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.MtpModel;
import org.mtporacle.io.fuzz.FuzzProperty;
import org.mtporacle.reference.fixture.FixtureModels;
import org.mtporacle.reference.fixture.FixtureModels.Layout;

/** Model directories and checkpoint files that lie about sizes or carry weights that poison f32 arithmetic. */
class UntrustedModelTest {
    @TempDir
    Path tmp;

    private Path tiny(String name) {
        return FixtureModels.write("tiny", 7, tmp.resolve(name), Layout.HF, DType.F32, 0, 32);
    }

    /** Sets {@code field} wherever it occurs in config.json (top level or text_config). */
    private static void setConfig(Path dir, String field, long value) throws IOException {
        Path f = dir.resolve("config.json");
        ObjectNode root = (ObjectNode) SafetensorsFile.JSON.readTree(Files.readString(f));
        JsonNode text = root.get("text_config");
        ((ObjectNode) (text != null && text.has(field) ? text : root)).put(field, value);
        Files.writeString(f, SafetensorsFile.JSON.writeValueAsString(root));
    }

    @Test
    void aHeadCountWhoseShapeProductsWrapIsRefusedByTheLoader() throws IOException {
        // tiny: nH 4, D 16. nH = 4 + 2^28 makes nH·2·D ≡ 128 and nH·D ≡ 64 (mod 2^32): in int arithmetic every
        // projection shape "matches" the real tensors, and attention would then index far outside them
        Path dir = tiny("heads");
        setConfig(dir, "num_attention_heads", 4 + (1L << 28));
        assertThatThrownBy(() -> ModelLoader.load(dir)).isInstanceOfSatisfying(MtpException.class, e -> {
            assertThat(e.kind()).isEqualTo(MtpException.Kind.INCOMPATIBLE_MODEL);
            assertThat(e.getMessage()).contains("num_attention_heads");
        });
    }

    @Test
    void aSingleHugeFiniteWeightIsRefusedLikeNan() {
        Path src = tiny("src");
        Path bad = tmp.resolve("huge");
        String name = "mtp.layers.0.self_attn.k_proj.weight";
        try {
            Files.createDirectories(bad);
            Files.copy(src.resolve("config.json"), bad.resolve("config.json"));
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
        SafetensorsWriter w = new SafetensorsWriter();
        try (TensorStore s = TensorStore.open(src.resolve("model.safetensors"))) {
            for (String n : s.names()) {
                HostTensor t = s.tensor(n);
                if (n.equals(name)) {
                    float[] v = t.toFloatArray();
                    v[17] = 3.4e38f;
                    t = HostTensor.ofFloats(t.dtype(), v, t.shape());
                }
                w.add(n, t);
            }
            w.write(bad.resolve("model.safetensors"));
        }
        MtpModel ok = ModelLoader.load(src);
        assertThat(ok.config().hiddenSize()).isEqualTo(64);
        assertThatThrownBy(() -> ModelLoader.load(bad)).isInstanceOfSatisfying(MtpException.class, e -> {
            assertThat(e.kind()).isEqualTo(MtpException.Kind.INCOMPATIBLE_MODEL);
            assertThat(e.getMessage()).contains("layers.0.self_attn.k_proj", "f32", "refused like NaN");
        });
    }

    @Test
    void theWorstCaseOfTheBundledFixtureIsFarBelowTheBound() {
        // the bound is not a hair-trigger: 1000× larger weights everywhere would still pass on tiny
        MtpModel m = ModelLoader.load(tiny("fine"));
        assertThat(BlockBounds.max(m.weights().kProj())).isLessThan(10);
        assertThat(BlockBounds.maxAbs(HostTensor.ofFloats(new float[] {1f, -3.5f, 2f}, 3))).isEqualTo(3.5);
        assertThat(BlockBounds.maxAbs(HostTensor.ofFloats(new float[] {1f, -3.5f, 2f}, 3).convert(DType.BF16)))
                .isEqualTo(3.5);
        assertThat(BlockBounds.maxAbs(HostTensor.ofFloats(new float[] {-65504f, 2f}, 2).convert(DType.F16)))
                .isEqualTo(65504);
    }

    @Test
    void aSparseCheckpointLargerThanTheLimitIsRefusedBeforeItIsMapped() throws IOException {
        Path f = tmp.resolve("huge.safetensors");
        try (RandomAccessFile raf = new RandomAccessFile(f.toFile(), "rw")) {
            raf.setLength(CheckpointFiles.MAX_BYTES + 1);
        }
        long used = FuzzProperty.check("checkpoint", 0, () -> CheckpointFiles.read(f));
        assertThat(used).isLessThan(FuzzProperty.ALLOCATION_SLACK);
        assertThatThrownBy(() -> CheckpointFiles.read(f)).isInstanceOf(MtpException.class)
                .hasMessageContaining("more than the " + CheckpointFiles.MAX_BYTES);
    }

    @Test
    void aCheckpointIsMappedNotCopied() throws IOException {
        // a valid checkpoint of 2^28 bytes of keys (sparse: zeros): reading it must not copy them to the heap
        int positions = 1 << 20;
        String header = "{\"__metadata__\":{\"format\":\"" + CheckpointFiles.FORMAT + "\",\"schema\":\"qwen-mtp-v1\","
                + "\"processedTokens\":\"" + (positions + 1) + "\",\"draftOffset\":\"" + positions + "\","
                + "\"modelIdentity\":\"x\"},"
                + "\"keys\":{\"dtype\":\"F32\",\"shape\":[1,2,"
                + positions + ",16],\"data_offsets\":[0," + (128L * positions) + "]},"
                + "\"values\":{\"dtype\":\"F32\",\"shape\":[1,2," + positions + ",16],\"data_offsets\":["
                + (128L * positions) + "," + (256L * positions) + "]},"
                + "\"hidden\":{\"dtype\":\"F32\",\"shape\":[1,1,64],\"data_offsets\":[" + (256L * positions) + ","
                + (256L * positions + 256) + "]}}";
        byte[] h = header.getBytes(java.nio.charset.StandardCharsets.UTF_8);
        Path f = tmp.resolve("mapped.safetensors");
        try (RandomAccessFile raf = new RandomAccessFile(f.toFile(), "rw")) {
            java.nio.ByteBuffer len = java.nio.ByteBuffer.allocate(8).order(java.nio.ByteOrder.LITTLE_ENDIAN);
            raf.write(len.putLong(h.length).array());
            raf.write(h);
            raf.setLength(8 + h.length + 256L * positions + 256);
        }
        long used = FuzzProperty.check("checkpoint", 0, () -> {
            var cp = CheckpointFiles.read(f);
            assertThat(cp.keys().elementCount()).isEqualTo(32L * positions);
        });
        assertThat(used).as("bytes allocated reading a 256 MiB checkpoint").isLessThan(FuzzProperty.ALLOCATION_SLACK);
    }
}
