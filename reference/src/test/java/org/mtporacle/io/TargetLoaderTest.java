package org.mtporacle.io;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.function.BiConsumer;
import java.util.function.Consumer;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import org.mtporacle.api.DType;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.LinearWeight;
import org.mtporacle.api.MlpWeights;
import org.mtporacle.api.MtpConfig;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.TargetConfig;
import org.mtporacle.api.TargetConfig.LayerType;
import org.mtporacle.api.TargetModel;
import org.mtporacle.api.TargetWeights;

/**
 * The target loader (spec §13.1) on the external transformers reference's tiny release-layout checkpoint (f32 and
 * bf16): config values, layer types, weights equal to the file's (full gains {@code 1 + w}, the GDN norm plain, the
 * conv reshaped), the tied head, the drafter still loading from the same directory; a Qwen3-Next interleaved copy
 * written here from the flat one loading to identical weights (dense and MLX affine); and each bad file refused with
 * one INCOMPATIBLE_MODEL line.
 */
class TargetLoaderTest {
    static final Path DATA = Path.of("src/test/data/qwen35-target-transformers");
    static final Path F32 = DATA.resolve("float32");
    static final Path BF16 = DATA.resolve("bfloat16");
    private static final String LM = "model.language_model.";
    private static final int HK = 2;
    private static final int HV = 4;
    private static final int DK = 16;
    private static final int DV = 16;
    private static final int H = 64;

    @TempDir
    Path tmp;

    @ParameterizedTest
    @ValueSource(strings = {"float32", "bfloat16"})
    void theExternalCheckpointLoadsWithItsConfigValuesAndLayerTypes(String variant) {
        TargetModel m = TargetLoader.load(DATA.resolve(variant));
        TargetConfig c = m.config();
        assertThat(c.shape()).isEqualTo(new MtpConfig(64, 4, 2, 16, 4, 1e7, 1e-6, 512, 128));
        assertThat(c.layers()).containsExactly(LayerType.LINEAR_ATTENTION, LayerType.LINEAR_ATTENTION,
                LayerType.LINEAR_ATTENTION, LayerType.FULL_ATTENTION);
        assertThat(c.gdn()).isEqualTo(new TargetConfig.Gdn(HK, HV, DK, DV, 4));
        assertThat(c.gdn().convDim()).isEqualTo(128);
        assertThat(m.layout()).isEqualTo("qwen3_5");
        assertThat(m.warnings()).isEmpty();
        assertThat(m.identity()).hasSize(64);
        assertThat(m.weights().tied()).isTrue();
        assertThat(m.weights().head()).isSameAs(m.weights().embedding());
        DType dtype = variant.equals("float32") ? DType.F32 : DType.BF16;
        assertThat(((LinearWeight.Dense) m.weights().embedding()).weight().dtype()).isEqualTo(dtype);
        for (int i = 0; i < 4; i++) {
            TargetWeights.Layer l = m.weights().layers().get(i);
            assertThat(l.mixer()).isInstanceOf(i == 3 ? TargetWeights.Attention.class : TargetWeights.Gdn.class);
            assertThat(l.mlp()).isInstanceOf(MlpWeights.Dense.class);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"float32", "bfloat16"})
    void weightsEqualTheFileValuesWithFullGainsAddedOnceAndThePlainGdnNorm(String variant) {
        Path dir = DATA.resolve(variant);
        TargetModel m = TargetLoader.load(dir);
        try (SafetensorsFile f = SafetensorsFile.open(dir.resolve("model.safetensors"))) {
            TargetWeights w = m.weights();
            for (int i = 0; i < 4; i++) {
                String p = LM + "layers." + i + ".";
                assertThat(w.layers().get(i).inputNorm()).as("layer %d input norm", i)
                        .isEqualTo(onePlus(f.tensor(p + "input_layernorm.weight")));
                assertThat(w.layers().get(i).postAttentionNorm()).as("layer %d post norm", i)
                        .isEqualTo(onePlus(f.tensor(p + "post_attention_layernorm.weight")));
                assertSameDense(((MlpWeights.Dense) w.layers().get(i).mlp()).downProj(),
                        f.tensor(p + "mlp.down_proj.weight"));
            }
            TargetWeights.Gdn g = (TargetWeights.Gdn) w.layers().get(1).mixer();
            String a = LM + "layers.1.linear_attn.";
            assertThat(g.norm()).as("GDN norm keeps its plain gain").isEqualTo(f.tensor(a + "norm.weight")
                    .toFloatArray());
            assertThat(g.aLog()).isEqualTo(f.tensor(a + "A_log").toFloatArray());
            assertThat(g.dtBias()).isEqualTo(f.tensor(a + "dt_bias").toFloatArray());
            HostTensor conv = f.tensor(a + "conv1d.weight");
            assertThat(conv.shape()).containsExactly(128, 1, 4);
            assertThat(g.conv()).hasSize(128 * 4);
            for (int c = 0; c < 128; c++) {
                for (int j = 0; j < 4; j++) {
                    assertThat(g.conv()[c * 4 + j]).as("conv [%d, %d]", c, j).isEqualTo(conv.getFloat(
                            (long) c * conv.dim(1) * conv.dim(2) + j));
                }
            }
            assertSameDense(g.inProjQkv(), f.tensor(a + "in_proj_qkv.weight"));
            assertSameDense(g.inProjZ(), f.tensor(a + "in_proj_z.weight"));
            assertSameDense(g.inProjB(), f.tensor(a + "in_proj_b.weight"));
            assertSameDense(g.inProjA(), f.tensor(a + "in_proj_a.weight"));
            assertSameDense(g.outProj(), f.tensor(a + "out_proj.weight"));
            TargetWeights.Attention at = (TargetWeights.Attention) w.layers().get(3).mixer();
            String s = LM + "layers.3.self_attn.";
            assertSameDense(at.qProj(), f.tensor(s + "q_proj.weight"));
            assertSameDense(at.oProj(), f.tensor(s + "o_proj.weight"));
            assertThat(at.qNorm()).isEqualTo(onePlus(f.tensor(s + "q_norm.weight")));
            assertThat(at.kNorm()).isEqualTo(onePlus(f.tensor(s + "k_norm.weight")));
            assertThat(w.finalNorm()).isEqualTo(onePlus(f.tensor(LM + "norm.weight")));
            assertSameDense(w.embedding(), f.tensor(LM + "embed_tokens.weight"));
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"float32", "bfloat16"})
    void theDrafterStillLoadsFromTheSameDirectory(String variant) {
        TargetModel t = TargetLoader.load(DATA.resolve(variant));
        MtpModel d = ModelLoader.load(DATA.resolve(variant));
        assertThat(d.layout()).isEqualTo("hf");
        assertThat(d.config()).isEqualTo(t.config().shape());
        assertThat(((LinearWeight.Dense) d.weights().embedding()).weight()
                .contentEquals(((LinearWeight.Dense) t.weights().embedding()).weight())).isTrue();
        assertThat(d.weights().head()).isSameAs(d.weights().embedding());
    }

