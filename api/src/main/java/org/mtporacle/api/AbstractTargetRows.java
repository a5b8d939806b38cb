package org.mtporacle.api;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;

/**
 * The target row contract once (spec §13.3, §11.1, §11.11): a {@link TargetRows} whose calls validate, keep the
 * round's bookkeeping, chunk prefills and publish atomically, over a backend that supplies only its arithmetic and
 * its storage {@code S} of all rows (conv windows, recurrent states, KV caches; during a round, what a rollback
 * needs).
 *
 * <p>Every call runs in three steps, as in {@link AbstractDraftRows}: <b>validate</b> with {@link TargetContract}'s
 * and {@link RowContract}'s checks; <b>compute</b> new storage from the published one without changing anything a
 * published row reads (a recurrent state is replaced, never updated in place); <b>publish</b> by plain assignments.
 * A failed call leaves every row as it was; a backend whose device cannot be trusted after a failure {@link #poison
 * poisons} the group.
 *
 * <p>The skeleton keeps, per row, the processed tokens {@code P}; during a round, each row's {@code P} before it and
 * the verify's width. Threading is {@link AbstractDraftRows}': one call at a time, close waits.
 *
 * @param <S> the backend's storage of all rows
 */
public abstract class AbstractTargetRows<S> implements TargetRows {
    /** A prefill forwards at most this many positions at once. */
    public static final int PREFILL_CHUNK = AbstractDraftRows.PREFILL_CHUNK;

    private final TargetModel model;
    private final int vocab;
    private final int hiddenSize;
    private final ReentrantLock callLock = new ReentrantLock();
    private volatile String inProgress;
    private S storage;
    private volatile int rows;
    private int[] processed = new int[0]; // [B] P
    private boolean roundOpen;
    private int width;
    private int[] beforeRound;            // [B] P when the open round began
    private volatile boolean closed;
    private String poisonedBy;

    /** A group of no rows over {@code empty}, the storage of zero rows. */
    protected AbstractTargetRows(TargetModel model, S empty) {
        this.model = model;
        this.vocab = model.config().shape().vocabSize();
        this.hiddenSize = model.config().shape().hiddenSize();
        this.storage = empty;
    }

    // ---- what a backend supplies -------------------------------------------------------------------------------

    /** Which forward a call runs: a prefill commits at once; a verify keeps what a rollback to any prefix needs. */
    public enum Pass { PREFILL, VERIFY }

    /**
     * One forward's results, handed to the caller as they are (a backend reads its device's results straight into
     * them; the skeleton copies nothing), and the storage after it.
     */
    public record Forwarded<S>(HostTensor logits,   // [B, n, V] F32: every position (VERIFY) or the last (PREFILL)
                               HostTensor preNorm,  // [B, s, H] F32
                               HostTensor postNorm, // [B, s, H] F32
                               S state) {
    }

    /** One row's state as checkpoint tensors (spec §13.3 shapes, without the leading row axis); null where absent. */
    public record RowState(HostTensor convWindows, HostTensor recurrentStates, HostTensor keys, HostTensor values) {
    }

    /** True once the target this group was opened from is closed. */
    protected abstract boolean modelClosed();

    /** Storage of {@code state}'s rows followed by one per checkpoint (valid for the model), or an empty row (null). */
    protected abstract S appendRows(S state, List<TargetCheckpoint> checkpoints);

    /** Storage holding row {@code keep[i]} of {@code state} as row {@code i}. */
    protected abstract S keepRows(S state, int[] keep);

    /**
     * One forward of {@code s} tokens per row (spec §13.1): row {@code b}, having processed {@code at[b]} tokens,
     * consumes {@code ids[b·s … b·s+s−1]}. A PREFILL returns storage with the tokens committed and the logits of each
     * row's last position; a VERIFY returns the round's storage, from which {@link #rollback} keeps any prefix, and the
     * logits of every position.
     */
    protected abstract Forwarded<S> forward(S state, int[] at, int[] ids, int s, Pass pass);

