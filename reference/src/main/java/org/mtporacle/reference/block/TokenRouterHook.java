package org.mtporacle.reference.block;

/**
 * Sees every MoE forward row's router choice by its index in the forward and may replace it (spec §12.5): the hybrid
 * target's layers, whose rows hold no drafter cache, map the index to (row, position, layer) themselves.
 */
@FunctionalInterface
public interface TokenRouterHook {
    /**
     * @param index  the forward row, {@code b·s + t} for row {@code b}'s {@code t}-th token of the forward
     * @param probs  the router probabilities {@code [E]} (a copy)
     * @param chosen the top-k of spec §12.3 step 3, in slot order (a copy)
     * @return the experts to use: {@code K} distinct indices in {@code [0, E)}
     */
    int[] route(int index, float[] probs, int[] chosen);
}
