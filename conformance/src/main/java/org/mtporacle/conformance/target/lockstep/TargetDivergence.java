package org.mtporacle.conformance.target.lockstep;

/**
 * Where and how a backend's target left the reference's (spec §13): the kind, the action, the row and position when
 * they apply, and one line with both values and the threshold broken.
 *
 * @param kind        what differs
 * @param actionIndex the chain action, from 0 (-1 outside a chain)
 * @param row         the row, or -1
 * @param position    the verify or prefill position (for {@link Kind#ROUTER}: the token's position in its row), or
 *                    -1
 * @param message     what differs, both values, the threshold
 */
public record TargetDivergence(Kind kind, int actionIndex, int row, int position, String message) {

    /** What differs; shrinking keeps the {@link Category}. */
    public enum Kind {
        /** A greedy token at a verify or prefill position differs beyond the near-tie allowance. */
        TOKEN(Category.OUTPUT),
        /** A row's logits differ by NMSE beyond the bound. */
        LOGITS(Category.OUTPUT),
        /** A row's hidden taps (pre- or post-norm) differ by NMSE beyond the bound. */
        TAPS(Category.OUTPUT),
        /** A row's processed count, or a state tensor's presence or shape, differs. */
        STATE_SHAPE(Category.STATE),
        /** A row's conv windows, recurrent states, keys or values differ by NMSE beyond the bound. */
        STATE_TENSOR(Category.STATE),
        /**
         * A MoE layer's expert set at a token differs from the reference's beyond the router near-tie allowance
         * (spec §12.5; only for a backend that reports its choices).
         */
        ROUTER(Category.ROUTER),
        /** A chain's typical NMSE of one kind (the median of its comparisons) exceeds the profile's bound on it. */
        TYPICAL_NMSE(Category.TYPICAL),
        /** The row count differs. */
        ROW_COUNT(Category.STATE),
        /** Both sides failed, with different kinds. */
        ERROR_KIND(Category.ERROR_BEHAVIOUR),
        /** The backend succeeded where the reference fails. */
        MISSING_ERROR(Category.ERROR_BEHAVIOUR),
        /** The backend failed where the reference succeeds. */
        UNEXPECTED_ERROR(Category.ERROR_BEHAVIOUR),
        /** A failed call changed the backend's rows. */
        STATE_AFTER_FAILURE(Category.STATE_AFTER_FAILURE),
        /** Something other than an MtpException, or a malformed result. */
        CONTRACT(Category.CONTRACT),
        /** The speculative loop over the backend emitted other tokens than plain decoding, or than the reference's
         * loop, or accepted other counts under the declared policy (spec §13.4). */
        LOOP(Category.LOOP);

        private final Category category;

        Kind(Category category) {
            this.category = category;
        }

        public Category category() {
            return category;
        }
    }

    /** The coarse class a shrunk chain must keep. */
    public enum Category {
        OUTPUT, STATE, ERROR_BEHAVIOUR, STATE_AFTER_FAILURE, CONTRACT, LOOP, ROUTER,
        /** A chain's typical NMSE, judged at its end. */
        TYPICAL
    }

    public Category category() {
        return kind.category();
    }

    /** The same divergence placed at action {@code index}. */
    public TargetDivergence at(int index) {
        return new TargetDivergence(kind, index, row, position, message);
    }

    @Override
    public String toString() {
        return "action " + actionIndex + " (" + kind + "): " + message;
    }
}
