package org.mtporacle.io;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import org.mtporacle.api.DType;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.LinearWeight;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.MtpWeights;
import org.mtporacle.reference.fixture.FixtureModels;
import org.mtporacle.reference.fixture.FixtureModels.Layout;

class ModelLoaderTest {
    private static final long SEED = 11L;

    @TempDir
    Path tmp;

    private static void assertSameLinear(LinearWeight a, LinearWeight b, String what) {
        switch (a) {
            case LinearWeight.Dense d -> assertThat(d.weight().contentEquals(((LinearWeight.Dense) b).weight()))
                    .as(what).isTrue();
            case LinearWeight.Affine q -> {
                LinearWeight.Affine r = (LinearWeight.Affine) b;
                assertThat(q.codes().contentEquals(r.codes()) && q.scales().contentEquals(r.scales())
                        && q.biases().contentEquals(r.biases()) && q.bits() == r.bits()
                        && q.groupSize() == r.groupSize()).as(what).isTrue();
            }
        }
    }

    static void assertSameWeights(MtpWeights a, MtpWeights b) {
        assertSameLinear(a.fc(), b.fc(), "fc");
        assertSameLinear(a.qProj(), b.qProj(), "q_proj");
        assertSameLinear(a.kProj(), b.kProj(), "k_proj");
        assertSameLinear(a.vProj(), b.vProj(), "v_proj");
        assertSameLinear(a.oProj(), b.oProj(), "o_proj");
        assertSameLinear(a.gateProj(), b.gateProj(), "gate_proj");
        assertSameLinear(a.upProj(), b.upProj(), "up_proj");
        assertSameLinear(a.downProj(), b.downProj(), "down_proj");
        assertSameLinear(a.embedding(), b.embedding(), "embedding");
        assertSameLinear(a.head(), b.head(), "head");
        assertThat(a.preFcNormEmbedding()).isEqualTo(b.preFcNormEmbedding());
        assertThat(a.preFcNormHidden()).isEqualTo(b.preFcNormHidden());
        assertThat(a.inputNorm()).isEqualTo(b.inputNorm());
        assertThat(a.qNorm()).isEqualTo(b.qNorm());
        assertThat(a.kNorm()).isEqualTo(b.kNorm());
        assertThat(a.postAttentionNorm()).isEqualTo(b.postAttentionNorm());
        assertThat(a.finalNorm()).isEqualTo(b.finalNorm());
    }

    @ParameterizedTest(name = "{0} {1}-bit")
    @CsvSource({"BF16,0", "F16,0", "F32,0", "BF16,4", "F32,3", "BF16,6"})
    void hfAndCompanionFixturesLoadToIdenticalFullGainWeights(DType dtype, int bits) {
        System.out.println("seed " + SEED);
        Path hf = FixtureModels.write("tiny", SEED, tmp.resolve("hf"), Layout.HF, dtype, bits, 32);
        Path comp = FixtureModels.write("tiny", SEED, tmp.resolve("comp"), Layout.COMPANION, dtype, bits, 32);
        MtpModel a = ModelLoader.load(hf);
        MtpModel b = ModelLoader.load(comp);
        assertThat(a.layout()).isEqualTo("hf");
        assertThat(b.layout()).isEqualTo("companion");
        assertThat(a.config()).isEqualTo(b.config());
        assertThat(a.config().intermediateSize()).isEqualTo(128);
        assertThat(a.config().vocabSize()).isEqualTo(512);
        assertThat(a.config().rotaryDims()).isEqualTo(4);
        assertThat(a.warnings()).isEmpty();
        assertThat(b.warnings()).isEmpty();
        assertSameWeights(a.weights(), b.weights());
        assertThat(a.weights().fc()).isInstanceOf(bits == 0 ? LinearWeight.Dense.class : LinearWeight.Affine.class);
        assertThat(a.weights().embedding()).isInstanceOf(bits == 0 ? LinearWeight.Dense.class
                : LinearWeight.Affine.class);
        assertThat(a.identity()).isNotEqualTo(b.identity()).hasSize(64);
    }

    @Test
    void identityIsStableAndChangesWithOneByte() throws IOException {
        Path hf = FixtureModels.write("tiny", SEED, tmp.resolve("id"), Layout.HF, DType.BF16, 0, 32);
        String first = ModelLoader.load(hf).identity();
        assertThat(ModelLoader.load(hf).identity()).isEqualTo(first);
        Path file = hf.resolve("model.safetensors");
        byte[] all = Files.readAllBytes(file);
        all[all.length - 1] ^= 1;
        Files.write(file, all);
        assertThat(ModelLoader.load(hf).identity()).isNotEqualTo(first);
    }