    @Test
    void theTwoVariantsHaveDifferentIdentitiesAndLoadingTwiceGivesTheSame() {
        assertThat(TargetLoader.load(F32).identity()).isEqualTo(TargetLoader.load(F32).identity())
                .isNotEqualTo(TargetLoader.load(BF16).identity());
    }

    @Test
    void withoutLayerTypesTheFullAttentionIntervalGivesTheSameTypes() throws IOException {
        Path dir = rewrite("no-layer-types", c -> text(c).remove("layer_types"), null);
        assertThat(TargetLoader.load(dir).config().layers()).isEqualTo(TargetLoader.load(F32).config().layers());
        Path two = rewrite("interval-2", c -> {
            text(c).remove("layer_types");
            text(c).put("full_attention_interval", 2);
        }, null);
        assertThatThrownBy(() -> TargetLoader.load(two)).isInstanceOf(MtpException.class)
                .hasMessageContaining("missing tensor 'model.language_model.layers.1.self_attn.q_proj.weight'");
    }

    // ---- Qwen3-Next: the interleaved projections, written here with the index maths of the release ---------------

    /** {@code [q|k|v|z]} rows per key group, as {@code fix_query_key_value_ordering} reads them. */
    private static HostTensor interleaveQkvz(HostTensor qkv, HostTensor z) {
        int r = HV / HK;
        int group = 2 * DK + 2 * r * DV;
        HostTensor[] rows = new HostTensor[HK * group];
        for (int g = 0; g < HK; g++) {
            for (int x = 0; x < DK; x++) {
                rows[g * group + x] = qkv.slice0(g * DK + x, g * DK + x + 1);
                rows[g * group + DK + x] = qkv.slice0(HK * DK + g * DK + x, HK * DK + g * DK + x + 1);
            }
            for (int i = 0; i < r; i++) {
                int v = g * r + i;
                for (int x = 0; x < DV; x++) {
                    rows[g * group + 2 * DK + i * DV + x] = qkv.slice0(2 * HK * DK + v * DV + x,
                            2 * HK * DK + v * DV + x + 1);
                    rows[g * group + 2 * DK + r * DV + i * DV + x] = z.slice0(v * DV + x, v * DV + x + 1);
                }
            }
        }
        return concat(rows);
    }

