package org.mtporacle.io;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;

import org.junit.jupiter.api.Test;

import org.mtporacle.api.MtpException;
import org.mtporacle.api.TargetConfig;
import org.mtporacle.api.TargetConfig.LayerType;

/** The release config keys of a hybrid target (spec §13.1): both layouts, the MoE layer rules, defaults, errors. */
class TargetConfigReaderTest {
    /** The text keys of a small Qwen3-Next-like model, without the outer braces. */
    private static final String TEXT = "\"hidden_size\":64,\"num_hidden_layers\":8,\"num_attention_heads\":4,"
            + "\"num_key_value_heads\":2,\"head_dim\":16,\"linear_num_key_heads\":2,\"linear_num_value_heads\":4,"
            + "\"linear_key_head_dim\":16,\"linear_value_head_dim\":16,\"rms_norm_eps\":1e-6,\"vocab_size\":512,"
            + "\"partial_rotary_factor\":0.25";

    private static TargetReleaseConfig parse(String json) throws Exception {
        return TargetConfigReader.parse(SafetensorsFile.JSON.readTree(json), "test.json");
    }

    @Test
    void aFlatQwen3NextConfigTakesTopLevelRopeAndDefaultsIntervalAndKernel() throws Exception {
        TargetReleaseConfig c = parse("{\"model_type\":\"qwen3_next\",\"architectures\":[\"Qwen3NextForCausalLM\"],"
                + TEXT + ",\"rope_theta\":5e6,\"intermediate_size\":96,\"num_experts\":8,\"num_experts_per_tok\":2,"
                + "\"moe_intermediate_size\":32,\"shared_expert_intermediate_size\":32,\"norm_topk_prob\":true,"
                + "\"decoder_sparse_step\":2,\"mlp_only_layers\":[5]}");
        assertThat(c.layout()).isEqualTo("qwen3_next");
        assertThat(c.tensorPrefix()).isEqualTo("model.");
        TargetConfig t = c.config();
        assertThat(t.layers()).isEqualTo(TargetConfig.interval(8, 4));
        assertThat(t.layers().get(3)).isEqualTo(LayerType.FULL_ATTENTION);
        assertThat(t.gdn().convKernel()).isEqualTo(4);
        assertThat(t.shape().ropeTheta()).isEqualTo(5e6);
        assertThat(t.shape().rotaryDims()).isEqualTo(4);
        assertThat(t.shape().intermediateSize()).as("the experts' width").isEqualTo(32);
        assertThat(c.denseWidth()).isEqualTo(96);
        // (i+1) % 2 == 0 and not in mlp_only_layers: 1, 3, 7
        assertThat(c.moeLayers()).containsExactly(false, true, false, true, false, false, false, true);
        assertThat(c.mambaSsmDtype()).isEqualTo("float32");
        assertThat(c.warnings()).isEmpty();
    }

    @Test
    void aQwen35MoeConfigIsMoeEverywhereAndAlwaysRenormalises() throws Exception {
        TargetReleaseConfig c = parse("{\"model_type\":\"qwen3_5_moe\",\"architectures\":"
                + "[\"Qwen3_5MoeForConditionalGeneration\"],\"tie_word_embeddings\":false,\"text_config\":{" + TEXT
                + ",\"rope_parameters\":{\"rope_theta\":1e7},\"num_experts\":8,\"num_experts_per_tok\":2,"
                + "\"moe_intermediate_size\":32,\"shared_expert_intermediate_size\":32,\"norm_topk_prob\":false}}");
        assertThat(c.moeLayers()).containsOnly(true).hasSize(8);
        assertThat(c.denseWidth()).isNull();
        assertThat(c.common().moe().normTopkProb()).isTrue();
        assertThat(c.tieWordEmbeddings()).isFalse();
        assertThat(c.warnings()).singleElement().asString().contains("always renormalises");
    }

    @Test
    void anUnexpectedArchitectureIsAWarning() throws Exception {
        TargetReleaseConfig c = parse("{\"model_type\":\"qwen3_next\",\"architectures\":[\"LlamaForCausalLM\"],"
                + TEXT + ",\"rope_theta\":1e7,\"intermediate_size\":96}");
        assertThat(c.warnings()).singleElement().asString().contains("'LlamaForCausalLM'", "Qwen3NextForCausalLM");
    }

    @Test
    void badMoeKeysAndMissingWidthsAreRefusedNamingTheKey() {
        for (List<String> bad : List.of(
                List.of(",\"rope_theta\":1e7", "missing intermediate_size in test.json (spec §13.1)"),
                List.of(",\"rope_theta\":1e7,\"intermediate_size\":9,\"decoder_sparse_step\":0",
                        "load: decoder_sparse_step = 0, expected a positive integer in test.json"),
                List.of(",\"rope_theta\":1e7,\"intermediate_size\":9,\"mlp_only_layers\":[8]",
                        "load: mlp_only_layers[0] = 8, expected a layer index in [0, 8)"),
                List.of(",\"intermediate_size\":9", "load: missing rope_theta in test.json"),
                List.of(",\"rope_theta\":1e7,\"num_experts\":4,\"num_experts_per_tok\":2",
                        "load: missing moe_intermediate_size in test.json"),
                List.of(",\"rope_theta\":1e7,\"intermediate_size\":9,\"full_attention_interval\":0",
                        "load: full_attention_interval = 0, expected a positive integer"),
                List.of(",\"rope_theta\":1e7,\"intermediate_size\":9,\"hidden_act\":\"gelu\"",
                        "load: hidden_act = 'gelu', expected silu"),
                List.of(",\"rope_theta\":-1,\"intermediate_size\":9", "load: rope_theta = -1.0 must be positive"))) {
            assertThatThrownBy(() -> parse("{\"model_type\":\"qwen3_next\"," + TEXT + bad.get(0) + "}"))
                    .as(bad.get(0)).isInstanceOfSatisfying(MtpException.class, e -> {
                        assertThat(e.kind()).isEqualTo(MtpException.Kind.INCOMPATIBLE_MODEL);
                        assertThat(e.getMessage()).contains(bad.get(1)).doesNotContain("\n");
                    });
        }
    }

    @Test
    void aQwen35ConfigWithoutTextConfigIsRefused() {
        assertThatThrownBy(() -> parse("{\"model_type\":\"qwen3_5\"," + TEXT + "}"))
                .hasMessageContaining("load: model_type qwen3_5 needs a text_config object, got nothing in test.json");
        assertThatThrownBy(() -> parse("{" + TEXT + "}"))
                .hasMessage("load: missing model_type in test.json (spec §13.1)");
    }
}
