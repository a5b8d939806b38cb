package org.mtporacle.api;

import java.util.List;

/**
 * An optional capability of a {@link DraftRows} whose MTP layer is MoE (spec §12.5): it reports the experts its router
 * chose, so that the kit compares expert choices tie-aware (a different choice passes only as a router near-tie), and
 * it can be made to continue on another implementation's choices. A backend that does not implement it is compared on
 * its outputs only.
 */
public interface RouterChoices {

    /**
     * One MTP forward row's choice.
     *
     * @param row      the contract row
     * @param position the KV position the forward row writes (its RoPE position, spec §1.8)
     * @param experts  the chosen experts in the backend's slot order (descending probability)
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
        public String toString() {
            return "row " + row + " position " + position + " experts " + java.util.Arrays.toString(experts);
        }
    }

    /** The choices of every forward row of the last contract call, in the order they were computed; empty if none. */
    List<Choice> lastRouterChoices();

    /**
     * Decides, for the next contract call only, each forward row's experts: the {@link Chooser} sees the row, the KV
     * position, the router probabilities and the implementation's own choice, and returns the experts to use.
     */
    void chooseExpertsNextCall(Chooser chooser);

    /** Picks a forward row's experts (spec §12.5). */
    @FunctionalInterface
    interface Chooser {
        /**
         * @param probs  the router probabilities {@code [E]} (f32 softmax, spec §12.3 step 2)
         * @param chosen this implementation's top-k, in slot order
         * @return the experts to use, {@code K} distinct indices in {@code [0, E)} (usually {@code chosen})
         */
        int[] choose(int row, int position, float[] probs, int[] chosen);
    }
}
