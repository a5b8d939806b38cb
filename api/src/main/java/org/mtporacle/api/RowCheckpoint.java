package org.mtporacle.api;

import java.util.Objects;

/**
 * One row's committed drafter state, schema {@code qwen-mtp-v1} (spec §6): the row has processed {@code P} target
 * tokens, holds {@code P − 1} drafter KV positions and retains the true hidden {@code h_{P−1}}.
 *
 * <p>Tensors: {@code keys} and {@code values} {@code [1, nKV, P−1, D]} (exactly the valid positions in temporal order;
 * null when {@code P == 1}); {@code hidden} {@code [1, 1, H]}. Checkpoints are immutable values: capture returns
 * independent copies and restore copies again, so one checkpoint can be appended to any number of groups, of any
 * backend, loaded with the same model ({@code modelIdentity}).
 *
 * @param schema          {@value #SCHEMA}
 * @param processedTokens P ≥ 1
 * @param draftOffset     P − 1 for a well-formed checkpoint (spec §6; restore refuses anything else)
 * @param modelIdentity   {@link MtpModel#identity()} of the model that produced it
 */
public record RowCheckpoint(String schema, int processedTokens, int draftOffset, String modelIdentity,
                            HostTensor keys, HostTensor values, HostTensor hidden) {
    /** The only schema this version reads and writes. */
    public static final String SCHEMA = "qwen-mtp-v1";

    public RowCheckpoint {
        Objects.requireNonNull(schema, "schema");
        Objects.requireNonNull(modelIdentity, "modelIdentity");
        Objects.requireNonNull(hidden, "hidden");
    }

    /** True when every field and every tensor byte are equal (spec §10.1.7 "byte-identical"). */
    public boolean contentEquals(RowCheckpoint other) {
        return other != null && schema.equals(other.schema) && processedTokens == other.processedTokens
                && draftOffset == other.draftOffset && modelIdentity.equals(other.modelIdentity)
                && tensorEquals(keys, other.keys) && tensorEquals(values, other.values)
                && hidden.contentEquals(other.hidden);
    }

    private static boolean tensorEquals(HostTensor a, HostTensor b) {
        return a == null ? b == null : a.contentEquals(b);
    }

    @Override
    public String toString() {
        return "RowCheckpoint[" + schema + ", P=" + processedTokens + ", draftOffset=" + draftOffset
                + ", keys=" + (keys == null ? "none" : keys.describe()) + ", hidden=" + hidden.describe() + "]";
    }
}
