package org.mtporacle.api;

import java.util.List;

/**
 * A group of draft rows, one per request, sharing one MTP block (spec §5). Rows are fixed within a draft/commit round;
 * membership changes and capture happen only between committed rounds.
 *
 * <p>Every call validates its arguments and the group's state first and fails with an {@link MtpException} whose
 * message names the call, the row and the offending value, leaving every row unchanged (spec §11.1). A backend whose
 * device computation fails mid-call marks the group <em>poisoned</em>; every later call then fails with
 * ILLEGAL_STATE saying so. Tensors passed in are borrowed (copied if kept); checkpoints returned are owned.
 *
 * <p>Threading and lifetime (spec §11.11): a group serves one call at a time. A call that overlaps another call on the
 * same group, from another thread or from inside it (a callback), fails with ILLEGAL_STATE and changes nothing;
 * calls from different threads that do not overlap are fine. {@link #close()} waits for a call running on another
 * thread. Once the model that opened the group is closed, every call fails with ILLEGAL_STATE; close still works.
 * {@link AbstractDraftRows} implements all of this once.
 *
 * <p>Alignment (spec §1.8, §10.1.1): at a committed boundary, a row that has processed {@code P} target tokens holds
 * {@code P − 1} drafter positions and the true hidden {@code h_{P−1}}.
 */
public interface DraftRows extends AutoCloseable {

    /** The number of rows {@code B}. */
    int rowCount();

    /**
     * Appends rows after the existing ones, all or nothing (spec §5.2): a checkpoint restores a row (spec §6), null
     * adds a cold row that must be prefilled before it can draft. An empty list is a no-op.
     *
     * @throws MtpException INCOMPATIBLE_CHECKPOINT for a checkpoint of another schema, model, alignment or shape;
     *                      ILLEGAL_STATE during an open round or after close
     */
    void append(List<RowCheckpoint> checkpoints);

    /**
     * Keeps the rows {@code keep} in that order, retiring the others (spec §5.3); an empty array retires every row.
     *
     * @throws MtpException INVALID_ARGUMENT for an index out of range or repeated
     */
    void filterRows(int[] keep);

    /**
     * Consumes new target tokens and the target's tapped hiddens at the same positions (spec §5.4): restored rows
     * first bridge their retained hidden to {@code tokens[:,0]}; then token {@code p+1} pairs with hidden {@code p};
     * the last hidden is retained. Never samples.
     *
     * @param tokens  {@code [B, L]} I32 or I64, {@code L ≥ 1}, ids in {@code [0, V)}
     * @param context {@code [B, L, H]} F32, F16 or BF16, finite
     */
    void prefill(HostTensor tokens, HostTensor context);

    /**
     * Opens a round and drafts {@code depth} tokens per row (spec §5.7). Depth 0 only appends the pending row.
     *
     * @param pending  {@code [B]} the last sampled, not yet processed token of each row
     * @param depth    ≥ 0
     * @param steps    {@code [B]} samples already drawn per request; position {@code t} samples at {@code steps[b]+t}
     * @param sampling one sampler per row
     * @return {@code [B][depth]} proposals
     */
    int[][] draft(int[] pending, int depth, long[] steps, DraftSampling sampling);

    /**
     * Closes the open round keeping {@code accepted[b]} proposals of each row (spec §5.8): the row retains the
     * pending row and its accepted proposals' rows, builds the last proposal's row at full acceptance, and retains
     * {@code context[b, accepted[b]]} as its true hidden.
     *
     * @param accepted {@code [B]}, each in {@code [0, depth]}
     * @param context  {@code [B, depth+1, H]} the target's verify taps
     */
    void commit(int[] accepted, HostTensor context);

    /**
     * Captures row {@code row} at a committed boundary (spec §6): independent copies of its KV and retained hidden.
     *
     * @throws MtpException ILLEGAL_STATE during a round or for a row that has consumed no target token
     */
    RowCheckpoint capture(int row);

    /** True once {@link #close()} ran. */
    boolean isClosed();

    /** Releases the group's state; idempotent. Later calls fail with ILLEGAL_STATE. */
    @Override
    void close();
}