    /** {@code [b_g | a_g]} per key group. */
    private static HostTensor interleaveBa(HostTensor b, HostTensor a) {
        int r = HV / HK;
        HostTensor[] rows = new HostTensor[2 * HV];
        for (int g = 0; g < HK; g++) {
            for (int i = 0; i < r; i++) {
                rows[g * 2 * r + i] = b.slice0(g * r + i, g * r + i + 1);
                rows[g * 2 * r + r + i] = a.slice0(g * r + i, g * r + i + 1);
            }
        }
        return concat(rows);
    }

    private static HostTensor concat(HostTensor[] rows) {
        long rowBytes = rows[0].byteSize();
        MemorySegment seg = Arena.ofAuto().allocate(rowBytes * rows.length);
        for (int i = 0; i < rows.length; i++) {
            seg.asSlice(i * rowBytes, rowBytes).copyFrom(rows[i].data());
        }
        return HostTensor.view(rows[0].dtype(), new int[] {rows.length, rows[0].dim(1)}, seg);
    }

    /** The external config rewritten flat as a Qwen3-Next release's ({@code model_type} qwen3_next). */
    private static void flatten(ObjectNode c) {
        ObjectNode t = text(c).deepCopy();
        c.removeAll();
        c.putArray("architectures").add("Qwen3NextForCausalLM");
        c.setAll(t);
        c.put("model_type", "qwen3_next");
        c.put("rope_theta", 1e7);
        c.remove("rope_parameters");
    }

    /** The flat GDN projections of the layer prefix {@code a}, or, with {@code bits > 0}, their affine parts. */
    private static void writeInterleaved(TensorStore s, SafetensorsWriter w, String a, String to, int bits) {
        HostTensor[] qkv = parts(s.tensor(a + "in_proj_qkv.weight"), bits);
        HostTensor[] z = parts(s.tensor(a + "in_proj_z.weight"), bits);
        HostTensor[] b = parts(s.tensor(a + "in_proj_b.weight"), bits);
        HostTensor[] al = parts(s.tensor(a + "in_proj_a.weight"), bits);
        String[] suffix = {".weight", ".scales", ".biases"};
        for (int k = 0; k < qkv.length; k++) {
            w.add(to + "in_proj_qkvz" + suffix[k], interleaveQkvz(qkv[k], z[k]));
            w.add(to + "in_proj_ba" + suffix[k], interleaveBa(b[k], al[k]));
        }
    }

    /** {@code {weight}} or the affine {@code {codes, scales, biases}} of {@code t} at {@code bits}, group 32. */
    private static HostTensor[] parts(HostTensor t, int bits) {
        if (bits == 0) {
            return new HostTensor[] {t};
        }
        LinearWeight.Affine q = AffineQuantizer.quantize(t, bits, 32);
        return new HostTensor[] {q.codes(), q.scales(), q.biases()};
    }

    private static boolean flatGdn(String n) {
        return n.contains("linear_attn.in_proj_");
    }

