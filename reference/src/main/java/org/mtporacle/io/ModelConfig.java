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
 */
public record ModelConfig(String modelType, String textModelType, String layout, Boolean tieWordEmbeddings,
                          int hiddenSize, int numHeads, int numKvHeads, int headDim, double partialRotaryFactor,
                          double ropeTheta, double rmsNormEps, Integer vocabSize, Integer intermediateSize,
                          QuantizationConfig quantization) {

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
}