    /**
     * The open round's storage {@code verified} rolled back: row {@code b} keeps its first {@code keep[b]} verified
     * tokens ({@code 1 ≤ keep[b] ≤ W}) after the {@code before[b]} it had processed.
     */
    protected abstract S rollback(S verified, int[] before, int[] keep);

    /** Row {@code row}'s state after its {@code processed ≥ 1} tokens, as independent copies. */
    protected abstract RowState export(S state, int row, int processed);

    /** Frees {@code state} (the group is closing). */
    protected abstract void release(S state);

    /** Runs one call's computation (a backend may move it to its device thread and poison on failure). */
    protected <T> T onBackend(String call, Supplier<T> work) {
        return work.get();
    }

    /** Makes computed storage outlive the call that built it. */
    protected S seal(S next) {
        return next;
    }

    /** Frees what {@code superseded} holds and {@code current} no longer uses, after a call published. */
    protected void discard(S superseded, S current) {
    }

    /** A hook reached before each step of a call (tests inject faults through it); does nothing by default. */
    protected void reached(String call, String step) {
    }

    /** Marks the group unusable after a failure the backend cannot undo; the first reason is kept. */
    protected final void poison(String reason) {
        if (poisonedBy == null) {
            poisonedBy = reason;
        }
    }

    /** The published storage (for a backend's tests and reports). */
    protected final S storage() {
        return storage;
    }

    /** The target this group runs. */
    public final TargetModel model() {
        return model;
    }

    // ---- the contract --------------------------------------------------------------------------------------------

    @Override
    public final int rowCount() {
        return rows;
    }

    @Override
    public final int[] processedTokens() {
        return processed.clone();
    }

    /** True while a verify round is open. */
    public final boolean roundOpen() {
        return roundOpen;
    }

    @Override
    public final void append(List<TargetCheckpoint> checkpoints) {
        enter("append");
        try {
            TargetContract.checkNoOpenRound("append", roundOpen);
            TargetContract.checkpoints("append", checkpoints, model);
            if (checkpoints.isEmpty()) {
                return;
            }
            int b = rows;
            List<TargetCheckpoint> added = Collections.unmodifiableList(new ArrayList<>(checkpoints));
            int[] after = Arrays.copyOf(processed, b + added.size());
            for (int i = 0; i < added.size(); i++) {
                after[b + i] = added.get(i) == null ? 0 : added.get(i).processedTokens();
            }
            S next = onBackend("append", () -> seal(appendRows(storage, added)));
            reached("append", "publish");
            publish(next, after);
        } finally {
            exit();
        }
    }

    @Override
    public final void filterRows(int[] keep) {
        enter("filterRows");
        try {
            TargetContract.checkNoOpenRound("filterRows", roundOpen);
            RowContract.keep(keep, rows);
            int[] kept = keep.clone();
            int[] after = new int[kept.length];
            for (int i = 0; i < kept.length; i++) {
                after[i] = processed[kept[i]];
            }
            S next = onBackend("filterRows", () -> seal(keepRows(storage, kept)));
            reached("filterRows", "publish");
            publish(next, after);
        } finally {
            exit();
        }
    }

    @Override
    public final TargetOutput prefill(HostTensor tokens) {
        enter("prefill");
        try {
            TargetContract.checkNoOpenRound("prefill", roundOpen);
            RowContract.checkHasRows("prefill", rows);
            int b = rows;
            int[][] ids = RowContract.tokens("prefill", tokens, b, vocab);
            int len = ids[0].length;
            TargetContract.positions("prefill", processed, len, model.config());
            TargetContract.forwardSize("prefill", b, Math.min(len, PREFILL_CHUNK), model.config(),
                    "split the prefill into shorter ones");
            int[] at = processed.clone();
            Forwarded<S> f = onBackend("prefill", () -> prefillChunks(ids, at));
            TargetOutput out = output("prefill", f, b, 1, len);
            reached("prefill", "publish");
            int[] after = new int[b];
            for (int r = 0; r < b; r++) {
                after[r] = at[r] + len;
            }
            publish(f.state(), after);
            return out;
        } finally {
            exit();
        }
    }

