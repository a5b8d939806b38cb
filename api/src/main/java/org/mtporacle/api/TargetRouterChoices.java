package org.mtporacle.api;

import java.util.Arrays;
import java.util.List;

/**
 * An optional capability of a {@link TargetRows} whose target has MoE layers (spec §12.5, §13.1): it reports the
 * experts each MoE layer's router chose at every token a call computed, so that the kit compares expert choices
 * tie-aware (a different choice passes only as a router near-tie, and the reference then continues on the backend's
 * experts). A backend that does not implement it is compared on its outputs only.
 */
public interface TargetRouterChoices {

    /**
     * One token's choice in one MoE layer.
     *
     * @param row      the contract row
     * @param position the token's index in its row (its RoPE position: the row's processed count before it)
     * @param layer    the decoder layer, from 0
     * @param experts  the chosen experts in slot order (descending probability)
     */
    record Choice(int row, int position, int layer, int[] experts) {
        public Choice {
            experts = experts.clone();
        }

        @Override
        public int[] experts() {
            return experts.clone();
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Choice c && c.row == row && c.position == position && c.layer == layer
                    && Arrays.equals(c.experts, experts);
        }

        @Override
        public int hashCode() {
            return 31 * (31 * (31 * row + position) + layer) + Arrays.hashCode(experts);
        }

        @Override
        public String toString() {
            return "row " + row + " position " + position + " layer " + layer + " experts "
                    + Arrays.toString(experts);
        }
    }

    /**
     * The choices of every (row, token, MoE layer) the last {@code prefill} or {@code verify} computed, in the order
     * they were computed; empty when the target has no MoE layer, or the call failed before its forward. A
     * {@code commit} computes nothing and leaves them as they were.
     */
    List<Choice> lastRouterChoices();
}