    @ParameterizedTest(name = "{0}-bit")
    @ValueSource(ints = {0, 4})
    void aQwen3NextInterleavedCopyLoadsToTheSameFlatProjections(int bits) throws IOException {
        // the same projections in the Qwen3.5 flat layout (quantized alike when bits > 0)
        Path flat = rewrite("flat-" + bits, c -> quantization(c, bits), (s, w) -> {
            for (String n : s.names()) {
                if (flatGdn(n) && bits > 0) {
                    String path = n.substring(0, n.length() - ".weight".length());
                    HostTensor[] q = parts(s.tensor(n), bits);
                    w.add(path + ".weight", q[0]).add(path + ".scales", q[1]).add(path + ".biases", q[2]);
                } else {
                    w.add(n, s.tensor(n));
                }
            }
        });
        Path next = rewrite("next-" + bits, c -> {
            flatten(c);
            quantization(c, bits);
        }, (s, w) -> {
            for (String n : s.names()) {
                if (n.startsWith(LM) && !flatGdn(n)) {
                    w.add("model." + n.substring(LM.length()), s.tensor(n));
                }
            }
            for (int i = 0; i < 3; i++) {
                writeInterleaved(s, w, LM + "layers." + i + ".linear_attn.", "model.layers." + i + ".linear_attn.",
                        bits);
            }
        });
        TargetModel a = TargetLoader.load(flat);
        TargetModel b = TargetLoader.load(next);
        assertThat(b.layout()).isEqualTo("qwen3_next");
        assertThat(a.layout()).isEqualTo("qwen3_5");
        assertThat(b.config()).isEqualTo(a.config());
        assertThat(b.warnings()).isEmpty();
        for (int i = 0; i < 4; i++) {
            TargetWeights.Layer x = a.weights().layers().get(i);
            TargetWeights.Layer y = b.weights().layers().get(i);
            assertThat(y.inputNorm()).isEqualTo(x.inputNorm());
            if (x.mixer() instanceof TargetWeights.Gdn gx) {
                TargetWeights.Gdn gy = (TargetWeights.Gdn) y.mixer();
                assertSameLinear(gy.inProjQkv(), gx.inProjQkv(), "layer " + i + " in_proj_qkv");
                assertSameLinear(gy.inProjZ(), gx.inProjZ(), "layer " + i + " in_proj_z");
                assertSameLinear(gy.inProjB(), gx.inProjB(), "layer " + i + " in_proj_b");
                assertSameLinear(gy.inProjA(), gx.inProjA(), "layer " + i + " in_proj_a");
                assertThat(gy.conv()).isEqualTo(gx.conv());
                assertThat(bits == 0 ? gy.inProjQkv() : gy.inProjZ())
                        .isInstanceOf(bits == 0 ? LinearWeight.Dense.class : LinearWeight.Affine.class);
            }
        }
        assertThat(b.weights().finalNorm()).isEqualTo(a.weights().finalNorm());
        assertThat(b.weights().tied()).isTrue();
    }

    private static void quantization(ObjectNode c, int bits) {
        if (bits > 0) {
            c.putObject("quantization").put("bits", bits).put("group_size", 32);
        }
    }