    @Test
    void identityIsSha256OfFingerprintThenNamedFileBytes() throws Exception {
        Path hf = FixtureModels.write("tiny", SEED, tmp.resolve("sha"), Layout.HF, DType.F32, 0, 32);
        MtpModel m = ModelLoader.load(hf);
        ModelConfig cfg = ModelConfigReader.read(hf.resolve("config.json"));
        var md = java.security.MessageDigest.getInstance("SHA-256");
        md.update((cfg.fingerprint(m.config()) + ";layout=hf").getBytes(java.nio.charset.StandardCharsets.UTF_8));
        md.update("model.safetensors".getBytes(java.nio.charset.StandardCharsets.UTF_8));
        md.update(Files.readAllBytes(hf.resolve("model.safetensors")));
        assertThat(m.identity()).isEqualTo(java.util.HexFormat.of().formatHex(md.digest()));
    }

    @Test
    void foldIsPureAndZeroCentredPlusOneEqualsFullGainWhileFoldingTwiceIsFlagged() {
        Path hf = FixtureModels.write("tiny", SEED, tmp.resolve("hf"), Layout.HF, DType.BF16, 0, 32);
        Path comp = FixtureModels.write("tiny", SEED, tmp.resolve("comp"), Layout.COMPANION, DType.BF16, 0, 32);
        ModelConfig cfg = ModelConfigReader.read(hf.resolve("config.json"));
        try (TensorStore h = TensorStore.open(hf.resolve("model.safetensors"));
             TensorStore c = TensorStore.open(comp.resolve("model.safetensors"))) {
            Map<String, HostTensor> raw = new TreeMap<>();
            h.names().stream().filter(n -> n.startsWith("mtp.")).forEach(n -> raw.put(n.substring(4), h.tensor(n)));
            Map<String, HostTensor> full = new TreeMap<>();
            c.names().forEach(n -> full.put(n, c.tensor(n)));
            LinearWeight emb = new LinearWeight.Dense(h.tensor("model.language_model.embed_tokens.weight"));
            LinearWeight head = new LinearWeight.Dense(h.tensor("lm_head.weight"));
            Map<String, HostTensor> folded = NormFolding.fold(raw);
            assertThat(raw.get("norm.weight").dtype()).isEqualTo(DType.BF16); // input untouched
            MtpWeights fromHf = ModelLoader.assemble(cfg, folded, emb, head);
            MtpWeights fromCompanion = ModelLoader.assemble(cfg, full, emb, head);
            assertSameWeights(fromHf, fromCompanion);
            // each folded gain is 1 + w computed in f32 from the stored bf16 value
            HostTensor w = raw.get("pre_fc_norm_embedding.weight");
            for (int i = 0; i < w.elementCount(); i++) {
                assertThat(fromHf.preFcNormEmbedding()[i]).isEqualTo(1.0f + w.getFloat(i));
            }
            assertThat(NormFolding.suspiciousNorm("hf", fromHf.preFcNormEmbedding())).isNull();
            MtpWeights twice = ModelLoader.assemble(cfg, NormFolding.fold(folded), emb, head);
            assertThat(NormFolding.suspiciousNorm("hf", twice.preFcNormEmbedding()))
                    .contains("folded", "spec §11.4");
            assertThat(NormFolding.suspiciousNorm("companion", ModelLoader.assemble(cfg, raw, emb, head)
                    .preFcNormEmbedding())).contains("unfolded");
        }
    }

    @Test
    void checkpointFoldedTwiceOnDiskIsLoadedWithAWarning() {
        // an HF-layout file whose norms were already folded: write a companion, then re-save its tensors as hf
        Path comp = FixtureModels.write("tiny", SEED, tmp.resolve("comp"), Layout.COMPANION, DType.F32, 0, 32);
        Path bad = tmp.resolve("bad");
        Path hf = FixtureModels.write("tiny", SEED, tmp.resolve("hf"), Layout.HF, DType.F32, 0, 32);
        SafetensorsWriter w = new SafetensorsWriter();
        try (TensorStore c = TensorStore.open(comp.resolve("model.safetensors"));
             TensorStore h = TensorStore.open(hf.resolve("model.safetensors"))) {
            c.names().forEach(n -> w.add("mtp." + n, c.tensor(n)));
            h.names().stream().filter(n -> !n.startsWith("mtp.")).forEach(n -> w.add(n, h.tensor(n)));
            copyConfig(hf, bad);
            w.write(bad.resolve("model.safetensors"));
        }
        MtpModel m = ModelLoader.load(bad);
        assertThat(m.warnings()).singleElement().asString().contains("pre_fc_norm_embedding", "folded");
    }

