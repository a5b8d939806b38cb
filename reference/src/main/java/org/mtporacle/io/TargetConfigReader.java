package org.mtporacle.io;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

import com.fasterxml.jackson.databind.JsonNode;

import org.mtporacle.api.MtpConfig;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.TargetConfig;
import org.mtporacle.api.UntrustedText;

/**
 * Reads a release's {@code config.json} into the hybrid target's shape (spec §13.1). Qwen3.5 ({@code model_type}
 * {@code qwen3_5} / {@code qwen3_5_moe}) nests the text model under {@code text_config} with RoPE in
 * {@code rope_parameters}; Qwen3-Next ({@code qwen3_next}) is flat. The shape keys are required; only these have
 * defaults, those of transformers: {@code linear_conv_kernel_dim} 4, {@code full_attention_interval} 4 (used when
 * {@code layer_types} is absent), {@code decoder_sparse_step} 1, {@code mlp_only_layers} [],
 * {@code mamba_ssm_dtype} float32. Every error is one INCOMPATIBLE_MODEL line naming the key and the file.
 */
public final class TargetConfigReader {
    private static final Set<String> SSM_DTYPES = Set.of("float32", "bfloat16", "float16");

    private TargetConfigReader() {
    }

    /**
     * Reads {@code configJson}.
     *
     * @throws MtpException MALFORMED_FILE when {@link StrictJson#read} refuses it; INCOMPATIBLE_MODEL for an unknown
     *                      {@code model_type}, a missing key, a value of the wrong type or out of range, or a
     *                      {@code layer_types} list of the wrong length or with an unknown type
     */
    public static TargetReleaseConfig read(Path configJson) {
        JsonNode root = StrictJson.read(configJson, ModelConfigReader.MAX_CONFIG_BYTES, "config");
        return parse(root, UntrustedText.path(configJson));
    }