    @Test
    void aQwen3NextMoeCopyWithPerExpertTensorsLoadsToTheSameWeights() throws IOException {
        Path fused = org.mtporacle.reference.fixture.TargetFixtures.write("tiny-moe-target", 3L,
                tmp.resolve("fused"), DType.F32);
        Path next = rewrite(fused, "next-moe", c -> {
            flatten(c);
            c.put("decoder_sparse_step", 1);
            c.putArray("mlp_only_layers");
        }, (s, w) -> {
            for (String n : s.names()) {
                if (!n.startsWith(LM) || flatGdn(n)) {
                    continue;
                }
                String to = "model." + n.substring(LM.length());
                if (n.endsWith("mlp.experts.gate_up_proj")) {
                    HostTensor gu = s.tensor(n);
                    int i = gu.dim(1) / 2;
                    String base = to.substring(0, to.length() - "gate_up_proj".length());
                    for (int e = 0; e < gu.dim(0); e++) {
                        HostTensor x = gu.slice0(e, e + 1).reshape(2 * i, gu.dim(2));
                        w.add(base + e + ".gate_proj.weight", x.slice0(0, i));
                        w.add(base + e + ".up_proj.weight", x.slice0(i, 2 * i));
                    }
                } else if (n.endsWith("mlp.experts.down_proj")) {
                    HostTensor d = s.tensor(n);
                    String base = to.substring(0, to.length() - "down_proj".length());
                    for (int e = 0; e < d.dim(0); e++) {
                        w.add(base + e + ".down_proj.weight", d.slice0(e, e + 1).reshape(d.dim(1), d.dim(2)));
                    }
                } else {
                    w.add(to, s.tensor(n));
                }
            }
            for (int i = 0; i < 3; i++) {
                writeInterleaved(s, w, LM + "layers." + i + ".linear_attn.", "model.layers." + i + ".linear_attn.", 0);
            }
        });
        TargetModel a = TargetLoader.load(fused);
        TargetModel b = TargetLoader.load(next);
        assertThat(b.layout()).isEqualTo("qwen3_next");
        assertThat(b.config()).isEqualTo(a.config());
        for (int i = 0; i < 4; i++) {
            MlpWeights.Moe x = (MlpWeights.Moe) a.weights().layers().get(i).mlp();
            MlpWeights.Moe y = (MlpWeights.Moe) b.weights().layers().get(i).mlp();
            assertThat(y.numExperts()).isEqualTo(8);
            assertThat(y.topK()).isEqualTo(2);
            assertSameLinear(y.router(), x.router(), "router " + i);
            assertSameLinear(y.sharedExpertGate(), x.sharedExpertGate(), "shared gate " + i);
            for (int e = 0; e < 8; e++) {
                assertSameLinear(y.experts().get(e).gateProj(), x.experts().get(e).gateProj(), "gate " + i + "/" + e);
                assertSameLinear(y.experts().get(e).upProj(), x.experts().get(e).upProj(), "up " + i + "/" + e);
                assertSameLinear(y.experts().get(e).downProj(), x.experts().get(e).downProj(), "down " + i + "/" + e);
            }
            if (a.weights().layers().get(i).mixer() instanceof TargetWeights.Gdn gx) {
                TargetWeights.Gdn gy = (TargetWeights.Gdn) b.weights().layers().get(i).mixer();
                assertSameLinear(gy.inProjQkv(), gx.inProjQkv(), "qkv " + i);
                assertSameLinear(gy.inProjZ(), gx.inProjZ(), "z " + i);
                assertSameLinear(gy.inProjB(), gx.inProjB(), "b " + i);
                assertSameLinear(gy.inProjA(), gx.inProjA(), "a " + i);
            }
        }
    }

    @Test
    void aShardedCopyLoadsToTheSameWeights() throws IOException {
        Path dir = tmp.resolve("sharded");
        Files.createDirectories(dir);
        Files.copy(F32.resolve("config.json"), dir.resolve("config.json"));
        ObjectNode index = SafetensorsFile.JSON.createObjectNode();
        ObjectNode map = index.putObject("weight_map");
        SafetensorsWriter[] shards = {new SafetensorsWriter(), new SafetensorsWriter()};
        try (TensorStore s = TensorStore.open(F32.resolve("model.safetensors"))) {
            for (String n : s.names()) {
                int k = n.contains(".layers.2.") || n.contains(".layers.3.") || n.startsWith("mtp.") ? 1 : 0;
                shards[k].add(n, s.tensor(n));
                map.put(n, "model-0000" + (k + 1) + "-of-00002.safetensors");
            }
            shards[0].write(dir.resolve("model-00001-of-00002.safetensors"));
            shards[1].write(dir.resolve("model-00002-of-00002.safetensors"));
        }
        Files.writeString(dir.resolve("model.safetensors.index.json"), SafetensorsFile.JSON.writeValueAsString(index));
        TargetModel a = TargetLoader.load(F32);
        TargetModel b = TargetLoader.load(dir);
        assertThat(b.config()).isEqualTo(a.config());
        for (int i = 0; i < 4; i++) {
            assertThat(b.weights().layers().get(i).inputNorm()).isEqualTo(a.weights().layers().get(i).inputNorm());
            assertSameLinear(((MlpWeights.Dense) b.weights().layers().get(i).mlp()).downProj(),
                    ((MlpWeights.Dense) a.weights().layers().get(i).mlp()).downProj(), "down " + i);
        }
        assertThat(ModelLoader.load(dir).config()).isEqualTo(a.config().shape());
    }

    // ---- bad files: one INCOMPATIBLE_MODEL line each ----------------------------------------------------------------

    private void assertRefused(Path dir, String... parts) {
        assertThatThrownBy(() -> TargetLoader.load(dir)).isInstanceOfSatisfying(MtpException.class, e -> {
            assertThat(e.kind()).isEqualTo(MtpException.Kind.INCOMPATIBLE_MODEL);
            assertThat(e.getMessage()).doesNotContain("\n").startsWith("load: ").contains(parts);
        });
    }

    private static BiConsumer<TensorStore, SafetensorsWriter> without(String name) {
        return (s, w) -> s.names().stream().filter(n -> !n.equals(name)).forEach(n -> w.add(n, s.tensor(n)));
    }

