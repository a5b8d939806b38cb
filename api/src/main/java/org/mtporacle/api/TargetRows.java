package org.mtporacle.api;

import java.util.List;

/**
 * A group of target rows, one per request, sharing one hybrid target (spec §13.3). Each row holds, unpadded, what its
 * processed tokens left: per Gated DeltaNet layer a conv window and a recurrent state, per full-attention layer a KV
 * cache. Rows are fixed within a verify/commit round; membership changes and capture happen only between rounds.
 *
 * <p>The discipline is the drafter rows' ({@link DraftRows}): every call validates its arguments and the group's state
 * first and fails with an {@link MtpException} naming the call, the row and the value, leaving every row unchanged; a
 * backend whose device fails mid-call poisons the group; one call at a time; close waits for a running call.
 * {@link AbstractTargetRows} implements all of this once.
 *
 * <p>A speculative step is {@code verify([pending, d1 … dd])} then {@code commit(accepted)}: the row keeps the state
 * after {@code accepted + 1} of the verified tokens, as if the rejected ones were never fed (spec §13.3). A plain
 * decoding step is a verify of width 1 and {@code commit(0)}.
 */
public interface TargetRows extends AutoCloseable {

    /** The number of rows {@code B}. */
    int rowCount();

    /** The tokens {@code P} each row has processed (at the last committed boundary, or through the open verify). */
    int[] processedTokens();

    /**
     * Appends rows after the existing ones, all or nothing: a checkpoint restores a row, null adds an empty row
     * ({@code P = 0}) that starts with a prefill. An empty list is a no-op.
     *
     * @throws MtpException INCOMPATIBLE_CHECKPOINT for a checkpoint of another schema, model or shape, or one whose
     *                      digest does not match; ILLEGAL_STATE during an open round or after close
     */
    void append(List<TargetCheckpoint> checkpoints);

    /**
     * Keeps the rows {@code keep} in that order, retiring the others; an empty array retires every row.
     *
     * @throws MtpException INVALID_ARGUMENT for an index out of range or repeated
     */
    void filterRows(int[] keep);

    /**
     * Feeds {@code L} tokens to every row and commits them (spec §13.3): the prompt, or a further piece of it (a split
     * prefill equals one prefill up to the chunked form's reassociation, exactly in the recurrent form).
     *
     * @param tokens {@code [B, L]} I32 or I64, {@code L ≥ 1}, ids in {@code [0, V)}
     * @return logits of each row's last position {@code [B, 1, V]} and both taps at every position {@code [B, L, H]}
     */
    TargetOutput prefill(HostTensor tokens);

    /**
     * Opens a round: feeds {@code W} tokens per row (the pending token then the drafts) in one forward, keeping what a
     * commit needs to roll each row back to any prefix (spec §13.3). Rows must have processed at least one token.
     *
     * @param tokens {@code [B, W]} I32 or I64, {@code 1 ≤ W ≤ } {@link TargetContract#MAX_WIDTH}
     * @return logits {@code [B, W, V]} and both taps {@code [B, W, H]} at every verified position
     */
    TargetOutput verify(HostTensor tokens);

    /**
     * Closes the open round: row {@code b} keeps the first {@code accepted[b] + 1} verified tokens (the pending token
     * and its accepted drafts) and drops the rest from its conv windows, recurrent states and KV caches (spec §13.3).
     *
     * @param accepted {@code [B]}, each in {@code [0, W − 1]}
     */
    void commit(int[] accepted);

    /**
     * Captures row {@code row} at a committed boundary: independent copies of its whole state.
     *
     * @throws MtpException ILLEGAL_STATE during a round or for a row that has processed no token
     */
    TargetCheckpoint capture(int row);

    /** True once {@link #close()} ran. */
    boolean isClosed();

    /** Releases the group's state; idempotent. Later calls fail with ILLEGAL_STATE. */
    @Override
    void close();
}
