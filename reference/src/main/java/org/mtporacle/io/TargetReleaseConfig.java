package org.mtporacle.io;

import java.util.List;

import org.mtporacle.api.TargetConfig;

/**
 * What a release's {@code config.json} says about its hybrid target (spec §13.1), before the tensors are read.
 *
 * @param modelType         top-level {@code model_type}: {@code qwen3_5}, {@code qwen3_5_moe} or {@code qwen3_next}
 * @param layout            {@code "qwen3_5"} (nested {@code text_config}, tensors {@code model.language_model.*},
 *                          flat GDN projections) or {@code "qwen3_next"} (flat config, tensors {@code model.*},
 *                          interleaved {@code in_proj_qkvz}/{@code in_proj_ba})
 * @param config            the target's shape; {@code shape().intermediateSize()} is the routed experts' width for
 *                          a MoE target, else the dense MLP's
 * @param tieWordEmbeddings {@code tie_word_embeddings} (top level, else text config), or null when absent
 * @param denseWidth        {@code intermediate_size}, the dense MLPs' width, or null when no layer is dense
 * @param moeLayers         per layer, true when its MLP is routed MoE ({@code num_experts > 0}, not in
 *                          {@code mlp_only_layers}, and {@code (i+1) % decoder_sparse_step == 0})
 * @param mambaSsmDtype     {@code mamba_ssm_dtype} ({@code float32} when absent); the reference keeps GDN state in f32
 * @param common            the same file as {@link ModelConfigReader} reads it: quantization and MoE fields (for a
 *                          {@code qwen3_5_moe} target, {@code norm_topk_prob} is true: it always renormalises)
 * @param warnings          suspicious findings, one line each
 */
public record TargetReleaseConfig(String modelType, String layout, TargetConfig config, Boolean tieWordEmbeddings,
                                  Integer denseWidth, List<Boolean> moeLayers, String mambaSsmDtype,
                                  ModelConfig common, List<String> warnings) {
    /** The Qwen3.5 layout name. */
    public static final String QWEN3_5 = "qwen3_5";
    /** The Qwen3-Next layout name. */
    public static final String QWEN3_NEXT = "qwen3_next";

    public TargetReleaseConfig {
        moeLayers = List.copyOf(moeLayers);
        warnings = List.copyOf(warnings);
    }

    /** The prefix of the text model's tensors. */
    public String tensorPrefix() {
        return layout.equals(QWEN3_5) ? "model.language_model." : "model.";
    }

    /** True when layer {@code layer}'s MLP is routed MoE. */
    public boolean isMoe(int layer) {
        return moeLayers.get(layer);
    }

    /** A stable text of every value that affects the target's math or storage; part of its identity (spec §6). */
    public String fingerprint() {
        StringBuilder mlp = new StringBuilder();
        for (int i = 0; i < moeLayers.size(); i++) {
            mlp.append(moeLayers.get(i) ? 'm' : 'd');
        }
        ModelConfig.Moe moe = common.moe();
        return "qwen-target-config-v1;" + config + ";layout=" + layout + ";mlp=" + mlp + ";dense=" + denseWidth
                + ";moe=" + (moe == null ? "none" : moe) + ";quantization="
                + (common.quantization() == null ? "none" : common.quantization());
    }
}