    /** Interprets an already parsed config; {@code file} names it in messages. */
    public static TargetReleaseConfig parse(JsonNode root, String file) {
        Keys top = new Keys(root, "", file);
        String modelType = top.text("model_type");
        JsonNode nested = root.get("text_config");
        List<String> warnings = new ArrayList<>();
        String layout = switch (modelType) {
            case "qwen3_5", "qwen3_5_moe" -> TargetReleaseConfig.QWEN3_5;
            case "qwen3_next" -> TargetReleaseConfig.QWEN3_NEXT;
            default -> throw top.error("model_type = " + UntrustedText.quote(modelType)
                    + ", expected qwen3_5, qwen3_5_moe or qwen3_next");
        };
        if (layout.equals(TargetReleaseConfig.QWEN3_5) && (nested == null || !nested.isObject())) {
            throw top.error("model_type " + modelType + " needs a text_config object, got "
                    + StrictJson.describe(nested));
        }
        Keys k = layout.equals(TargetReleaseConfig.QWEN3_5) ? new Keys(nested, "text_config.", file) : top;
        architecture(root, modelType, file, warnings);
        String act = k.optionalText("hidden_act");
        if (act != null && !act.equals("silu")) {
            throw k.error("hidden_act = " + UntrustedText.quote(act) + ", expected silu");
        }

        int layerCount = k.integer("num_hidden_layers");
        if (layerCount < 1 || layerCount > TargetConfig.MAX_LAYERS) {
            throw k.error("num_hidden_layers = " + layerCount + ", expected 1 to " + TargetConfig.MAX_LAYERS);
        }
        List<TargetConfig.LayerType> types = layerTypes(k, layerCount);
        TargetConfig.Gdn gdn = k.wrap(() -> new TargetConfig.Gdn(k.integer("linear_num_key_heads"),
                k.integer("linear_num_value_heads"), k.integer("linear_key_head_dim"),
                k.integer("linear_value_head_dim"), k.optionalInteger("linear_conv_kernel_dim", 4)));

        Keys rope = k.child("rope_parameters");
        double theta = rope.has("rope_theta") ? rope.number("rope_theta") : k.number("rope_theta");
        double partial = rope.has("partial_rotary_factor") ? rope.number("partial_rotary_factor")
                : k.number("partial_rotary_factor");
        if (rope.has("partial_rotary_factor") && k.has("partial_rotary_factor")
                && k.number("partial_rotary_factor") != partial) {
            warnings.add("config: " + k.prefix + "partial_rotary_factor = " + k.number("partial_rotary_factor")
                    + " differs from " + rope.prefix + "partial_rotary_factor = " + partial + ", which is used"
                    + " (spec §13.1)");
        }

        int hidden = k.integer("hidden_size");
        int heads = k.integer("num_attention_heads");
        int kvHeads = k.integer("num_key_value_heads");
        int headDim = k.integer("head_dim");
        double eps = k.number("rms_norm_eps");
        int vocab = !k.has("vocab_size") && k != top && top.has("vocab_size") ? top.integer("vocab_size")
                : k.integer("vocab_size");
        ModelConfig common = ModelConfigReader.parse(root, file);
        ModelConfig.Moe moe = common.moe();
        if (moe != null && modelType.equals("qwen3_5_moe") && !moe.normTopkProb()) {
            warnings.add("config: " + k.prefix + "norm_topk_prob is false, but Qwen3.5-MoE always renormalises the "
                    + "chosen experts' probabilities; renormalising (spec §12.1)");
            moe = new ModelConfig.Moe(moe.numExperts(), moe.numExpertsPerTok(), moe.moeIntermediateSize(),
                    moe.sharedExpertIntermediateSize(), true);
            common = new ModelConfig(common.modelType(), common.textModelType(), common.layout(),
                    common.tieWordEmbeddings(), common.hiddenSize(), common.numHeads(), common.numKvHeads(),
                    common.headDim(), common.partialRotaryFactor(), common.ropeTheta(), common.rmsNormEps(),
                    common.vocabSize(), common.intermediateSize(), common.quantization(), moe);
        }
        List<Boolean> moeLayers = moeLayers(k, layerCount, moe != null);
        boolean anyDense = moeLayers.contains(false);
        Integer denseWidth = anyDense ? Integer.valueOf(k.integer("intermediate_size")) : null;
        int width = moe != null ? k.integer("moe_intermediate_size") : denseWidth;
        if (moe != null) {
            k.integer("num_experts_per_tok");
            k.integer("shared_expert_intermediate_size");
        }

        MtpConfig shape = k.wrap(() -> new MtpConfig(hidden, heads, kvHeads, headDim, (int) (headDim * partial),
                theta, eps, vocab, width));
        TargetConfig config = k.wrap(() -> new TargetConfig(shape, types, gdn));

        String ssm = k.optionalText("mamba_ssm_dtype");
        ssm = ssm == null ? "float32" : ssm;
        if (!SSM_DTYPES.contains(ssm)) {
            throw k.error("mamba_ssm_dtype = " + UntrustedText.quote(ssm) + ", expected float32, bfloat16 or float16");
        }
        if (!ssm.equals("float32")) {
            warnings.add("config: " + k.prefix + "mamba_ssm_dtype is " + ssm + "; the reference keeps the GDN "
                    + "recurrent state in f32, so a backend that stores it in " + ssm + " differs by its rounding "
                    + "(spec §13.2)");
        }
        return new TargetReleaseConfig(modelType, layout, config, common.tieWordEmbeddings(), denseWidth, moeLayers,
                ssm, common, warnings);
    }

    /** {@code layer_types}, or the types {@code full_attention_interval} gives. */
    private static List<TargetConfig.LayerType> layerTypes(Keys k, int layerCount) {
        JsonNode list = k.node.get("layer_types");
        if (list == null || list.isNull()) {
            int interval = k.optionalInteger("full_attention_interval", 4);
            if (interval < 1) {
                throw k.error("full_attention_interval = " + interval + ", expected a positive integer");
            }
            return TargetConfig.interval(layerCount, interval);
        }
        if (!list.isArray()) {
            throw k.error("layer_types = " + StrictJson.describe(list) + ", expected a list of layer types");
        }
        if (list.size() != layerCount) {
            throw k.error("layer_types has " + list.size() + " entries, expected num_hidden_layers = " + layerCount);
        }
        List<TargetConfig.LayerType> types = new ArrayList<>(layerCount);
        for (int i = 0; i < list.size(); i++) {
            JsonNode t = list.get(i);
            TargetConfig.LayerType type = null;
            for (TargetConfig.LayerType c : TargetConfig.LayerType.values()) {
                if (t.isTextual() && c.configName().equals(t.textValue())) {
                    type = c;
                }
            }
            if (type == null) {
                throw k.error("layer_types[" + i + "] = " + StrictJson.describe(t)
                        + ", expected 'linear_attention' or 'full_attention'");
            }
            types.add(type);
        }
        return types;
    }

