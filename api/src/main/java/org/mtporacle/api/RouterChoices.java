package org.mtporacle.api;

import java.util.Arrays;
import java.util.List;

/**
 * An optional capability of a {@link DraftRows} whose MTP layer is MoE (spec §12.5): it reports the experts its router
 * chose, so that the kit compares expert choices tie-aware (a different choice passes only as a router near-tie, and
 * the reference then continues on the backend's experts). A backend that does not implement it is compared on its
 * outputs only.
 */
public interface RouterChoices {

    /**
     * One MTP forward row's choice.
     *
     * @param row      the contract row
     * @param position the KV position the forward row writes (its RoPE position, spec §1.8)
     * @param experts  the chosen experts in slot order (descending probability)
     */
    record Choice(int row, int position, int[] experts) {
        public Choice {
            experts = experts.clone();
        }

        @Override
        public int[] experts() {
            return experts.clone();
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Choice c && c.row == row && c.position == position && Arrays.equals(c.experts, experts);
        }

        @Override
        public int hashCode() {
            return 31 * (31 * row + position) + Arrays.hashCode(experts);
        }

        @Override
        public String toString() {
            return "row " + row + " position " + position + " experts " + Arrays.toString(experts);
        }
    }

    /**
     * The choices of every MoE forward row of the last {@code prefill}, {@code draft} or {@code commit}, in the order
     * they were computed (a later forward row of the same row and position replaces an earlier one); empty when the
     * call ran no MoE forward or failed before it.
     */
    List<Choice> lastRouterChoices();
}
