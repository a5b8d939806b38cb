package org.mtporacle.api;

/**
 * The weights of one MTP block (spec §1.2) plus the target's embedding and head (spec §1.7), with every norm already
 * in the <b>full-gain</b> convention (the {@code +1} of zero-centred Hugging Face norms applied exactly once, spec
 * §11.4). Norm gains are f32 arrays; linears keep their stored format.
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
        LinearWeight gateProj,           // [I, H]
        LinearWeight upProj,             // [I, H]
        LinearWeight downProj,           // [H, I]
        float[] finalNorm,               // [H]
        LinearWeight embedding,          // [V, H], the target's embed_tokens
        LinearWeight head) {             // [V, H], lm_head or the tied embedding

    /** Bytes of weights one decode step of the block touches, without the embedding gather (one row) and head. */
    public long blockBytes() {
        return fc.byteSize() + qProj.byteSize() + kProj.byteSize() + vProj.byteSize() + oProj.byteSize()
                + gateProj.byteSize() + upProj.byteSize() + downProj.byteSize();
    }
}