    /** Prefill's forwards of at most {@link #PREFILL_CHUNK} positions; the logits are the last chunk's. */
    private Forwarded<S> prefillChunks(int[][] ids, int[] at) {
        int b = at.length;
        int len = ids[0].length;
        long rowBytes = (long) len * hiddenSize * Float.BYTES;
        MemorySegment pre = null;
        MemorySegment post = null;
        S s = storage;
        Forwarded<S> f = null;
        int[] cursor = at.clone();
        for (int pos = 0; pos < len; pos += PREFILL_CHUNK) {
            int n = Math.min(PREFILL_CHUNK, len - pos);
            int[] chunk = new int[b * n];
            for (int r = 0; r < b; r++) {
                System.arraycopy(ids[r], pos, chunk, r * n, n);
            }
            reached("prefill", "chunk forward");
            f = forward(s, cursor.clone(), chunk, n, Pass.PREFILL);
            s = f.state();
            if (n < len) { // more than one chunk: the taps gather into the whole prefill's
                if (pre == null) {
                    pre = MemorySegment.ofArray(new byte[Math.toIntExact(b * rowBytes)]);
                    post = MemorySegment.ofArray(new byte[Math.toIntExact(b * rowBytes)]);
                }
                long chunkBytes = (long) n * hiddenSize * Float.BYTES;
                for (int r = 0; r < b; r++) {
                    long to = r * rowBytes + (long) pos * hiddenSize * Float.BYTES;
                    MemorySegment.copy(f.preNorm().data(), r * chunkBytes, pre, to, chunkBytes);
                    MemorySegment.copy(f.postNorm().data(), r * chunkBytes, post, to, chunkBytes);
                }
            }
            for (int r = 0; r < b; r++) {
                cursor[r] += n;
            }
        }
        if (pre == null) {
            return new Forwarded<>(f.logits(), f.preNorm(), f.postNorm(), seal(s));
        }
        int[] taps = {b, len, hiddenSize};
        return new Forwarded<>(f.logits(), HostTensor.view(DType.F32, taps, pre),
                HostTensor.view(DType.F32, taps, post), seal(s));
    }

    @Override
    public final TargetOutput verify(HostTensor tokens) {
        enter("verify");
        try {
            TargetContract.checkNoOpenRound("verify", roundOpen);
            RowContract.checkHasRows("verify", rows);
            int b = rows;
            int[][] ids = RowContract.tokens("verify", tokens, b, vocab);
            int w = ids[0].length;
            TargetContract.width("verify", w);
            TargetContract.warm("verify", processed, "prefill it first: a verify continues from the pending token");
            TargetContract.positions("verify", processed, w, model.config());
            TargetContract.forwardSize("verify", b, w, model.config(), "verify fewer rows at a time");
            int[] flat = new int[b * w];
            for (int r = 0; r < b; r++) {
                System.arraycopy(ids[r], 0, flat, r * w, w);
            }
            int[] from = processed;
            Forwarded<S> f = onBackend("verify", () -> {
                reached("verify", "forward");
                Forwarded<S> v = forward(storage, from.clone(), flat, w, Pass.VERIFY);
                return new Forwarded<>(v.logits(), v.preNorm(), v.postNorm(), seal(v.state()));
            });
            TargetOutput out = output("verify", f, b, w, w);
            reached("verify", "publish");
            int[] after = new int[b];
            for (int r = 0; r < b; r++) {
                after[r] = from[r] + w;
            }
            publish(f.state(), after);
            beforeRound = from;
            width = w;
            roundOpen = true;
            return out;
        } finally {
            exit();
        }
    }

    @Override
    public final void commit(int[] accepted) {
        enter("commit");
        try {
            TargetContract.checkRoundOpen("commit", roundOpen);
            int b = rows;
            TargetContract.accepted(accepted, b, width);
            int[] keep = new int[b];
            int[] after = new int[b];
            for (int r = 0; r < b; r++) {
                keep[r] = accepted[r] + 1;
                after[r] = beforeRound[r] + keep[r];
            }
            int[] before = beforeRound.clone();
            S next = onBackend("commit", () -> {
                reached("commit", "rollback");
                return seal(rollback(storage, before, keep));
            });
            reached("commit", "publish");
            publish(next, after);
            beforeRound = null;
            width = 0;
            roundOpen = false;
        } finally {
            exit();
        }
    }

