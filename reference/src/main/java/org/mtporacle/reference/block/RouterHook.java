package org.mtporacle.reference.block;

/**
 * Sees every MoE forward row's router choice and may replace it (spec §12.5): the kit records the reference's
 * choices, compares them tie-aware with a backend's and continues on the backend's.
 */
@FunctionalInterface
public interface RouterHook {
    /**
     * @param kv       the row's cache, which this forward row appends to
     * @param position the KV position the forward row writes
     * @param probs    the router probabilities {@code [E]} (a copy)
     * @param chosen   the top-k of spec §12.3 step 3, in slot order (a copy)
     * @return the experts to use: {@code K} distinct indices in {@code [0, E)}
     */
    int[] route(RowKv kv, int position, float[] probs, int[] chosen);
}
