package org.mtporacle.api;

import java.util.List;

/**
 * The weights of a hybrid target (spec §13.1), norms in the form the maths uses: every RMSNorm as its full gain
 * ({@code 1 + w} of a release's zero-centred weight, folded once by the loader), the GDN output norm's plain gain as
 * stored. Linears keep their stored format; {@code [out, in]}, used as {@code x·Wᵀ}.
 *
 * @param embedding {@code [V, H]} {@code embed_tokens}
 * @param layers    one per layer, of the type {@link TargetConfig#layers()} names
 * @param finalNorm {@code [H]} the final norm's full gain
 * @param head      {@code [V, H]} {@code lm_head}, the embedding itself when tied
 */
public record TargetWeights(LinearWeight embedding, List<Layer> layers, float[] finalNorm, LinearWeight head) {
    public TargetWeights {
        layers = List.copyOf(layers);
    }

    /** True when the head is the embedding (tied). */
    public boolean tied() {
        return head == embedding;
    }

    /**
     * One decoder layer: {@code h = x + mixer(RMSNorm(x)); y = h + MLP(RMSNorm(h))} (spec §13.1).
     *
     * @param inputNorm         {@code [H]} full gain
     * @param mixer             Gated DeltaNet or gated attention
     * @param postAttentionNorm {@code [H]} full gain
     * @param mlp               dense SwiGLU or routed MoE (spec §12)
     */
    public record Layer(float[] inputNorm, Mixer mixer, float[] postAttentionNorm, MlpWeights mlp) {
    }

    /** A layer's token mixer. */
    public sealed interface Mixer permits Gdn, Attention {
    }

    /**
     * A Gated DeltaNet mixer in Qwen3.5's flat layout (spec §13.2); a Qwen3-Next checkpoint's interleaved
     * {@code in_proj_qkvz} / {@code in_proj_ba} are reordered into it when loaded.
     *
     * @param inProjQkv {@code [convDim, H]} rows {@code [q (Hk·Dk) | k (Hk·Dk) | v (Hv·Dv)]}, heads contiguous
     * @param inProjZ   {@code [Hv·Dv, H]}
     * @param inProjB   {@code [Hv, H]}
     * @param inProjA   {@code [Hv, H]}
     * @param conv      {@code [convDim, K]} depthwise taps; column {@code K−1} multiplies the current token
     * @param aLog      {@code [Hv]} {@code A_log}
     * @param dtBias    {@code [Hv]}
     * @param norm      {@code [Dv]} the gated norm's plain gain {@code w} (not {@code 1 + w}), shared by all heads
     * @param outProj   {@code [H, Hv·Dv]}
     */
    public record Gdn(LinearWeight inProjQkv, LinearWeight inProjZ, LinearWeight inProjB, LinearWeight inProjA,
                      float[] conv, float[] aLog, float[] dtBias, float[] norm, LinearWeight outProj) implements Mixer {
    }

    /**
     * A gated full-attention mixer, the MTP block's attention (spec §1.5): {@code q_proj} per head
     * {@code [query D | gate D]}, q/k norms (full gains) before partial RoPE, {@code out ⊙ σ(gate)} before
     * {@code o_proj}.
     */
    public record Attention(LinearWeight qProj, LinearWeight kProj, LinearWeight vProj, LinearWeight oProj,
                            float[] qNorm, float[] kNorm) implements Mixer {
    }
}
