package org.mtporacle.api;

import java.util.List;

/**
 * The shape of a Qwen3.5 / Qwen3-Next hybrid target (spec §13.1): a stack of Gated DeltaNet ({@code linear_attention})
 * and gated full-attention layers, each followed by a dense or MoE MLP, then the final norm and the logits head.
 *
 * @param shape  the full-attention layers' shape and the model's widths: H, nH, nKV, D, R, θ, ε, V and I (for a MoE
 *               target, the routed experts' width), as for the MTP block (spec §1.3)
 * @param layers one type per layer in order; Qwen3.5 has {@code FULL_ATTENTION} at every 4th layer (3, 7, 11, …)
 * @param gdn    the Gated DeltaNet layers' shape
 */
public record TargetConfig(MtpConfig shape, List<LayerType> layers, Gdn gdn) {
    /** At most this many layers (real releases have 24–64). */
    public static final int MAX_LAYERS = 1024;

    /** A layer's token mixer (the {@code layer_types} values of a release config). */
    public enum LayerType {
        /** A Gated DeltaNet layer: {@code "linear_attention"}. */
        LINEAR_ATTENTION("linear_attention"),
        /** A gated full-attention layer: {@code "full_attention"}. */
        FULL_ATTENTION("full_attention");

        private final String configName;

        LayerType(String configName) {
            this.configName = configName;
        }

        /** The name in {@code text_config.layer_types}. */
        public String configName() {
            return configName;
        }
    }

    /**
     * The Gated DeltaNet shape (spec §13.2): {@code Hk} key heads of {@code Dk}, {@code Hv} value heads of {@code Dv},
     * value head {@code j} using key head {@code j / (Hv/Hk)}, and a depthwise causal conv of {@code K} taps over the
     * {@code q|k|v} channels.
     *
     * @param numKeyHeads   Hk, {@code linear_num_key_heads}
     * @param numValueHeads Hv, {@code linear_num_value_heads}; a multiple of Hk
     * @param keyHeadDim    Dk, {@code linear_key_head_dim}
     * @param valueHeadDim  Dv, {@code linear_value_head_dim}
     * @param convKernel    K, {@code linear_conv_kernel_dim}, ≥ 2
     */
    public record Gdn(int numKeyHeads, int numValueHeads, int keyHeadDim, int valueHeadDim, int convKernel) {
        /** @throws MtpException INCOMPATIBLE_MODEL when a value is out of range or inconsistent */
        public Gdn {
            check(numKeyHeads > 0, "linear_num_key_heads = " + numKeyHeads + " must be positive");
            check(numValueHeads > 0 && numValueHeads % numKeyHeads == 0, "linear_num_value_heads = "
                    + numValueHeads + " must be a positive multiple of linear_num_key_heads = " + numKeyHeads);
            check(keyHeadDim > 0, "linear_key_head_dim = " + keyHeadDim + " must be positive");
            check(valueHeadDim > 0, "linear_value_head_dim = " + valueHeadDim + " must be positive");
            check(convKernel >= 2 && convKernel <= 64, "linear_conv_kernel_dim = " + convKernel
                    + " must be in [2, 64]");
            check((long) numValueHeads * keyHeadDim * valueHeadDim <= MtpConfig.MAX_WIDTH * 16,
                    "the recurrent state of " + numValueHeads + " × " + keyHeadDim + " × " + valueHeadDim
                            + " floats per layer is larger than the 2^28 a row may hold");
            check(2L * numKeyHeads * keyHeadDim + 2L * numValueHeads * valueHeadDim <= MtpConfig.MAX_WIDTH,
                    "the GDN projections' width is more than the " + MtpConfig.MAX_WIDTH + " per token a layer may have");
        }

        /** {@code Hk·Dk}, the width of q and of k. */
        public int keyDim() {
            return numKeyHeads * keyHeadDim;
        }

        /** {@code Hv·Dv}, the width of v, z and the gated norm's output. */
        public int valueDim() {
            return numValueHeads * valueHeadDim;
        }

        /** {@code 2·Hk·Dk + Hv·Dv}: the conv's channels, {@code [q | k | v]}. */
        public int convDim() {
            return 2 * keyDim() + valueDim();
        }

        /** {@code Hv / Hk}: value heads per key head. */
        public int groupRatio() {
            return numValueHeads / numKeyHeads;
        }

        /** Floats of one layer's recurrent state {@code [Hv, Dk, Dv]}. */
        public int stateSize() {
            return numValueHeads * keyHeadDim * valueHeadDim;
        }

        /** Floats of one layer's conv window {@code [convDim, K−1]}. */
        public int windowSize() {
            return convDim() * (convKernel - 1);
        }
    }

    /** @throws MtpException INCOMPATIBLE_MODEL when a value is out of range or inconsistent */
    public TargetConfig {
        check(shape != null && gdn != null, "the attention and GDN shapes are required");
        check(layers != null && !layers.isEmpty() && layers.size() <= MAX_LAYERS,
                "the target needs 1 to " + MAX_LAYERS + " layers, got " + (layers == null ? 0 : layers.size()));
        layers = List.copyOf(layers);
    }

    /** L, the number of layers. */
    public int layerCount() {
        return layers.size();
    }

    /** How many layers are of {@code type}. */
    public int count(LayerType type) {
        return (int) layers.stream().filter(t -> t == type).count();
    }

    /** The index among the layers of its own type of layer {@code layer} (the GDN state or KV cache it owns). */
    public int slot(int layer) {
        LayerType type = layers.get(layer);
        int n = 0;
        for (int i = 0; i < layer; i++) {
            n += layers.get(i) == type ? 1 : 0;
        }
        return n;
    }

    /** The types that {@code full_attention_interval} gives: layer {@code i} is full attention when {@code (i+1) % n == 0}. */
    public static List<LayerType> interval(int layerCount, int fullAttentionInterval) {
        LayerType[] t = new LayerType[layerCount];
        for (int i = 0; i < layerCount; i++) {
            t[i] = (i + 1) % fullAttentionInterval == 0 ? LayerType.FULL_ATTENTION : LayerType.LINEAR_ATTENTION;
        }
        return List.of(t);
    }

    private static void check(boolean ok, String message) {
        if (!ok) {
            throw MtpException.incompatibleModel("target config: " + message);
        }
    }
}
