package org.mtporacle.io;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.mtporacle.api.DType;
import org.mtporacle.api.HostTensor;

/**
 * The zero-centred → full-gain norm conversion (spec §1.6, §11.4): Hugging Face stores {@code w = γ − 1}; the block
 * uses {@code γ = 1 + w}, added in f32 exactly once. Names are companion-relative (no {@code mtp.} prefix).
 */
public final class NormFolding {
    /** Suffixes (after a dot) and whole names of the norms that fold, as in mlx-vlm's sanitizer (spec §1.6). */
    public static final List<String> FOLDED_SUFFIXES = List.of(".input_layernorm.weight",
            ".post_attention_layernorm.weight", ".q_norm.weight", ".k_norm.weight");
    public static final List<String> FOLDED_NAMES = List.of("norm.weight", "pre_fc_norm_embedding.weight",
            "pre_fc_norm_hidden.weight");

    /** Mean gain of a folded {@code pre_fc_norm_embedding} above which it looks folded twice (spec §11.4). */
    public static final double FOLDED_TWICE_MEAN = 1.3;
    /** Mean gain of a companion's {@code pre_fc_norm_embedding} below which it looks unfolded (spec §11.4). */
    public static final double UNFOLDED_MEAN = 0.1;

    private NormFolding() {
    }

    /** True when {@code name} (companion-relative) is one of the seven norms that fold (spec §1.6). */
    public static boolean isFoldedNorm(String name) {
        return FOLDED_NAMES.contains(name) || FOLDED_SUFFIXES.stream().anyMatch(name::endsWith);
    }

    /**
     * A copy of {@code tensors} in which every 1-D float norm of {@link #isFoldedNorm} becomes the F32 tensor
     * {@code 1 + w} (computed in f32); other tensors are passed through. Pure: applying it twice adds 2.
     */
    public static Map<String, HostTensor> fold(Map<String, HostTensor> tensors) {
        Map<String, HostTensor> out = new LinkedHashMap<>();
        tensors.forEach((name, t) -> out.put(name, isFoldedNorm(name) && t.rank() == 1 && t.dtype().isFloating()
                ? plusOne(t) : t));
        return out;
    }

    /** {@code 1 + w} in f32. */
    public static HostTensor plusOne(HostTensor w) {
        return HostTensor.ofFloats(DType.F32, fullGain(w.toFloatArray()), w.shape());
    }

    /** {@code 1 + w} in f32, in place; returns {@code w}. */
    public static float[] fullGain(float[] w) {
        for (int i = 0; i < w.length; i++) {
            w[i] = 1.0f + w[i];
        }
        return w;
    }

    /** The mean of {@code gain}, in f64. */
    public static double meanGain(float[] gain) {
        double s = 0;
        for (float g : gain) {
            s += g;
        }
        return gain.length == 0 ? 0 : s / gain.length;
    }

    /**
     * A warning when the full-gain {@code pre_fc_norm_embedding} of a model loaded from {@code layout} looks folded
     * twice ({@code "hf"}: mean above {@value #FOLDED_TWICE_MEAN}) or unfolded ({@code "companion"}: mean below
     * {@value #UNFOLDED_MEAN}), or null (spec §11.4).
     */
    public static String suspiciousNorm(String layout, float[] preFcNormEmbeddingGain) {
        return suspiciousNorm(layout, preFcNormEmbeddingGain, null);
    }

    /** The first words of every norm warning, for callers that act on it ({@code mtp convert}). */
    public static final String WARNING_PREFIX = "norms: ";

    /**
     * {@link #suspiciousNorm(String, float[])} for a whole model: the warning also lists the mean full gain of each of
     * the block's seven norms and says what to do, or null.
     */
    public static String suspiciousNorms(String layout, org.mtporacle.api.MtpWeights w) {
        String gains = String.format(java.util.Locale.ROOT, "mean full gains: pre_fc_norm_embedding %.3f, "
                + "pre_fc_norm_hidden %.3f, layers.0.input_layernorm %.3f, layers.0.self_attn.q_norm %.3f, "
                + "layers.0.self_attn.k_norm %.3f, layers.0.post_attention_layernorm %.3f, norm %.3f",
                meanGain(w.preFcNormEmbedding()), meanGain(w.preFcNormHidden()), meanGain(w.inputNorm()),
                meanGain(w.qNorm()), meanGain(w.kNorm()), meanGain(w.postAttentionNorm()), meanGain(w.finalNorm()));
        return suspiciousNorm(layout, w.preFcNormEmbedding(), gains);
    }

    private static String suspiciousNorm(String layout, float[] preFcNormEmbeddingGain, String gains) {
        double mean = meanGain(preFcNormEmbeddingGain);
        if (layout.equals("hf") && mean > FOLDED_TWICE_MEAN) {
            return String.format(java.util.Locale.ROOT, "norms: pre_fc_norm_embedding mean gain %.4f after adding 1 "
                    + "exceeds %.1f; the raw HF checkpoint looks already folded, so +1 may be applied twice "
                    + "(spec §11.4)", mean, FOLDED_TWICE_MEAN) + (gains == null ? "" : "; " + gains
                    + ". If another tool folded these norms, subtract 1 from each (raw HF stores zero-centred w), or "
                    + "keep the full gains as a companion (model_type qwen3_5_mtp, no mtp. prefix)");
        }
        if (layout.equals("companion") && mean < UNFOLDED_MEAN) {
            return String.format(java.util.Locale.ROOT, "norms: pre_fc_norm_embedding mean gain %.4f is below %.1f; "
                    + "the companion looks unfolded (zero-centred gains used as full gains) (spec §11.4)",
                    mean, UNFOLDED_MEAN) + (gains == null ? "" : "; " + gains + ". A companion stores full gains "
                    + "1 + w: add 1 to each, or convert the raw HF checkpoint with mtp convert");
        }
        return null;
    }
}