    /** Which layers are MoE: {@code num_experts > 0}, not in {@code mlp_only_layers}, at the sparse step. */
    private static List<Boolean> moeLayers(Keys k, int layerCount, boolean moe) {
        int step = k.optionalInteger("decoder_sparse_step", 1);
        if (step < 1) {
            throw k.error("decoder_sparse_step = " + step + ", expected a positive integer");
        }
        Set<Integer> denseOnly = new TreeSet<>();
        JsonNode only = k.node.get("mlp_only_layers");
        if (only != null && !only.isNull()) {
            if (!only.isArray()) {
                throw k.error("mlp_only_layers = " + StrictJson.describe(only) + ", expected a list of layer indices");
            }
            for (int i = 0; i < only.size(); i++) {
                JsonNode v = only.get(i);
                if (!v.isIntegralNumber() || !v.canConvertToInt() || v.intValue() < 0 || v.intValue() >= layerCount) {
                    throw k.error("mlp_only_layers[" + i + "] = " + StrictJson.describe(v) + ", expected a layer "
                            + "index in [0, " + layerCount + ")");
                }
                denseOnly.add(v.intValue());
            }
        }
        List<Boolean> out = new ArrayList<>(layerCount);
        for (int i = 0; i < layerCount; i++) {
            out.add(moe && !denseOnly.contains(i) && (i + 1) % step == 0);
        }
        return out;
    }

    private static void architecture(JsonNode root, String modelType, String file, List<String> warnings) {
        String expected = switch (modelType) {
            case "qwen3_5" -> "Qwen3_5ForConditionalGeneration";
            case "qwen3_5_moe" -> "Qwen3_5MoeForConditionalGeneration";
            default -> "Qwen3NextForCausalLM";
        };
        JsonNode a = root.get("architectures");
        if (a != null && a.isArray() && a.size() > 0 && !(a.get(0).isTextual() && a.get(0).textValue()
                .equals(expected))) {
            warnings.add("config: architectures[0] = " + StrictJson.describe(a.get(0)) + " in " + file
                    + ", expected " + expected + " for model_type " + modelType + " (spec §13.1)");
        }
    }

    /** Typed reads of one JSON object whose keys print as {@code prefix + key}; errors name the key and the file. */
    private record Keys(JsonNode node, String prefix, String file) {
        MtpException error(String what) {
            return MtpException.incompatibleModel("load: " + prefix + what + " in " + file + " (spec §13.1)");
        }

        boolean has(String key) {
            JsonNode v = node == null ? null : node.get(key);
            return v != null && !v.isNull();
        }

        Keys child(String key) {
            JsonNode v = node.get(key);
            if (v != null && !v.isNull() && !v.isObject()) {
                throw error(key + " = " + StrictJson.describe(v) + ", expected an object");
            }
            return new Keys(v == null || v.isNull() ? null : v, prefix + key + ".", file);
        }

        JsonNode require(String key) {
            if (!has(key)) {
                throw MtpException.incompatibleModel("load: missing " + prefix + key + " in " + file
                        + " (spec §13.1)");
            }
            return node.get(key);
        }

        int integer(String key) {
            JsonNode v = require(key);
            if (!v.isIntegralNumber() || !v.canConvertToInt()) {
                throw error(key + " = " + StrictJson.describe(v) + ", expected an integer");
            }
            return v.intValue();
        }

        int optionalInteger(String key, int fallback) {
            return has(key) ? integer(key) : fallback;
        }

        double number(String key) {
            JsonNode v = require(key);
            if (!v.isNumber() || !Double.isFinite(v.doubleValue())) {
                throw error(key + " = " + StrictJson.describe(v) + ", expected a number");
            }
            return v.doubleValue();
        }

        String text(String key) {
            JsonNode v = require(key);
            if (!v.isTextual()) {
                throw error(key + " = " + StrictJson.describe(v) + ", expected a string");
            }
            return v.textValue();
        }

        String optionalText(String key) {
            return has(key) ? text(key) : null;
        }

        /** Runs a record constructor, rewriting its INCOMPATIBLE_MODEL message into this file's form. */
        <T> T wrap(java.util.function.Supplier<T> make) {
            try {
                return make.get();
            } catch (MtpException e) {
                if (e.kind() != MtpException.Kind.INCOMPATIBLE_MODEL || e.getMessage().startsWith("load: ")) {
                    throw e;
                }
                String m = e.getMessage().replaceFirst("^(target config|config): ", "");
                throw MtpException.incompatibleModel("load: " + prefix + m + " in " + file
                        + " (spec §13.1)");
            }
        }
    }
}