    private static void copyConfig(Path from, Path to) {
        try {
            Files.createDirectories(to);
            Files.copy(from.resolve("config.json"), to.resolve("config.json"));
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /** Rewrites {@code src}'s model.safetensors into {@code dst}, changing tensors via {@code edit}. */
    private static Path rewrite(Path src, Path dst, java.util.function.BiConsumer<TensorStore, SafetensorsWriter> edit) {
        copyConfig(src, dst);
        SafetensorsWriter w = new SafetensorsWriter();
        try (TensorStore s = TensorStore.open(src.resolve("model.safetensors"))) {
            edit.accept(s, w);
            w.write(dst.resolve("model.safetensors"));
        }
        return dst;
    }

    @Test
    void missingTensorIsNamedWithTheDirectory() {
        Path hf = FixtureModels.write("tiny", SEED, tmp.resolve("hf"), Layout.HF, DType.BF16, 0, 32);
        Path bad = rewrite(hf, tmp.resolve("missing"), (s, w) -> s.names().stream()
                .filter(n -> !n.equals("mtp.layers.0.self_attn.k_proj.weight")).forEach(n -> w.add(n, s.tensor(n))));
        assertThatThrownBy(() -> ModelLoader.load(bad)).isInstanceOfSatisfying(MtpException.class, e -> {
            assertThat(e.kind()).isEqualTo(MtpException.Kind.INCOMPATIBLE_MODEL);
            assertThat(e.getMessage()).contains("missing tensor 'mtp.layers.0.self_attn.k_proj.weight'",
                    bad.toString());
        });
    }

    @Test
    void shapeMismatchNamesTheTensorWithActualAndExpected() {
        Path hf = FixtureModels.write("tiny", SEED, tmp.resolve("hf"), Layout.HF, DType.F32, 0, 32);
        Path bad = rewrite(hf, tmp.resolve("shape"), (s, w) -> s.names().forEach(n -> w.add(n,
                n.equals("mtp.layers.0.self_attn.o_proj.weight") ? s.tensor(n).reshape(32, 128) : s.tensor(n))));
        assertThatThrownBy(() -> ModelLoader.load(bad)).isInstanceOfSatisfying(MtpException.class, e -> {
            assertThat(e.kind()).isEqualTo(MtpException.Kind.INCOMPATIBLE_MODEL);
            assertThat(e.getMessage()).contains("mtp.layers.0.self_attn.o_proj.weight", "[32, 128]", "[64, 64]");
        });
    }

    private static void copyTargetHead(Path from, Path to) {
        try {
            String head = ShardedTensorStore.TARGET_HEAD_FILE;
            Files.copy(from.resolve(head), to.resolve(head));
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /** {@code t} with element {@code at} set to {@code v}, in its own dtype. */
    private static HostTensor withValue(HostTensor t, int at, float v) {
        float[] values = t.toFloatArray();
        values[at] = v;
        return HostTensor.ofFloats(t.dtype(), values, t.shape());
    }

    @Test
    void aNanWeightIsRefusedNamingTheTensorTheElementAndTheValue() {
        Path hf = FixtureModels.write("tiny", SEED, tmp.resolve("hf"), Layout.HF, DType.F32, 0, 32);
        String name = "mtp.layers.0.mlp.down_proj.weight";
        Path bad = rewrite(hf, tmp.resolve("nan"), (s, w) -> s.names().forEach(n -> w.add(n,
                n.equals(name) ? withValue(s.tensor(n), 3 * s.tensor(n).dim(1) + 5, Float.NaN) : s.tensor(n))));
        assertThatThrownBy(() -> ModelLoader.load(bad)).isInstanceOfSatisfying(MtpException.class, e -> {
            assertThat(e.kind()).isEqualTo(MtpException.Kind.INCOMPATIBLE_MODEL);
            assertThat(e.getMessage()).contains("'" + name + "'", "NaN at [3, 5]", bad.toString());
        });
    }

    @Test
    void infinitiesInNormsHeadsAndQuantizationScalesAreRefusedToo() {
        // BF16 norm (hf layout: checked after the +1 fold, which keeps an infinity infinite)
        Path hf = FixtureModels.write("tiny", SEED, tmp.resolve("hf"), Layout.HF, DType.BF16, 0, 32);
        Path norm = rewrite(hf, tmp.resolve("norm"), (s, w) -> s.names().forEach(n -> w.add(n,
                n.equals("mtp.norm.weight") ? withValue(s.tensor(n), 7, Float.POSITIVE_INFINITY) : s.tensor(n))));
        assertThatThrownBy(() -> ModelLoader.load(norm)).isInstanceOf(MtpException.class)
                .hasMessageContaining("'mtp.norm.weight' holds +Infinity at [7]");
        // the target's embedding, which is also the tied head
        String emb = "model.language_model.embed_tokens.weight";
        Path head = rewrite(hf, tmp.resolve("head"), (s, w) -> s.names().forEach(n -> w.add(n,
                n.equals(emb) ? withValue(s.tensor(n), s.tensor(n).dim(1) * 2 + 1, Float.NEGATIVE_INFINITY)
                        : s.tensor(n))));
        assertThatThrownBy(() -> ModelLoader.load(head)).isInstanceOf(MtpException.class)
                .hasMessageContaining("embed_tokens.weight' holds -Infinity at [2, 1]");
        // a 4-bit companion's BF16 scales
        Path q = FixtureModels.write("tiny", SEED, tmp.resolve("q"), Layout.COMPANION, DType.BF16, 4, 32);
        String scales = "layers.0.self_attn.q_proj.scales";
        Path badQ = rewrite(q, tmp.resolve("q-bad"), (s, w) -> s.names().forEach(n -> w.add(n,
                n.equals(scales) ? withValue(s.tensor(n), 1, Float.NaN) : s.tensor(n))));
        copyTargetHead(q, badQ);
        assertThatThrownBy(() -> ModelLoader.load(badQ)).isInstanceOf(MtpException.class)
                .hasMessageContaining("'" + scales + "' holds NaN at [0, 1]");
        assertThat(ModelLoader.load(q).weights().qProj()).isInstanceOf(LinearWeight.Affine.class); // the original loads
    }

    @Test
    void aDenseMlpBesideMoeTensorsIsRefusedNamingBoth() {
        Path hf = FixtureModels.write("tiny", SEED, tmp.resolve("hf"), Layout.HF, DType.F32, 0, 32);
        Path bad = rewrite(hf, tmp.resolve("moe"), (s, w) -> {
            s.names().forEach(n -> w.add(n, s.tensor(n)));
            w.add("mtp.layers.0.mlp.experts.0.gate_proj.weight", HostTensor.ofFloats(new float[4], 2, 2));
            w.add("mtp.layers.0.mlp.gate.weight", HostTensor.ofFloats(new float[4], 2, 2));
        });
        assertThatThrownBy(() -> ModelLoader.load(bad)).isInstanceOfSatisfying(MtpException.class, e -> {
            assertThat(e.kind()).isEqualTo(MtpException.Kind.INCOMPATIBLE_MODEL);
            assertThat(e.getMessage()).contains("'mtp.layers.0.mlp.gate_proj.weight' (a dense MLP) sits beside MoE",
                    "§12.2");
        });
    }

    @Test
    void quantizedLinearWithoutSpecIsRefusedNamingThePath() throws IOException {
        Path comp = FixtureModels.write("tiny", SEED, tmp.resolve("q"), Layout.COMPANION, DType.BF16, 4, 32);
        String cfg = Files.readString(comp.resolve("config.json"));
        ObjectMapper json = new ObjectMapper();
        var root = (com.fasterxml.jackson.databind.node.ObjectNode) json.readTree(cfg);
        ((com.fasterxml.jackson.databind.node.ObjectNode) root.get("quantization")).put("mtp.fc", false);
        Files.writeString(comp.resolve("config.json"), json.writeValueAsString(root));
        assertThatThrownBy(() -> ModelLoader.load(comp)).isInstanceOfSatisfying(MtpException.class, e -> {
            assertThat(e.kind()).isEqualTo(MtpException.Kind.INCOMPATIBLE_MODEL);
            assertThat(e.getMessage()).contains("linear 'fc'", "no quantization spec for 'fc'");
        });
    }

    @Test
    void companionWithoutTargetHeadExplainsTheConvention() throws IOException {
        Path comp = FixtureModels.write("tiny", SEED, tmp.resolve("c"), Layout.COMPANION, DType.BF16, 0, 32);
        Files.delete(comp.resolve(ShardedTensorStore.TARGET_HEAD_FILE));
        assertThatThrownBy(() -> ModelLoader.load(comp)).isInstanceOf(MtpException.class)
                .hasMessageContaining("target_head.safetensors").hasMessageContaining("target/");
    }

    @Test
    void companionAcceptsTargetSubdirectoryWithHfNames() throws IOException {
        Path hf = FixtureModels.write("tiny", SEED, tmp.resolve("hf"), Layout.HF, DType.BF16, 0, 32);
        Path comp = FixtureModels.write("tiny", SEED, tmp.resolve("c"), Layout.COMPANION, DType.BF16, 0, 32);
        Files.delete(comp.resolve(ShardedTensorStore.TARGET_HEAD_FILE));
        Files.createDirectories(comp.resolve("target"));
        try (TensorStore h = TensorStore.open(hf.resolve("model.safetensors"))) {
            SafetensorsWriter w = new SafetensorsWriter();
            h.names().stream().filter(n -> !n.startsWith("mtp.")).forEach(n -> w.add(n, h.tensor(n)));
            w.write(comp.resolve("target/model.safetensors"));
        }
        assertSameWeights(ModelLoader.load(comp).weights(), ModelLoader.load(hf).weights());
    }

    @Test
    void directoryWithoutPrefixOrCompanionTypeIsRefusedAsUndeterminable() {
        Path comp = FixtureModels.write("tiny", SEED, tmp.resolve("c"), Layout.COMPANION, DType.BF16, 0, 32);
        Path hf = FixtureModels.write("tiny", SEED, tmp.resolve("hf"), Layout.HF, DType.BF16, 0, 32);
        Path bad = tmp.resolve("undet");
        copyConfig(hf, bad);
        try (TensorStore c = TensorStore.open(comp.resolve("model.safetensors"))) {
            SafetensorsWriter w = new SafetensorsWriter();
            c.names().forEach(n -> w.add(n, c.tensor(n)));
            w.write(bad.resolve("model.safetensors"));
        }
        assertThatThrownBy(() -> ModelLoader.load(bad)).isInstanceOf(MtpException.class)
                .hasMessageContaining("cannot determine the layout");
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource({"float32", "bfloat16"})
    void externalTransformersModelLoadsAndMatchesRawBytesReadIndependently(String variant) throws IOException {
        Path dir = ModelConfigReaderTest.EXTERNAL.resolve(variant);
        Assumptions.assumeTrue(Files.isDirectory(dir), "external data absent: " + dir);
        MtpModel m = ModelLoader.load(dir);
        assertThat(m.layout()).isEqualTo("hf");
        assertThat(m.config().hiddenSize()).isEqualTo(256);
        assertThat(m.config().intermediateSize()).isEqualTo(512);
        assertThat(m.config().vocabSize()).isEqualTo(1000);
        assertThat(m.config().rotaryDims()).isEqualTo(16);
        assertThat(m.warnings()).isEmpty();
        // read the header and raw bytes with plain Java + Jackson, independent of SafetensorsFile
        byte[] all = Files.readAllBytes(dir.resolve("model.safetensors"));
        ByteBuffer b = ByteBuffer.wrap(all).order(ByteOrder.LITTLE_ENDIAN);
        int n = (int) b.getLong(0);
        JsonNode header = new ObjectMapper().readTree(new String(all, 8, n, java.nio.charset.StandardCharsets.UTF_8));
        boolean f32 = variant.equals("float32");
        java.util.function.BiFunction<String, Integer, Float> raw = (name, i) -> {
            long begin = header.get(name).get("data_offsets").get(0).longValue();
            int at = (int) (8 + n + begin) + i * (f32 ? 4 : 2);
            return f32 ? b.getFloat(at) : Float.intBitsToFloat((b.getShort(at) & 0xFFFF) << 16);
        };
        MtpWeights w = m.weights();
        for (int i : new int[] {0, 1, 100, 255}) {
            assertThat(w.finalNorm()[i]).isEqualTo(1.0f + raw.apply("mtp.norm.weight", i));
            assertThat(w.preFcNormEmbedding()[i]).isEqualTo(1.0f + raw.apply("mtp.pre_fc_norm_embedding.weight", i));
        }
        for (int i : new int[] {0, 7, 63}) {
            assertThat(w.kNorm()[i]).isEqualTo(1.0f + raw.apply("mtp.layers.0.self_attn.k_norm.weight", i));
        }
        HostTensor emb = ((LinearWeight.Dense) w.embedding()).weight();
        assertThat(emb.getFloat(317L * 256 + 5)).isEqualTo(raw.apply("model.language_model.embed_tokens.weight",
                317 * 256 + 5));
        HostTensor fc = ((LinearWeight.Dense) w.fc()).weight();
        assertThat(fc.getFloat(3L * 512 + 400)).isEqualTo(raw.apply("mtp.fc.weight", 3 * 512 + 400));
        HostTensor head = ((LinearWeight.Dense) w.head()).weight();
        assertThat(head.getFloat(999L * 256 + 255)).isEqualTo(raw.apply("lm_head.weight", 999 * 256 + 255));
        assertThat(w.head()).isNotSameAs(w.embedding());
    }
}
