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
 * <p>The {@code digest} binds the label to the content (spec §6, "Content digest"): SHA-256 over a canonical encoding
 * of the schema, P, draftOffset, model identity and every tensor's dtype, shape and bytes. A backend's capture sets it
 * ({@link #sealed}); restore recomputes it and refuses a checkpoint whose label or tensors were changed without
 * recomputing it, and one without a digest. It is a checksum anyone can recompute, not a signature.
 *
 * @param schema          {@value #SCHEMA}
 * @param processedTokens P ≥ 1
 * @param draftOffset     P − 1 for a well-formed checkpoint (spec §6; restore refuses anything else)
 * @param modelIdentity   {@link MtpModel#identity()} of the model that produced it
 * @param digest          the content digest recorded when it was captured (64 lowercase hex digits), or null for a
 *                        checkpoint built without one, which restore refuses
 */
public record RowCheckpoint(String schema, int processedTokens, int draftOffset, String modelIdentity,
                            HostTensor keys, HostTensor values, HostTensor hidden, String digest) {
    /** The only schema this version reads and writes. */
    public static final String SCHEMA = "qwen-mtp-v1";
    /** The first bytes of the digest's canonical encoding (spec §6). */
    public static final String DIGEST_MAGIC = "mtp-oracle-checkpoint-digest/1";

    public RowCheckpoint {
        Objects.requireNonNull(schema, "schema");
        Objects.requireNonNull(modelIdentity, "modelIdentity");
        Objects.requireNonNull(hidden, "hidden");
    }

    /** A checkpoint without a digest (restore refuses it until it is {@link #sealed() sealed}). */
    public RowCheckpoint(String schema, int processedTokens, int draftOffset, String modelIdentity, HostTensor keys,
                         HostTensor values, HostTensor hidden) {
        this(schema, processedTokens, draftOffset, modelIdentity, keys, values, hidden, null);
    }

    /** A checkpoint whose digest is computed from these fields: what a backend's capture returns. */
    public static RowCheckpoint sealed(String schema, int processedTokens, int draftOffset, String modelIdentity,
                                       HostTensor keys, HostTensor values, HostTensor hidden) {
        return new RowCheckpoint(schema, processedTokens, draftOffset, modelIdentity, keys, values, hidden)
                .sealed();
    }

    /** This checkpoint with its digest recomputed from its fields (whoever calls it vouches for them). */
    public RowCheckpoint sealed() {
        return new RowCheckpoint(schema, processedTokens, draftOffset, modelIdentity, keys, values, hidden,
                contentDigest());
    }

    /** True when a digest is recorded and equals {@link #contentDigest()}. */
    public boolean digestMatches() {
        return digest != null && digest.equals(contentDigest());
    }

    /**
     * The content digest of these fields, lowercase hex SHA-256 over (spec §6, all integers little-endian): the ASCII
     * bytes of {@value #DIGEST_MAGIC}; the schema; P and draftOffset as 8-byte two's complement; the model identity;
     * then for each of keys, values, hidden one byte 0 when absent, or 1 followed by the dtype's safetensors name, the
     * rank as 4 bytes, each dimension as 8 bytes, the byte count as 8 bytes and the tensor's little-endian row-major
     * bytes. Each string is its UTF-8 byte count as 4 bytes followed by those bytes.
     */
    public String contentDigest() {
        return new ContentDigest(DIGEST_MAGIC).text(schema).integer(processedTokens).integer(draftOffset)
                .text(modelIdentity).tensor(keys).tensor(values).tensor(hidden).hex();
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
                + ", keys=" + (keys == null ? "none" : keys.describe()) + ", hidden=" + hidden.describe()
                + ", digest=" + (digest == null ? "none" : UntrustedText.quote(digest.length() > 12
                ? digest.substring(0, 12) + "…" : digest)) + "]";
    }
}
