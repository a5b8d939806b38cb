package org.mtporacle.io;

import java.util.Collections;
import java.util.Map;
import java.util.TreeMap;

import com.fasterxml.jackson.databind.JsonNode;

import org.mtporacle.api.MtpException;

/**
 * The MLX {@code quantization} (or {@code quantization_config}) block of a config (spec §2): defaults plus per-module
 * overrides keyed by module path. An override object inherits unset fields from the defaults; an override of
 * {@code false} means "not quantized". Keys with an {@code mtp.} prefix are normalised to companion-relative paths
 * (spec §11.5). Missing defaults fall back to MLX's own ({@code group_size} 64, {@code bits} 4, mode affine).
 *
 * @param defaults  the spec of every module without an override
 * @param overrides module path → spec, or null for "not quantized"
 */
public record QuantizationConfig(Spec defaults, Map<String, Spec> overrides) {
    /** One module's quantization: bits, group size and mode ({@code "affine"} for MLX affine). */
    public record Spec(int bits, int groupSize, String mode) {
        @Override
        public String toString() {
            return mode + " " + bits + "-bit, group " + groupSize;
        }
    }

    public QuantizationConfig {
        overrides = Collections.unmodifiableMap(new TreeMap<>(overrides));
    }

    /** The spec for {@code modulePath} (an {@code mtp.} prefix is ignored), or null when it is not quantized. */
    public Spec specFor(String modulePath) {
        String key = ModelConfigReader.stripMtp(modulePath);
        if (overrides.containsKey(key)) {
            return overrides.get(key);
        }
        return defaults;
    }

    /**
     * Parses {@code block}.
     *
     * @throws MtpException INCOMPATIBLE_MODEL when a value has the wrong type, or a {@code mtp.}-prefixed key and its
     *                      companion-relative twin disagree
     */
    static QuantizationConfig parse(JsonNode block) {
        Spec defaults = new Spec(intField(block, "bits", 4, "quantization"), intField(block, "group_size", 64,
                "quantization"), textField(block, "mode", "affine", "quantization"));
        Map<String, Spec> overrides = new TreeMap<>();
        for (Map.Entry<String, JsonNode> e : block.properties()) {
            JsonNode v = e.getValue();
            Spec spec;
            if (v.isBoolean() && !v.booleanValue()) {
                spec = null;
            } else if (v.isObject()) {
                String where = "quantization." + e.getKey();
                spec = new Spec(intField(v, "bits", defaults.bits(), where),
                        intField(v, "group_size", defaults.groupSize(), where),
                        textField(v, "mode", defaults.mode(), where));
            } else {
                continue;
            }
            String key = ModelConfigReader.stripMtp(e.getKey());
            if (overrides.containsKey(key) && !java.util.Objects.equals(overrides.get(key), spec)) {
                throw MtpException.incompatibleModel("config: quantization overrides '" + e.getKey() + "' and its "
                        + "companion-relative twin '" + key + "' disagree: " + spec + " vs " + overrides.get(key)
                        + " (spec §11.5)");
            }
            overrides.put(key, spec);
        }
        return new QuantizationConfig(defaults, overrides);
    }

    private static int intField(JsonNode node, String field, int fallback, String where) {
        JsonNode v = node.get(field);
        if (v == null || v.isNull()) {
            return fallback;
        }
        if (!v.isIntegralNumber() || !v.canConvertToInt()) {
            throw MtpException.incompatibleModel("config: " + where + "." + field + " = " + v
                    + ", expected an integer (spec §2)");
        }
        return v.intValue();
    }

    private static String textField(JsonNode node, String field, String fallback, String where) {
        JsonNode v = node.get(field);
        if (v == null || v.isNull()) {
            return fallback;
        }
        if (!v.isTextual()) {
            throw MtpException.incompatibleModel("config: " + where + "." + field + " = " + v
                    + ", expected a string (spec §2)");
        }
        return v.textValue();
    }
}