    @Test
    void aMissingTensorIsNamedWithTheDirectory() throws IOException {
        Path dir = rewrite("missing", null, without(LM + "layers.2.linear_attn.A_log"));
        assertThatThrownBy(() -> TargetLoader.load(dir)).isInstanceOf(MtpException.class).hasMessage(
                "load: missing tensor 'model.language_model.layers.2.linear_attn.A_log' in " + dir + " (spec §13.1)");
    }

    @Test
    void aWrongShapeIsRefusedWithBothShapes() throws IOException {
        String z = LM + "layers.0.linear_attn.in_proj_z.weight";
        Path dir = rewrite("shape", null, (s, w) -> {
            without(z).accept(s, w);
            w.add(z, s.tensor(z).slice0(0, 63));
        });
        assertRefused(dir, "'" + z + "' has logical shape [63, 64], expected [64, 64]");
        String conv = LM + "layers.1.linear_attn.conv1d.weight";
        Path dir2 = rewrite("conv-shape", null, (s, w) -> {
            without(conv).accept(s, w);
            w.add(conv, s.tensor(conv).reshape(128, 4));
        });
        assertRefused(dir2, "'" + conv + "' is F32[128, 4], expected a float tensor [128, 1, 4]");
    }

    @Test
    void aNanWeightIsRefusedWithItsIndex() throws IOException {
        String dt = LM + "layers.1.linear_attn.dt_bias";
        Path dir = rewrite("nan", null, (s, w) -> {
            without(dt).accept(s, w);
            float[] v = s.tensor(dt).toFloatArray();
            v[2] = Float.NaN;
            w.add(dt, HostTensor.ofFloats(v, 4));
        });
        assertRefused(dir, "'" + dt + "' holds NaN at [2]");
    }

    @Test
    void layerTypesOfTheWrongLengthOrAnUnknownTypeAreRefused() throws IOException {
        Path shortList = rewrite("short", c -> ((ArrayNode) text(c).get("layer_types")).remove(0), null);
        assertRefused(shortList, "text_config.layer_types has 3 entries, expected num_hidden_layers = 4",
                shortList.resolve("config.json").toString(), "(spec §13.1)");
        Path unknown = rewrite("unknown-type", c -> ((ArrayNode) text(c).get("layer_types")).set(1,
                "sliding_attention"), null);
        assertRefused(unknown, "text_config.layer_types[1] = 'sliding_attention', expected 'linear_attention' or "
                + "'full_attention'");
    }

    @Test
    void aMissingConfigKeyIsNamedWithTheFile() throws IOException {
        Path dir = rewrite("no-key", c -> text(c).remove("linear_num_value_heads"), null);
        assertRefused(dir, "load: missing text_config.linear_num_value_heads in " + dir.resolve("config.json"));
        Path theta = rewrite("no-theta", c -> ((ObjectNode) text(c).get("rope_parameters")).remove("rope_theta"),
                null);
        assertRefused(theta, "missing text_config.rope_theta");
        Path type = rewrite("llama", c -> c.put("model_type", "llama"), null);
        assertRefused(type, "model_type = 'llama', expected qwen3_5, qwen3_5_moe or qwen3_next");
        Path heads = rewrite("heads", c -> text(c).put("linear_num_value_heads", 3), null);
        assertRefused(heads, "linear_num_value_heads = 3 must be a positive multiple of linear_num_key_heads = 2");
    }

    @Test
    void anUntiedCheckpointWithoutLmHeadIsRefused() throws IOException {
        Path dir = rewrite("untied", c -> {
            c.put("tie_word_embeddings", false);
            text(c).put("tie_word_embeddings", false);
        }, null);
        assertRefused(dir, "load: missing tensor 'lm_head.weight' in " + dir + " (tie_word_embeddings is false");
    }

    @Test
    void anUntiedCheckpointUsesItsLmHead() throws IOException {
        Path dir = rewrite("untied-head", c -> {
            c.put("tie_word_embeddings", false);
            text(c).put("tie_word_embeddings", false);
        }, (s, w) -> {
            s.names().forEach(n -> w.add(n, s.tensor(n)));
            w.add("lm_head.weight", s.tensor(LM + "embed_tokens.weight").convert(DType.BF16));
        });
        TargetModel m = TargetLoader.load(dir);
        assertThat(m.weights().tied()).isFalse();
        assertThat(((LinearWeight.Dense) m.weights().head()).weight().dtype()).isEqualTo(DType.BF16);
    }

