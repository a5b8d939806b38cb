package org.mtporacle.io;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

import org.mtporacle.api.MtpConfig;
import org.mtporacle.api.MtpException;

class ModelConfigReaderTest {
    static final Path EXTERNAL = Path.of("src/test/data/qwen35-mtp-transformers");

    private static ModelConfig parse(String json) throws Exception {
        JsonNode n = SafetensorsFile.JSON.readTree(json);
        return ModelConfigReader.parse(n, "test");
    }

    @Test
    void qwen35NestedLayoutReadsTextConfigAndRopeParameters() throws Exception {
        ModelConfig c = parse("{\"model_type\":\"qwen3_5\",\"tie_word_embeddings\":true,\"text_config\":{"
                + "\"model_type\":\"qwen3_5_text\",\"hidden_size\":1024,\"num_attention_heads\":8,"
                + "\"num_key_value_heads\":2,\"head_dim\":256,\"rms_norm_eps\":1e-6,\"vocab_size\":248320,"
                + "\"partial_rotary_factor\":0.5,\"rope_parameters\":{\"rope_theta\":1e7,"
                + "\"partial_rotary_factor\":0.25}}}");
        assertThat(c.layout()).isEqualTo("qwen3_5");
        assertThat(c.textModelType()).isEqualTo("qwen3_5_text");
        assertThat(c.tieWordEmbeddings()).isTrue();
        assertThat(c.rotaryDims()).isEqualTo(64); // rope_parameters wins over the text-level factor
        assertThat(c.ropeTheta()).isEqualTo(1e7);
        assertThat(c.vocabSize()).isEqualTo(248320);
        MtpConfig m = c.toMtpConfig(248320, 3584);
        assertThat(m.intermediateSize()).isEqualTo(3584);
        assertThat(m.groupSize()).isEqualTo(4);
    }

    @Test
    void qwen3NextFlatLayoutReadsTopLevelRopeFields() throws Exception {
        ModelConfig c = parse("{\"model_type\":\"qwen3_next\",\"hidden_size\":2048,\"num_attention_heads\":16,"
                + "\"num_key_value_heads\":2,\"head_dim\":256,\"rope_theta\":10000000,\"partial_rotary_factor\":0.25,"
                + "\"rms_norm_eps\":1e-6,\"vocab_size\":151936,\"tie_word_embeddings\":false}");
        assertThat(c.layout()).isEqualTo("flat");
        assertThat(c.rotaryDims()).isEqualTo(64);
        assertThat(c.ropeTheta()).isEqualTo(1e7);
        assertThat(c.tieWordEmbeddings()).isFalse();
    }

    @Test
    void companionLayoutAppliesSpecDefaults() throws Exception {
        ModelConfig c = parse("{\"model_type\":\"qwen3_5_mtp\",\"hidden_size\":96,\"num_attention_heads\":4,"
                + "\"num_key_value_heads\":2}");
        assertThat(c.layout()).isEqualTo("companion");
        assertThat(c.headDim()).isEqualTo(24); // floor(96 / 4)
        assertThat(c.partialRotaryFactor()).isEqualTo(1.0);
        assertThat(c.rotaryDims()).isEqualTo(24);
        assertThat(c.ropeTheta()).isEqualTo(10000.0);
        assertThat(c.vocabSize()).isNull();
        assertThat(c.quantization()).isNull();
    }

    @Test
    void headDimDefaultFloorsAnUnevenDivision() throws Exception {
        assertThat(parse("{\"hidden_size\":100,\"num_attention_heads\":3,\"num_key_value_heads\":1}").headDim())
                .isEqualTo(33);
    }

    @Test
    void missingHiddenSizeNamesTheField() {
        assertThatThrownBy(() -> parse("{\"text_config\":{\"num_attention_heads\":4,\"num_key_value_heads\":2}}"))
                .isInstanceOfSatisfying(MtpException.class, e -> {
                    assertThat(e.kind()).isEqualTo(MtpException.Kind.INCOMPATIBLE_MODEL);
                    assertThat(e.getMessage()).contains("text_config.hidden_size");
                });
    }

    @Test
    void quantizationOverridesInheritDefaultsAndMtpPrefixedKeysAreNormalised() throws Exception {
        ModelConfig c = parse("{\"model_type\":\"qwen3_5_mtp\",\"hidden_size\":64,\"num_attention_heads\":4,"
                + "\"num_key_value_heads\":2,\"quantization\":{\"group_size\":64,\"bits\":4,"
                + "\"mtp.layers.0.mlp.down_proj\":{\"bits\":8},\"fc\":false,\"lm_head\":{\"group_size\":32}}}");
        QuantizationConfig q = c.quantization();
        assertThat(q.specFor("layers.0.self_attn.q_proj")).isEqualTo(new QuantizationConfig.Spec(4, 64, "affine"));
        assertThat(q.specFor("layers.0.mlp.down_proj")).isEqualTo(new QuantizationConfig.Spec(8, 64, "affine"));
        assertThat(q.specFor("mtp.layers.0.mlp.down_proj")).isEqualTo(new QuantizationConfig.Spec(8, 64, "affine"));
        assertThat(q.specFor("fc")).isNull();
        assertThat(q.specFor("lm_head")).isEqualTo(new QuantizationConfig.Spec(4, 32, "affine"));
    }

    @Test
    void quantizationConfigKeyIsAcceptedToo() throws Exception {
        ModelConfig c = parse("{\"hidden_size\":64,\"num_attention_heads\":4,\"num_key_value_heads\":2,"
                + "\"quantization_config\":{\"group_size\":32,\"bits\":6}}");
        assertThat(c.quantization().defaults()).isEqualTo(new QuantizationConfig.Spec(6, 32, "affine"));
    }

    @Test
    void conflictingPrefixedAndUnprefixedOverridesAreRefused() {
        assertThatThrownBy(() -> parse("{\"hidden_size\":64,\"num_attention_heads\":4,\"num_key_value_heads\":2,"
                + "\"quantization\":{\"bits\":4,\"fc\":{\"bits\":8},\"mtp.fc\":{\"bits\":6}}}"))
                .isInstanceOf(MtpException.class).hasMessageContaining("disagree");
    }

    @Test
    void externalTransformersConfigsReadAsSpecified() {
        for (String variant : new String[] {"float32", "bfloat16"}) {
            Path p = EXTERNAL.resolve(variant).resolve("config.json");
            Assumptions.assumeTrue(Files.isRegularFile(p), "external data absent: " + p);
            ModelConfig c = ModelConfigReader.read(p);
            assertThat(c.layout()).isEqualTo("qwen3_5");
            assertThat(c.modelType()).isEqualTo("qwen3_5");
            assertThat(c.tieWordEmbeddings()).isFalse();
            assertThat(c.hiddenSize()).isEqualTo(256);
            assertThat(c.numHeads()).isEqualTo(4);
            assertThat(c.numKvHeads()).isEqualTo(2);
            assertThat(c.headDim()).isEqualTo(64);
            assertThat(c.rotaryDims()).isEqualTo(16);
            assertThat(c.ropeTheta()).isEqualTo(1e7);
            assertThat(c.rmsNormEps()).isEqualTo(1e-6);
            assertThat(c.vocabSize()).isEqualTo(1000);
        }
    }
}
