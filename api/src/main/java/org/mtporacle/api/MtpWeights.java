package org.mtporacle.api;

/**
 * The weights of one MTP block (spec §1.2) plus the target's embedding and head (spec §1.7), with every norm already
 * in the <b>full-gain</b> convention (the {@code +1} of zero-centred Hugging Face norms applied exactly once, spec
 * §11.4). Norm gains are f32 arrays; linears keep their stored format. The MLP is dense or MoE (spec §12).
 */
public record MtpWeights(
        LinearWeight fc,                 // [H, 2H]
        float[] preFcNormEmbedding,      // [H]
        float[] preFcNormHidden,         // [H]
        float[] inputNorm,               // [H]
        LinearWeight qProj,              // [nH·2D, H], query and gate interleaved per head
        LinearWeight kProj,              // [nKV·D, H]
        LinearWeight vProj,              // [nKV·D, H]
        LinearWeight oProj,              // [H, nH·D]
        float[] qNorm,                   // [D]
        float[] kNorm,                   // [D]
        float[] postAttentionNorm,       // [H]
        MlpWeights mlp,                  // dense [I, H]/[I, H]/[H, I], or MoE (spec §12)
        float[] finalNorm,               // [H]
        LinearWeight embedding,          // [V, H], the target's embed_tokens
        LinearWeight head) {             // [V, H], lm_head or the tied embedding

    /** Weights with a dense MLP of {@code gateProj [I, H]}, {@code upProj [I, H]}, {@code downProj [H, I]}. */
    public MtpWeights(LinearWeight fc, float[] preFcNormEmbedding, float[] preFcNormHidden, float[] inputNorm,
                      LinearWeight qProj, LinearWeight kProj, LinearWeight vProj, LinearWeight oProj, float[] qNorm,
                      float[] kNorm, float[] postAttentionNorm, LinearWeight gateProj, LinearWeight upProj,
                      LinearWeight downProj, float[] finalNorm, LinearWeight embedding, LinearWeight head) {
        this(fc, preFcNormEmbedding, preFcNormHidden, inputNorm, qProj, kProj, vProj, oProj, qNorm, kNorm,
                postAttentionNorm, new MlpWeights.Dense(gateProj, upProj, downProj), finalNorm, embedding, head);
    }

    /** True when the MLP is a routed MoE (spec §12). */
    public boolean isMoe() {
        return mlp instanceof MlpWeights.Moe;
    }

    /**
     * The dense MLP.
     *
     * @throws MtpException INCOMPATIBLE_MODEL when the MLP is MoE (for code paths that support only the dense MLP)
     */
    public MlpWeights.Dense denseMlp() {
        if (mlp instanceof MlpWeights.Dense d) {
            return d;
        }
        throw MtpException.incompatibleModel("mlp: this path supports only the dense MLP, the model's MTP layer is "
                + "MoE (spec §12)");
    }

    /** The dense MLP's {@code gate_proj} {@code [I, H]}; see {@link #denseMlp()}. */
    public LinearWeight gateProj() {
        return denseMlp().gateProj();
    }

    /** The dense MLP's {@code up_proj} {@code [I, H]}; see {@link #denseMlp()}. */
    public LinearWeight upProj() {
        return denseMlp().upProj();
    }

    /** The dense MLP's {@code down_proj} {@code [H, I]}; see {@link #denseMlp()}. */
    public LinearWeight downProj() {
        return denseMlp().downProj();
    }

    /**
     * Bytes of weights one decode step of the block touches, without the embedding gather (one row) and head; for
     * MoE the router, {@code K} experts, the shared expert and its gate.
     */
    public long blockBytes() {
        return fc.byteSize() + qProj.byteSize() + kProj.byteSize() + vProj.byteSize() + oProj.byteSize()
                + mlp.tokenBytes();
    }
}