    @Test
    void aTensorALayerDoesNotReadIsAnErrorAndOneOutsideTheLayersAWarning() throws IOException {
        String bias = LM + "layers.0.linear_attn.in_proj_qkv.bias";
        Path dir = rewrite("bias", null, (s, w) -> {
            s.names().forEach(n -> w.add(n, s.tensor(n)));
            w.add(bias, HostTensor.ofFloats(new float[128], 128));
        });
        assertRefused(dir, "unknown tensor '" + bias + "'", "layer 0 (linear_attention, dense MLP) reads no such");
        String extra = LM + "layers.4.input_layernorm.weight";
        Path past = rewrite("layer-4", null, (s, w) -> {
            s.names().forEach(n -> w.add(n, s.tensor(n)));
            w.add(extra, HostTensor.ofFloats(new float[64], 64));
        });
        assertRefused(past, "unknown tensor '" + extra + "'", "num_hidden_layers = 4");
        String inv = LM + "rotary_emb.inv_freq";
        Path warn = rewrite("inv-freq", null, (s, w) -> {
            s.names().forEach(n -> w.add(n, s.tensor(n)));
            w.add(inv, HostTensor.ofFloats(new float[2], 2));
        });
        assertThat(TargetLoader.load(warn).warnings()).singleElement().asString().contains(inv);
    }

    @Test
    void aNonF32SsmDtypeIsAWarningAndAnUnknownOneAnError() throws IOException {
        Path bf = rewrite("ssm-bf16", c -> text(c).put("mamba_ssm_dtype", "bfloat16"), null);
        assertThat(TargetLoader.load(bf).warnings()).singleElement().asString().contains("mamba_ssm_dtype is bfloat16");
        Path f64 = rewrite("ssm-f64", c -> text(c).put("mamba_ssm_dtype", "float64"), null);
        assertRefused(f64, "text_config.mamba_ssm_dtype = 'float64', expected float32, bfloat16 or float16");
    }

    // ---- helpers ---------------------------------------------------------------------------------------------------

    private static ObjectNode text(ObjectNode c) {
        return (ObjectNode) c.get("text_config");
    }

    /** The f32 external set copied to {@code tmp/name}, config and tensors edited (null: unchanged). */
    private Path rewrite(String name, Consumer<ObjectNode> config, BiConsumer<TensorStore, SafetensorsWriter> tensors)
            throws IOException {
        return rewrite(F32, name, config, tensors);
    }

    /** The model in {@code src} copied to {@code tmp/name}, config and tensors edited (null: unchanged). */
    private Path rewrite(Path src, String name, Consumer<ObjectNode> config,
                         BiConsumer<TensorStore, SafetensorsWriter> tensors) throws IOException {
        Path dst = tmp.resolve(name);
        Files.createDirectories(dst);
        ObjectNode c = (ObjectNode) SafetensorsFile.JSON.readTree(src.resolve("config.json").toFile());
        if (config != null) {
            config.accept(c);
        }
        Files.writeString(dst.resolve("config.json"), SafetensorsFile.JSON.writeValueAsString(c));
        SafetensorsWriter w = new SafetensorsWriter();
        try (TensorStore s = TensorStore.open(src.resolve("model.safetensors"))) {
            (tensors == null ? (BiConsumer<TensorStore, SafetensorsWriter>) (x, y) -> x.names()
                    .forEach(n -> y.add(n, x.tensor(n))) : tensors).accept(s, w);
            w.write(dst.resolve("model.safetensors"));
        }
        return dst;
    }

    /** {@code 1 + w} in f32, computed here. */
    private static float[] onePlus(HostTensor w) {
        float[] v = new float[(int) w.elementCount()];
        for (int i = 0; i < v.length; i++) {
            v[i] = 1.0f + w.getFloat(i);
        }
        return v;
    }

    private static void assertSameDense(LinearWeight w, HostTensor expected) {
        assertThat(((LinearWeight.Dense) w).weight().contentEquals(expected)).as(expected.describe()).isTrue();
    }

    static void assertSameLinear(LinearWeight a, LinearWeight b, String what) {
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
}
