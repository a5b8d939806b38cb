package org.mtporacle.api;

import java.util.List;

/**
 * A loaded hybrid target: config, weights, and what the loader learned about the files (spec §13.1).
 *
 * @param config   the target's shape
 * @param weights  its weights, norms as the maths uses them
 * @param identity a stable content identity (SHA-256 hex over the config fingerprint and the files); target
 *                 checkpoints carry it and a group refuses a checkpoint of another identity
 * @param source   where it came from (a directory or a fixture recipe), for reports
 * @param layout   {@code "qwen3_5"} (flat {@code in_proj_qkv/z/b/a}) or {@code "qwen3_next"} (interleaved
 *                 {@code in_proj_qkvz/ba}, reordered when loaded)
 * @param warnings suspicious findings; empty when none
 */
public record TargetModel(TargetConfig config, TargetWeights weights, String identity, String source, String layout,
                          List<String> warnings) {
    public TargetModel {
        warnings = List.copyOf(warnings);
    }
}