    @Override
    public final TargetCheckpoint capture(int row) {
        enter("capture");
        try {
            TargetContract.checkNoOpenRound("capture", roundOpen);
            RowContract.row("capture", row, rows);
            int p = processed[row];
            if (p == 0) {
                throw MtpException.illegalState("capture: row " + row + " has processed no token yet (an empty row "
                        + "must be prefilled first, spec §13.3)");
            }
            RowState t = onBackend("capture", () -> export(storage, row, p));
            return TargetCheckpoint.sealed(p, model.identity(), t.convWindows(), t.recurrentStates(), t.keys(),
                    t.values());
        } finally {
            exit();
        }
    }

    @Override
    public final boolean isClosed() {
        return closed;
    }

    /** Releases the storage; waits for a call running on another thread; refused from inside a call. */
    @Override
    public final void close() {
        if (callLock.isHeldByCurrentThread()) {
            throw MtpException.illegalState("close: called from inside " + inProgress + " on this group (spec §11.11)");
        }
        callLock.lock();
        try {
            if (closed) {
                return;
            }
            closed = true;
            S s = storage;
            storage = null;
            rows = 0;
            processed = new int[0];
            roundOpen = false;
            beforeRound = null;
            release(s);
        } finally {
            callLock.unlock();
        }
    }

    // ---- plumbing --------------------------------------------------------------------------------------------

    private void publish(S next, int[] after) {
        S old = storage;
        storage = next;
        processed = after;
        rows = after.length;
        if (old == next) {
            return;
        }
        boolean done = false;
        try {
            discard(old, next);
            done = true;
        } finally {
            if (!done) {
                poison("freeing superseded storage failed");
            }
        }
    }

    /**
     * The caller's results: the forward's own tensors, checked to be logits {@code [B, n, V]} and taps
     * {@code [B, s, H]} in F32. Others are a backend's bug: the call fails with BACKEND_FAILURE and poisons the group
     * (the storage it computed is neither published nor freed).
     */
    private TargetOutput output(String call, Forwarded<S> f, int b, int n, int s) {
        return new TargetOutput(checked(call, "logits", f.logits(), b, n, vocab),
                checked(call, "preNorm taps", f.preNorm(), b, s, hiddenSize),
                checked(call, "postNorm taps", f.postNorm(), b, s, hiddenSize));
    }

    private HostTensor checked(String call, String what, HostTensor t, int... shape) {
        if (t == null || t.dtype() != DType.F32 || !Arrays.equals(t.shape(), shape)) {
            String message = call + ": the backend's forward returned " + what + " "
                    + (t == null ? "null" : t.dtype() + " " + Arrays.toString(t.shape())) + ", not F32 "
                    + Arrays.toString(shape);
            poison(message);
            throw new MtpException(MtpException.Kind.BACKEND_FAILURE, message);
        }
        return t;
    }

    /** Takes the group for {@code call}, or fails with ILLEGAL_STATE: overlapping call, closed, poisoned, model gone. */
    private void enter(String call) {
        boolean reentrant = callLock.isHeldByCurrentThread();
        if (reentrant || !callLock.tryLock()) {
            String other = inProgress;
            throw MtpException.illegalState(call + ": " + (other == null ? "another call" : other)
                    + " is in progress on this group " + (reentrant ? "(this call comes from inside it)"
                    : "on another thread") + "; a group serves one call at a time (spec §11.11)");
        }
        try {
            RowContract.checkUsable(call, closed, poisonedBy);
            if (modelClosed()) {
                throw MtpException.illegalState(call + ": the target this group was opened from is closed; a group "
                        + "cannot outlive its target (spec §11.11)");
            }
        } catch (RuntimeException e) {
            callLock.unlock();
            throw e;
        }
        inProgress = call;
    }

    private void exit() {
        inProgress = null;
        callLock.unlock();
    }
}
