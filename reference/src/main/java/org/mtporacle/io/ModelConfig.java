package org.mtporacle.io;

import org.mtporacle.api.MtpConfig;

/**
 * What {@code config.json} says about an MTP model (spec §1.3), before the tensor shapes supply {@code I} and
 * {@code V}.
 *
 * @param modelType           top-level {@code model_type}
 * @param textModelType       {@code text_config.model_type}, or null when the config is flat
 * @param layout              {@code "qwen3_5"} (nested {@code text_config}), {@code "flat"} (Qwen3-Next style) or
 *                            {@code "companion"} ({@code model_type} {@code qwen3_5_mtp})
 * @param tieWordEmbeddings   {@code tie_word_embeddings} (top level, else text config), or null when absent
 * @param hiddenSize          H
 * @param numHeads            nH
 * @param numKvHeads          nKV
 * @param headDim             D ({@code head_dim}, default {@code floor(H/nH)})
 * @param partialRotaryFactor default 1.0
 * @param ropeTheta           θ, default 10000
 * @param rmsNormEps          ε
 * @param vocabSize           {@code vocab_size}, or null when absent (the embedding shape decides)
 * @param intermediateSize    {@code intermediate_size}, or null; informative only (the tensor shapes decide)
 * @param quantization        the quantization block, or null when absent
 * @param moe                 the MoE fields (spec §12.1), or null when the config declares no {@code num_experts}
 */
public record ModelConfig(String modelType, String textModelType, String layout, Boolean tieWordEmbeddings,
                          int hiddenSize, int numHeads, int numKvHeads, int headDim, double partialRotaryFactor,
                          double ropeTheta, double rmsNormEps, Integer vocabSize, Integer intermediateSize,
                          QuantizationConfig quantization, Moe moe) {

    /**
     * The MoE fields of a Qwen3.5-MoE or Qwen3-Next config (spec §12.1). The tensors decide whether the MTP layer is
     * MoE and give {@code E} and the widths; these values are checked against them.
     *
     * @param numExperts                   {@code num_experts}
     * @param numExpertsPerTok             {@code num_experts_per_tok}, K; null when absent
     * @param moeIntermediateSize          {@code moe_intermediate_size}, or null
     * @param sharedExpertIntermediateSize {@code shared_expert_intermediate_size}, or null
     * @param normTopkProb                 {@code norm_topk_prob}, default true
     */
    public record Moe(int numExperts, Integer numExpertsPerTok, Integer moeIntermediateSize,
                      Integer sharedExpertIntermediateSize, boolean normTopkProb) {
    }

    /** R = trunc(D × partial_rotary_factor) (spec §1.3). */
    public int rotaryDims() {
        return (int) (headDim * partialRotaryFactor);
    }

    /** The block config with {@code V} and {@code I} taken from the tensor shapes. */
    public MtpConfig toMtpConfig(int vocab, int intermediate) {
        return new MtpConfig(hiddenSize, numHeads, numKvHeads, headDim, rotaryDims(), ropeTheta, rmsNormEps, vocab,
                intermediate);
    }

    /** A stable text of every value that affects the block's math or storage; part of the model identity (spec §6). */
    public String fingerprint(MtpConfig config) {
        return "qwen-mtp-config-v1;" + config + ";quantization=" + (quantization == null ? "none" : quantization);
    }

    /** {@link #fingerprint(MtpConfig)} plus, for a MoE MTP layer, {@code E}, {@code K} and the renormalisation flag. */
    public String fingerprint(MtpConfig config, org.mtporacle.api.MlpWeights mlp) {
        String base = fingerprint(config);
        if (mlp instanceof org.mtporacle.api.MlpWeights.Moe m) {
            return base + ";moe=" + m.numExperts() + "x" + m.expertWidth() + ",top" + m.topK() + ",shared"
                    + m.sharedExpert().width() + ",norm=" + m.normTopK();
        }
        return base;
    }
}
