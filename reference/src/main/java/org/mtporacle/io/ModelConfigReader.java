package org.mtporacle.io;

import java.nio.file.Path;

import com.fasterxml.jackson.databind.JsonNode;

import org.mtporacle.api.MtpException;
import org.mtporacle.api.UntrustedText;

/**
 * Reads {@code config.json} in the three layouts an MTP model comes in (spec §1.3): Qwen3.5 (text parameters nested
 * in {@code text_config}, RoPE in {@code rope_parameters}), Qwen3-Next (flat, top-level {@code rope_theta} and
 * {@code partial_rotary_factor}) and the companion ({@code model_type} {@code qwen3_5_mtp}, nested or flat).
 * Defaults: {@code head_dim = floor(H/nH)}, partial rotary factor 1.0, θ 10000, ε 1e-6.
 */
public final class ModelConfigReader {
    /** The companion's {@code model_type}. */
    public static final String COMPANION_MODEL_TYPE = "qwen3_5_mtp";
    /** The largest config.json read; real ones are a few kilobytes (a per-module quantization block adds some). */
    public static final long MAX_CONFIG_BYTES = 16L * 1024 * 1024;

    private ModelConfigReader() {
    }

    /**
     * Reads {@code configJson}.
     *
     * @throws MtpException MALFORMED_FILE when {@link StrictJson#read} refuses it (limit {@link #MAX_CONFIG_BYTES});
     *                      INCOMPATIBLE_MODEL when a field is missing
     *                      or has the wrong type
     */
    public static ModelConfig read(Path configJson) {
        JsonNode root = StrictJson.read(configJson, MAX_CONFIG_BYTES, "config");
        return parse(root, UntrustedText.path(configJson));
    }

    /** Interprets an already parsed config; {@code source} names it in messages. */
    public static ModelConfig parse(JsonNode root, String source) {
        if (root == null || !root.isObject()) {
            throw MtpException.malformedFile("config " + source + ": not a JSON object");
        }
        String modelType = text(root.get("model_type"));
        JsonNode nested = root.get("text_config");
        boolean isNested = nested != null && nested.isObject();
        JsonNode text = isNested ? nested : root;
        String prefix = isNested ? "text_config." : "";
        String layout = COMPANION_MODEL_TYPE.equals(modelType) ? "companion" : isNested ? "qwen3_5" : "flat";

        int hidden = requiredInt(text, "hidden_size", prefix, source);
        int heads = requiredInt(text, "num_attention_heads", prefix, source);
        int kvHeads = requiredInt(text, "num_key_value_heads", prefix, source);
        int headDim = optionalInt(text, "head_dim", prefix, source, heads == 0 ? 0 : hidden / heads);
        JsonNode rope = text.get("rope_parameters");
        double partial = firstDouble(source, 1.0, field(rope, "partial_rotary_factor", prefix + "rope_parameters."),
                field(text, "partial_rotary_factor", prefix));
        double theta = firstDouble(source, 10000.0, field(rope, "rope_theta", prefix + "rope_parameters."),
                field(text, "rope_theta", prefix));
        double eps = firstDouble(source, 1e-6, field(text, "rms_norm_eps", prefix));
        Integer vocab = optionalInteger(text, "vocab_size", prefix, source);
        if (vocab == null && isNested) {
            vocab = optionalInteger(root, "vocab_size", "", source);
        }
        Integer intermediate = optionalInteger(text, "intermediate_size", prefix, source);
        Boolean tie = bool(root.get("tie_word_embeddings"));
        if (tie == null && isNested) {
            tie = bool(text.get("tie_word_embeddings"));
        }
        JsonNode q = root.get("quantization");
        if (q == null || !q.isObject()) {
            q = root.get("quantization_config");
        }
        QuantizationConfig quant = q != null && q.isObject() ? QuantizationConfig.parse(q) : null;
        return new ModelConfig(modelType, isNested ? text(text.get("model_type")) : null, layout, tie, hidden, heads,
                kvHeads, headDim, partial, theta, eps, vocab, intermediate, quant, moe(text, prefix, source));
    }

    /** The MoE fields (spec §12.1), or null when {@code num_experts} is absent or 0. */
    private static ModelConfig.Moe moe(JsonNode text, String prefix, String source) {
        Integer experts = optionalInteger(text, "num_experts", prefix, source);
        if (experts == null || experts == 0) {
            return null;
        }
        if (experts < 0) {
            throw MtpException.incompatibleModel("config " + source + ": " + prefix + "num_experts = " + experts
                    + ", expected a positive integer (spec §12.1)");
        }
        JsonNode norm = text.get("norm_topk_prob");
        if (norm != null && !norm.isNull() && !norm.isBoolean()) {
            throw MtpException.incompatibleModel("config " + source + ": " + prefix + "norm_topk_prob = " + norm
                    + ", expected true or false (spec §12.1)");
        }
        return new ModelConfig.Moe(experts, optionalInteger(text, "num_experts_per_tok", prefix, source),
                optionalInteger(text, "moe_intermediate_size", prefix, source),
                optionalInteger(text, "shared_expert_intermediate_size", prefix, source),
                norm == null || norm.isNull() || norm.booleanValue());
    }

    /** {@code path} without a leading {@code mtp.} (spec §11.5). */
    static String stripMtp(String path) {
        return path.startsWith("mtp.") ? path.substring(4) : path;
    }

    private record Field(JsonNode value, String name) {
    }

    private static Field field(JsonNode node, String name, String prefix) {
        return new Field(node == null || !node.isObject() ? null : node.get(name), prefix + name);
    }

    private static double firstDouble(String source, double fallback, Field... fields) {
        for (Field f : fields) {
            if (f.value() == null || f.value().isNull()) {
                continue;
            }
            if (!f.value().isNumber()) {
                throw MtpException.incompatibleModel("config " + source + ": " + f.name() + " = " + StrictJson.describe(f.value())
                        + ", expected a number (spec §1.3)");
            }
            return f.value().doubleValue();
        }
        return fallback;
    }

    private static int requiredInt(JsonNode node, String name, String prefix, String source) {
        Integer v = optionalInteger(node, name, prefix, source);
        if (v == null) {
            throw MtpException.incompatibleModel("config " + source + ": missing " + prefix + name + " (spec §1.3)");
        }
        return v;
    }

    private static int optionalInt(JsonNode node, String name, String prefix, String source, int fallback) {
        Integer v = optionalInteger(node, name, prefix, source);
        return v == null ? fallback : v;
    }

    private static Integer optionalInteger(JsonNode node, String name, String prefix, String source) {
        JsonNode v = node.get(name);
        if (v == null || v.isNull()) {
            return null;
        }
        if (!v.isIntegralNumber() || !v.canConvertToInt()) {
            throw MtpException.incompatibleModel("config " + source + ": " + prefix + name + " = " + StrictJson.describe(v)
                    + ", expected an integer (spec §1.3)");
        }
        return v.intValue();
    }

    private static String text(JsonNode v) {
        return v != null && v.isTextual() ? v.textValue() : null;
    }

    private static Boolean bool(JsonNode v) {
        return v != null && v.isBoolean() ? v.booleanValue() : null;
    }
}
