package org.mtporacle.conformance.compare;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * Where and how a side left what it was compared with (conformance/SPEC.md, "Lockstep comparison"): the kind, the
 * action (a chain's action, or a golden's step), the side judged, the row and draft position when they apply, the
 * evidence (the numbers behind it, with the threshold it broke) and one readable line. Lockstep runs, golden
 * verification and the reports all use this one model; {@link #details()} is the flat form reports and traces write.
 *
 * @param kind        what differs
 * @param actionIndex the chain action or golden step, from 0
 * @param side        who is judged: {@code "backend"}, or {@code "reference"} when the reference disagrees with a
 *                    golden
 * @param row         the row, or -1
 * @param position    the draft position, or -1
 * @param evidence    the numbers
 * @param message     one line: what differs, both values, the threshold
 */
public record Divergence(Kind kind, int actionIndex, String side, int row, int position, Evidence evidence,
                         String message) {

    /** What kind of difference it is. */
    public enum Kind {
        /** A draft token differs beyond the near-tie allowance. */
        DRAFT_TOKEN(Category.DRAFT_TOKEN),
        /** A MoE router's expert choice differs beyond the router near-tie allowance (spec §12.5). */
        ROUTER_CHOICE(Category.ROUTER),
        /** A recorded log-prob differs from the reference's by more than the token gap (goldens). */
        LOG_PROB(Category.DRAFT_TOKEN),
        /** A recorded top-2 gap differs from the reference's by more than the token gap (goldens). */
        TOP2_GAP(Category.DRAFT_TOKEN),
        /** A checkpoint's P, draft offset, schema, model identity, or presence (retained hidden or cold) differs. */
        CHECKPOINT_STATE(Category.CHECKPOINT),
        /** A checkpoint tensor's shape differs, or it is present on one side only. */
        CHECKPOINT_SHAPE(Category.CHECKPOINT),
        /** A checkpoint tensor's NMSE is above its threshold. */
        CHECKPOINT_TENSOR(Category.CHECKPOINT),
        /** A checkpoint's digest differs under an exact profile (goldens). */
        CHECKPOINT_DIGEST(Category.CHECKPOINT),
        /** The row count differs. */
        ROW_COUNT(Category.CHECKPOINT),
        /** Both sides failed, with different error kinds. */
        ERROR_KIND(Category.ERROR_BEHAVIOUR),
        /** The side succeeded where a failure was expected. */
        MISSING_ERROR(Category.ERROR_BEHAVIOUR),
        /** The side failed where success was expected. */
        UNEXPECTED_ERROR(Category.ERROR_BEHAVIOUR),
        /** A failed call changed the state it must leave unchanged. */
        STATE_AFTER_FAILURE(Category.STATE_AFTER_FAILURE),
        /** The side threw something other than an MtpException, or returned a malformed result. */
        CONTRACT(Category.CONTRACT);

        private final Category category;

        Kind(Category category) {
            this.category = category;
        }

        public Category category() {
            return category;
        }
    }

    /** The coarse class shrinking keeps: a shrunk chain must fail in the same category. */
    public enum Category {
        DRAFT_TOKEN, ROUTER, CHECKPOINT, ERROR_BEHAVIOUR, STATE_AFTER_FAILURE, CONTRACT
    }

    /** The numbers behind a divergence. */
    public sealed interface Evidence {
        /** The evidence as ordered name/value pairs (absent values left out). */
        Map<String, Object> facts();
    }

    /**
     * A draft token: {@code expected} is the token on the reference's path, {@code actual} the token judged (the
     * backend's, or the golden's when the reference judges a golden); both log-probs are the reference's;
     * {@code gap} is the near-tie distance ({@link NearTie}) and {@code allowance} the profile's token gap.
     */
    public record TokenEvidence(int expected, int actual, float expectedLogprob, float actualLogprob, double gap,
                                double allowance, boolean greedy, String sampler, long step) implements Evidence {
        public Map<String, Object> facts() {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("expectedToken", expected);
            m.put("actualToken", actual);
            m.put("expectedLogprob", expectedLogprob);
            m.put("actualLogprob", actualLogprob);
            m.put("gap", gap);
            m.put("gapUnit", greedy ? "log-prob" : "log-prob (2 x perturbation)");
            m.put("allowance", allowance);
            m.put("sampler", sampler);
            m.put("step", step);
            return m;
        }
    }

    /**
     * A router choice: both expert sets, the reference's probabilities of each, the near-tie gap
     * ({@code RouterNearTie}) and the profile's router allowance.
     */
    public record RouterEvidence(String expectedExperts, String actualExperts, String expectedProbs,
                                 String actualProbs, double gap, double allowance) implements Evidence {
        public Map<String, Object> facts() {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("expectedExperts", expectedExperts);
            m.put("actualExperts", actualExperts);
            m.put("expectedProbs", expectedProbs);
            m.put("actualProbs", actualProbs);
            m.put("gap", gap);
            m.put("gapUnit", "router probability");
            m.put("allowance", allowance);
            return m;
        }
    }

    /**
     * A checkpoint tensor: its name, shapes, NMSE (NaN when the shapes differ), threshold, and where it differs most
     * ({@link Nmse#largestDifference}; empty when not known).
     */
    public record TensorEvidence(String tensor, String expectedShape, String actualShape, double nmse,
                                 double threshold, String where) implements Evidence {
        public TensorEvidence(String tensor, String expectedShape, String actualShape, double nmse,
                              double threshold) {
            this(tensor, expectedShape, actualShape, nmse, threshold, "");
        }

        public Map<String, Object> facts() {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("tensor", tensor);
            m.put("expectedShape", expectedShape);
            m.put("actualShape", actualShape);
            if (!Double.isNaN(nmse)) {
                m.put("nmse", nmse);
                m.put("threshold", threshold);
            }
            if (where != null && !where.isEmpty()) {
                m.put("largestDifference", where);
            }
            return m;
        }
    }

    /**
     * A value: its name, both values, and for numbers their absolute difference and the allowance (NaN otherwise).
     */
    public record ValueEvidence(String field, Object expected, Object actual, double difference, double allowance)
            implements Evidence {
        public static ValueEvidence of(String field, Object expected, Object actual) {
            return new ValueEvidence(field, expected, actual, Double.NaN, Double.NaN);
        }

        public Map<String, Object> facts() {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("field", field);
            m.put("expected", expected);
            m.put("actual", actual);
            if (!Double.isNaN(difference)) {
                m.put("difference", difference);
                m.put("allowance", allowance);
            }
            return m;
        }
    }

    /** An outcome: the expected and actual error kinds (null for success) and messages. */
    public record ErrorEvidence(String expectedKind, String actualKind, String expectedMessage, String actualMessage)
            implements Evidence {
        public Map<String, Object> facts() {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("expectedError", expectedKind == null ? "none (success)" : expectedKind);
            m.put("actualError", actualKind == null ? "none (success)" : actualKind);
            if (expectedMessage != null) {
                m.put("expectedMessage", expectedMessage);
            }
            if (actualMessage != null) {
                m.put("actualMessage", actualMessage);
            }
            return m;
        }
    }

    /** Evidence read back from a trace file: the facts as written. */
    public record RecordedEvidence(Map<String, Object> facts) implements Evidence {
        public RecordedEvidence {
            facts = Collections.unmodifiableMap(new LinkedHashMap<>(facts));
        }
    }

    public Category category() {
        return kind.category();
    }

    /** The same divergence at {@code index}, judged on {@code side}. */
    public Divergence at(int index, String side) {
        return new Divergence(kind, index, side, row, position, evidence, message);
    }

    /** Every fact in order: kind, side, row and position when they apply, then the evidence's. */
    public Map<String, Object> details() {
        if (evidence instanceof RecordedEvidence r) {
            return r.facts();
        }
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("kind", kind.name());
        m.put("side", side);
        if (row >= 0) {
            m.put("row", row);
        }
        if (position >= 0) {
            m.put("position", position);
        }
        if (evidence != null) {
            m.putAll(evidence.facts());
        }
        return Collections.unmodifiableMap(m);
    }

    /** A kind read from a trace: its {@code kind}, or for traces written before kinds, the category's first kind. */
    public static Kind kindOf(String kind, String category) {
        if (kind != null) {
            return Kind.valueOf(kind.toUpperCase(Locale.ROOT));
        }
        Category c = Category.valueOf(category.toUpperCase(Locale.ROOT));
        for (Kind k : Kind.values()) {
            if (k.category() == c) {
                return k;
            }
        }
        throw new IllegalArgumentException(category);
    }

    @Override
    public String toString() {
        return "action " + actionIndex + " (" + side + ", " + kind + "): " + message;
    }
}
