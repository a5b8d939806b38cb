package org.mtporacle.reference.target;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Intermediates of one target forward, by layer and name, for tests and debugging. Names follow the external
 * reference's {@code trace_row0_*} tensors: per GDN layer {@code gdn_qkv_raw, gdn_qkv_conv, gdn_q, gdn_k, gdn_v,
 * gdn_z, gdn_a, gdn_b, gdn_beta, gdn_g, gdn_core, gdn_normed, gdn_out}; per full-attention layer {@code attn_gated,
 * attn_out}; per layer {@code mixer_residual, mlp_out, layer_out}. Layouts are {@code [N, ·]} row-major with
 * {@code N = B·s}.
 */
public final class TargetTrace {
    private final Map<String, float[]> values = new LinkedHashMap<>();

    void put(int layer, String name, float[] data) {
        values.put(layer + "." + name, data.clone());
    }

    /** The recorded intermediate of layer {@code layer}, or null. */
    public float[] get(int layer, String name) {
        return values.get(layer + "." + name);
    }
}
