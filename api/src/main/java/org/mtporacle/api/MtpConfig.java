package org.mtporacle.api;

/**
 * The shape parameters of one Qwen3.5 MTP block and its target head (spec §1.3). {@code intermediateSize} comes from
 * the tensor shapes, never from config.
 *
 * @param hiddenSize       H
 * @param numHeads         nH, query heads
 * @param numKvHeads       nKV, key/value heads; {@code nH % nKV == 0}
 * @param headDim          D
 * @param rotaryDims       R = trunc(D × partial_rotary_factor), even, ≤ D
 * @param ropeTheta        θ, the RoPE base
 * @param rmsNormEps       ε
 * @param vocabSize        V
 * @param intermediateSize I, the MLP width
 */
public record MtpConfig(int hiddenSize, int numHeads, int numKvHeads, int headDim, int rotaryDims, double ropeTheta,
                        double rmsNormEps, int vocabSize, int intermediateSize) {
    /**
     * The widest per-token vector a block may have, in elements: H, 2·H (the fc input), 2·nH·D (q_proj with its
     * gate), nKV·D, I and V are each at most 2^24. Real models are far below (V ≈ 2^18); the bound keeps every
     * product of a width and a token or position count that the kernels form in {@code int} checkable, and makes a
     * config whose shape arithmetic would overflow (a head count near 2^30) an INCOMPATIBLE_MODEL here, not a crash
     * later.
     */
    public static final long MAX_WIDTH = 1L << 24;

    /** @throws MtpException INCOMPATIBLE_MODEL when a value is out of range or inconsistent */
    public MtpConfig {
        check(hiddenSize > 0, "hidden_size = " + hiddenSize + " must be positive");
        check(numHeads > 0, "num_attention_heads = " + numHeads + " must be positive");
        check(numKvHeads > 0 && numHeads % numKvHeads == 0,
                "num_key_value_heads = " + numKvHeads + " must divide num_attention_heads = " + numHeads);
        check(headDim > 0, "head_dim = " + headDim + " must be positive");
        check(rotaryDims >= 0 && rotaryDims <= headDim && rotaryDims % 2 == 0,
                "rotary dims = " + rotaryDims + " must be even and within head_dim = " + headDim);
        check(ropeTheta > 0 && Double.isFinite(ropeTheta), "rope_theta = " + ropeTheta + " must be positive");
        check(rmsNormEps > 0 && Double.isFinite(rmsNormEps), "rms_norm_eps = " + rmsNormEps + " must be positive");
        check(vocabSize > 0, "vocab_size = " + vocabSize + " must be positive");
        check(intermediateSize > 0, "intermediate size = " + intermediateSize + " must be positive");
        width("hidden_size × 2 (the fc input)", 2L * hiddenSize);
        width("num_attention_heads × head_dim × 2 (q_proj with its gate)", 2L * numHeads * headDim);
        width("num_key_value_heads × head_dim", (long) numKvHeads * headDim);
        width("intermediate size", intermediateSize);
        width("vocab_size", vocabSize);
    }

    private static void width(String what, long elements) {
        check(elements <= MAX_WIDTH, what + " = " + elements + " elements, more than the " + MAX_WIDTH
                + " per token a block may have");
    }

    /** nH / nKV: query heads sharing one KV head (spec §1.5 step 7). */
    public int groupSize() {
        return numHeads / numKvHeads;
    }

    /** The attention scale {@code D^-0.5}. */
    public double attentionScale() {
        return 1.0 / Math.sqrt(headDim);
    }

    private static void check(boolean ok, String message) {
        if (!ok) {
            throw MtpException.incompatibleModel("config: " + message);
        }
    }
}
