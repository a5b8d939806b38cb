package org.mtporacle.api;

import java.util.Objects;

/**
 * One row's committed target state, schema {@value #SCHEMA} (spec §13.3): the row has processed {@code P ≥ 1} tokens.
 * Every tensor is F32, in the reference's orientation, exactly the row's state after its last committed token:
 * <ul>
 *   <li>{@code convWindows} {@code [nGDN, convDim, K−1]}: per GDN layer the last K−1 raw {@code q|k|v} conv inputs,
 *   oldest first, channel-major (zeros before the sequence start); null when the target has no GDN layer;</li>
 *   <li>{@code recurrentStates} {@code [nGDN, Hv, Dk, Dv]}: per GDN layer the recurrent state {@code S[h, i, j]}, key
 *   dim {@code i}, value dim {@code j}; null when the target has no GDN layer;</li>
 *   <li>{@code keys}, {@code values} {@code [nFull, nKV, P, D]}: per full-attention layer its cache (keys after k_norm
 *   and RoPE); null when the target has no full-attention layer.</li>
 * </ul>
 * Checkpoints are immutable values: capture returns independent copies and restore copies again. The {@code digest}
 * binds the label to the content like a drafter checkpoint's (spec §6): SHA-256 over the canonical encoding of
 * {@value #DIGEST_MAGIC}, the schema, P, the model identity and the four tensors; restore refuses a checkpoint whose
 * digest is missing or does not match.
 *
 * @param schema          {@value #SCHEMA}
 * @param processedTokens P ≥ 1
 * @param modelIdentity   {@link TargetModel#identity()} of the target that produced it
 * @param digest          64 lowercase hex digits, or null for a checkpoint built without one (restore refuses it)
 */
public record TargetCheckpoint(String schema, int processedTokens, String modelIdentity, HostTensor convWindows,
                               HostTensor recurrentStates, HostTensor keys, HostTensor values, String digest) {
    /** The only schema this version reads and writes. */
    public static final String SCHEMA = "qwen-target-v1";
    /** The first bytes of the digest's canonical encoding. */
    public static final String DIGEST_MAGIC = "mtp-oracle-target-checkpoint-digest/1";

    public TargetCheckpoint {
        Objects.requireNonNull(schema, "schema");
        Objects.requireNonNull(modelIdentity, "modelIdentity");
    }

    /** A checkpoint whose digest is computed from these fields: what a backend's capture returns. */
    public static TargetCheckpoint sealed(int processedTokens, String modelIdentity, HostTensor convWindows,
                                          HostTensor recurrentStates, HostTensor keys, HostTensor values) {
        return new TargetCheckpoint(SCHEMA, processedTokens, modelIdentity, convWindows, recurrentStates, keys,
                values, null).sealed();
    }

    /** This checkpoint with its digest recomputed from its fields (whoever calls it vouches for them). */
    public TargetCheckpoint sealed() {
        return new TargetCheckpoint(schema, processedTokens, modelIdentity, convWindows, recurrentStates, keys, values,
                contentDigest());
    }

    /** True when a digest is recorded and equals {@link #contentDigest()}. */
    public boolean digestMatches() {
        return digest != null && digest.equals(contentDigest());
    }

    /** The content digest of these fields (class Javadoc). */
    public String contentDigest() {
        return new ContentDigest(DIGEST_MAGIC).text(schema).integer(processedTokens).text(modelIdentity)
                .tensor(convWindows).tensor(recurrentStates).tensor(keys).tensor(values).hex();
    }

    /** True when every field and every tensor byte are equal. */
    public boolean contentEquals(TargetCheckpoint other) {
        return other != null && schema.equals(other.schema) && processedTokens == other.processedTokens
                && modelIdentity.equals(other.modelIdentity) && same(convWindows, other.convWindows)
                && same(recurrentStates, other.recurrentStates) && same(keys, other.keys)
                && same(values, other.values);
    }

    private static boolean same(HostTensor a, HostTensor b) {
        return a == null ? b == null : a.contentEquals(b);
    }

    @Override
    public String toString() {
        return "TargetCheckpoint[" + schema + ", P=" + processedTokens
                + ", conv=" + (convWindows == null ? "none" : convWindows.describe())
                + ", state=" + (recurrentStates == null ? "none" : recurrentStates.describe())
                + ", keys=" + (keys == null ? "none" : keys.describe())
                + ", digest=" + (digest == null ? "none" : UntrustedText.quote(digest.length() > 12
                ? digest.substring(0, 12) + "…" : digest)) + "]";
    }
}
