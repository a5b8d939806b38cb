package org.mtporacle.conformance.lockstep;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Where and how a backend left the reference: the action, a category, one readable line, and the numbers behind it
 * (row, position, both tokens, both log-probs, the gap; or the tensor and its NMSE).
 */
public record Divergence(int actionIndex, Category category, String message, Map<String, Object> details) {
    public Divergence {
        details = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(details));
    }

    /** What kind of difference it is; shrinking keeps the category. */
    public enum Category {
        /** A draft token differs beyond the near-tie tolerance. */
        DRAFT_TOKEN,
        /** A checkpoint differs (P, offset, shape, or NMSE above tolerance). */
        CHECKPOINT,
        /** One side failed and the other did not, or the kinds differ. */
        ERROR_BEHAVIOUR,
        /** A failed call changed the state it must leave unchanged. */
        STATE_AFTER_FAILURE,
        /** A backend threw something other than MtpException, or returned a malformed result. */
        CONTRACT
    }
}
