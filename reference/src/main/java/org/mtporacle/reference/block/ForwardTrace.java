package org.mtporacle.reference.block;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Intermediates of one {@link MtpBlock#forward} call, by name, for tests and debugging. Names follow the external
 * reference's {@code trace_*} tensors: {@code e, g, x, attn_in, q_proj, gate, q_normed, k_normed, q_rope, v,
 * attn_probs, attn_out, gated, attn_proj, h1, mlp_in, mlp_act, mlp_out, h2}. Layouts are the block's own:
 * {@code [N, ·]} row-major with {@code N = B·S}, except {@code q_normed}/{@code q_rope} {@code [N, nH, D]},
 * {@code k_normed} {@code [N, nKV, D]}, {@code v} {@code [N, nKV·D]} and {@code attn_probs} {@code [N, nH, T]} with
 * {@code T} the row's visible length after the append (zero beyond each query's causal limit).
 */
public final class ForwardTrace {
    private final Map<String, float[]> values = new LinkedHashMap<>();

    void put(String name, float[] data) {
        values.put(name, data.clone());
    }

    /** The recorded intermediate, or null. */
    public float[] get(String name) {
        return values.get(name);
    }

    public Map<String, float[]> all() {
        return Map.copyOf(values);
    }
}
