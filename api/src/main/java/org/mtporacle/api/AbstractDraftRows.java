package org.mtporacle.api;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;

/**
 * The row contract once (spec §5, §11.1, §11.11): a {@link DraftRows} whose calls validate, keep the round's
 * bookkeeping, chunk prefills and publish atomically, over a backend that supplies only its arithmetic and its
 * storage {@code S} of all rows (KV caches and retained hiddens).
 *
 * <p>Every call runs in three steps. <b>Validate</b> the group's state and every argument with {@link RowContract}'s
 * checks and messages. <b>Compute</b> new storage from the published one; a backend may write into buffers the
 * published storage shares, but only at positions at or past each row's published length, which nothing reads.
 * <b>Publish</b> with plain assignments that cannot fail. A failed call therefore leaves every row as it was; a
 * backend whose device cannot be trusted after a failure {@link #poison poisons} the group instead.
 *
 * <p>The skeleton keeps, per row, the committed drafter length {@code P − 1} (spec §1.8) and whether the row holds a
 * retained hidden; during a round, each row's length before the round and its proposals. Arrays it publishes are
 * never written again, only replaced.
 *
 * <p>Threading (spec §11.11): one call at a time. A call that overlaps another call on the same group, from another
 * thread or from inside it, fails with ILLEGAL_STATE and changes nothing; calls from different threads that do not
 * overlap are fine, each seeing the previous one's effects. {@link #close()} waits for a call running on another
 * thread. Once the model is closed every call fails with ILLEGAL_STATE; close still releases the group.
 *
 * @param <S> the backend's storage of all rows
 */
public abstract class AbstractDraftRows<S> implements DraftRows {
    /** Prefill forwards at most this many positions at once (spec §5.4). */
    public static final int PREFILL_CHUNK = 2048;

    private final MtpModel model;
    private final int vocab;
    private final int hiddenSize;
    private final ReentrantLock callLock = new ReentrantLock();
    private volatile String inProgress; // the call holding callLock, for a refused caller's message
    private S storage;
    private volatile int rows;
    private int[] lengths = new int[0];      // [B] committed drafter positions, P − 1
    private boolean[] warm = new boolean[0]; // [B] holds a retained hidden (restored or prefilled)
    private boolean roundOpen;
    private int depth;
    private int[] beforeRound;               // [B] lengths when the open round began
    private int[][] drafts;                  // [B][depth] the open round's proposals
    private volatile boolean closed;
    private String poisonedBy;

    /** A group of no rows over {@code empty}, the storage of zero rows. */
    protected AbstractDraftRows(MtpModel model, S empty) {
        this.model = model;
        this.vocab = model.config().vocabSize();
        this.hiddenSize = model.config().hiddenSize();
        this.storage = empty;
    }

    // ---- what a backend supplies -------------------------------------------------------------------------------

    /** True once the model this group was opened from is closed. */
    protected abstract boolean modelClosed();

    /**
     * Storage of the {@code state}'s rows followed by one row per checkpoint (spec §5.2, §6): a checkpoint's KV and
     * hidden copied in, or (null) a cold row with no KV. The checkpoints are valid for the model.
     */
    protected abstract S appendRows(S state, List<RowCheckpoint> checkpoints);

    /** Storage holding row {@code keep[i]} of {@code state} as row {@code i} (spec §5.3); {@code lengths} are theirs. */
    protected abstract S keepRows(S state, int[] keep, int[] lengths);

    /**
     * One forward of {@code s} positions per row (spec §3): row {@code b} appends K/V at positions
     * {@code at[b] … at[b]+s−1} for tokens {@code ids[b·s …]} and input hiddens {@code hin[(b·s) · H …]}, or, when
     * {@code hin} is null ({@code s == 1}), its retained hidden. Only rows with {@code rows[b]} (all when null) count.
     * In buffers the published storage shares, a forward never writes below a row's published length: commit passes
     * each row's kept length as {@code at}, lower than the open round's, but selects only rows whose kept length is
     * the round's (full acceptance), so a backend that computes every row must write the others into new buffers.
     */
    protected abstract S forward(S state, int[] at, boolean[] rows, int[] ids, float[] hin, int s);

    /** {@code state} with the retained hiddens replaced by {@code hidden} {@code [B, H]} (spec §5.4, §5.8). */
    protected abstract S retain(S state, float[] hidden);

    /**
     * A draft round of {@code depth ≥ 1} (spec §5.7): from the retained hiddens and {@code pending}, forward and
     * sample {@code depth} times, row {@code b} appending at {@code at[b]} on.
     */
    protected abstract Drafted<S> draftChain(S state, int[] at, int[] pending, int depth, long[] steps,
                                             DraftSampling sampling);

    /** Row {@code row}'s KV of its first {@code length} positions (null when 0) and retained hidden (spec §6). */
    protected abstract RowTensors export(S state, int row, int length);

    /** Frees {@code state} (the group is closing); {@code state} may be the storage of zero rows. */
    protected abstract void release(S state);

    /** Runs one call's computation (a backend may move it to its device thread, in a scope, and poison on failure). */
    protected <T> T onBackend(String call, Supplier<T> work) {
        return work.get();
    }

    /** Makes computed storage outlive the call that built it (e.g. evaluate it and take it out of a scope). */
    protected S seal(S next) {
        return next;
    }

    /** Frees what {@code superseded} holds and {@code current} no longer uses, after a call published. */
    protected void discard(S superseded, S current) {
    }

    /** {@code state} with room for {@code extra} more positions past {@code at} in every row (a hint). */
    protected S reserve(S state, int[] at, int extra) {
        return state;
    }

    /** A hook reached before each step of a call (tests inject faults through it); does nothing by default. */
    protected void reached(String call, String step) {
    }

    /** Marks the group unusable after a failure the backend cannot undo (spec §9.2); the first reason is kept. */
    protected final void poison(String reason) {
        if (poisonedBy == null) {
            poisonedBy = reason;
        }
    }

    /** The published storage (for a backend's tests and reports). */
    protected final S storage() {
        return storage;
    }

    /** A draft round's proposals {@code [B][depth]} and the storage after it. */
    public record Drafted<S>(int[][] tokens, S state) {
    }

    /** One row's checkpoint tensors: keys and values {@code [1, nKV, P−1, D]} (null when P = 1), hidden [1, 1, H]. */
    public record RowTensors(HostTensor keys, HostTensor values, HostTensor hidden) {
    }

    /** A draft chain: {@link #draftChain}, or a variant a backend offers beside it. */
    @FunctionalInterface
    public interface DraftChain<S> {
        Drafted<S> draft(S state, int[] at, int[] pending, int depth, long[] steps, DraftSampling sampling);
    }

    // ---- the contract --------------------------------------------------------------------------------------------

    @Override
    public final int rowCount() {
        return rows;
    }

    /** The drafter positions {@code P − 1} each row holds at its last committed boundary, or after the open draft. */
    public final int[] drafterLengths() {
        return lengths.clone();
    }

    /** True while a draft round is open. */
    public final boolean roundOpen() {
        return roundOpen;
    }

    @Override
    public final void append(List<RowCheckpoint> checkpoints) {
        enter("append");
        try {
            RowContract.checkNoOpenRound("append", roundOpen);
            RowContract.checkpoints("append", checkpoints, model);
            if (checkpoints.isEmpty()) {
                return;
            }
            int b = rows;
            int n = checkpoints.size();
            List<RowCheckpoint> added = Collections.unmodifiableList(new ArrayList<>(checkpoints));
            int[] newLengths = Arrays.copyOf(lengths, b + n);
            boolean[] newWarm = Arrays.copyOf(warm, b + n);
            for (int i = 0; i < n; i++) {
                RowCheckpoint cp = added.get(i);
                newLengths[b + i] = cp == null ? 0 : cp.processedTokens() - 1;
                newWarm[b + i] = cp != null;
            }
            S next = onBackend("append", () -> seal(appendRows(storage, added)));
            reached("append", "publish");
            S old = storage;
            storage = next;
            lengths = newLengths;
            warm = newWarm;
            rows = b + n;
            discarded(old);
        } finally {
            exit();
        }
    }

    @Override
    public final void filterRows(int[] keep) {
        enter("filterRows");
        try {
            RowContract.checkNoOpenRound("filterRows", roundOpen);
            RowContract.keep(keep, rows);
            int[] kept = keep.clone();
            int[] newLengths = new int[kept.length];
            boolean[] newWarm = new boolean[kept.length];
            for (int i = 0; i < kept.length; i++) {
                newLengths[i] = lengths[kept[i]];
                newWarm[i] = warm[kept[i]];
            }
            S next = onBackend("filterRows", () -> seal(keepRows(storage, kept, newLengths.clone())));
            reached("filterRows", "publish");
            S old = storage;
            storage = next;
            lengths = newLengths;
            warm = newWarm;
            rows = kept.length;
            discarded(old);
        } finally {
            exit();
        }
    }

    @Override
    public final void prefill(HostTensor tokens, HostTensor context) {
        enter("prefill");
        try {
            RowContract.checkNoOpenRound("prefill", roundOpen);
            RowContract.checkHasRows("prefill", rows);
            int b = rows;
            int[][] ids = RowContract.tokens("prefill", tokens, b, vocab);
            int len = ids[0].length;
            context = snapshot(context); // checked and used from one copy: another thread cannot change it between
            RowContract.context("prefill", context, b, len, hiddenSize, "the taps at the same L positions as tokens");
            int[] added = new int[b];
            for (int r = 0; r < b; r++) {
                added[r] = (warm[r] ? 1 : 0) + len - 1;
            }
            RowContract.positions("prefill", lengths, added, model.config(), "a prefill of L = " + len);
            RowContract.forwardSize("prefill", b, Math.min(len, PREFILL_CHUNK), model, false,
                    "split the prefill into shorter ones (a split prefill equals one, spec §10.1.8)");
            float[] ctx = context.toFloatArray(); // [B, L, H]
            int[] at = lengths.clone();
            S next = onBackend("prefill", () -> prefillSteps(ids, ctx, at));
            reached("prefill", "publish");
            S old = storage;
            boolean[] allWarm = new boolean[b];
            Arrays.fill(allWarm, true);
            storage = next;
            lengths = at;
            warm = allWarm;
            discarded(old);
        } finally {
            exit();
        }
    }

    /** Prefill's computation (spec §5.4); advances {@code at} to the lengths after it. */
    private S prefillSteps(int[][] ids, float[] ctx, int[] at) {
        int b = at.length;
        int len = ids[0].length;
        int h = hiddenSize;
        boolean[] bridge = warm;
        boolean anyBridge = any(bridge);
        S s = reserve(storage, at.clone(), (anyBridge ? 1 : 0) + len - 1);
        // 1. bridge: each row with a retained hidden pairs tokens[b, 0] with it; cold rows keep nothing
        if (anyBridge) {
            int[] first = new int[b];
            for (int r = 0; r < b; r++) {
                first[r] = ids[r][0];
            }
            reached("prefill", "bridge forward");
            s = forward(s, at.clone(), bridge, first, null, 1);
            for (int r = 0; r < b; r++) {
                at[r] += bridge[r] ? 1 : 0;
            }
        }
        // 2. shifted chunks: token p+1 pairs with hidden p, at most PREFILL_CHUNK positions per forward
        for (int pos = 0; pos + 1 < len; pos += PREFILL_CHUNK) {
            int n = Math.min(pos + PREFILL_CHUNK, len - 1) - pos;
            int[] chunkIds = new int[b * n];
            float[] hin = new float[b * n * h];
            for (int r = 0; r < b; r++) {
                System.arraycopy(ids[r], pos + 1, chunkIds, r * n, n);
                System.arraycopy(ctx, (r * len + pos) * h, hin, r * n * h, n * h);
            }
            reached("prefill", "chunk forward");
            s = forward(s, at.clone(), null, chunkIds, hin, n);
            for (int r = 0; r < b; r++) {
                at[r] += n;
            }
        }
        // 3. retain the last tap of each row
        int[] last = new int[b];
        Arrays.fill(last, len - 1);
        reached("prefill", "retain hidden");
        return seal(retain(s, taps(ctx, len, last)));
    }

    @Override
    public final int[][] draft(int[] pending, int depth, long[] steps, DraftSampling sampling) {
        return draftRound(pending, depth, steps, sampling, this::draftChain);
    }

    /**
     * {@link #draft} through another chain: a backend's variant (the reference's, which lets a chooser replace
     * tokens) gets the same checks, bookkeeping and atomicity.
     */
    protected final int[][] draftRound(int[] pending, int depth, long[] steps, DraftSampling sampling,
                                       DraftChain<S> chain) {
        enter("draft");
        try {
            RowContract.checkNoOpenRound("draft", roundOpen);
            RowContract.checkHasRows("draft", rows);
            int b = rows;
            RowContract.draftArguments(pending, depth, steps, sampling, b, vocab);
            for (int r = 0; r < b; r++) {
                if (!warm[r]) {
                    throw MtpException.illegalState("draft: row " + r + " has no retained hidden (a cold row must be "
                            + "prefilled first, spec §5.7)");
                }
            }
            int[] added = new int[b];
            Arrays.fill(added, Math.max(1, depth) + (depth > 0 ? 1 : 0)); // the round, and commit's full acceptance
            RowContract.positions("draft", lengths, added, model.config(), "a round of depth " + depth
                    + " and its commit");
            RowContract.forwardSize("draft", b, 1, model, true, "draft fewer rows at a time");
            int[] from = lengths;
            int[] ids = pending.clone();
            long[] at = steps.clone();
            Drafted<S> d = onBackend("draft", () -> {
                if (depth == 0) {
                    // the pending row only; no logits, no sampling (spec §5.7, §11.2)
                    reached("draft", "pending forward");
                    return new Drafted<>(new int[b][0], seal(forward(storage, from.clone(), null, ids, null, 1)));
                }
                Drafted<S> round = chain.draft(storage, from.clone(), ids, depth, at, sampling);
                return new Drafted<>(round.tokens(), seal(round.state()));
            });
            int[][] proposals = proposals(d.tokens(), b, depth);
            int[] after = new int[b];
            for (int r = 0; r < b; r++) {
                after[r] = from[r] + Math.max(1, depth);
            }
            reached("draft", "publish");
            S old = storage;
            storage = d.state();
            beforeRound = from;
            lengths = after;
            drafts = proposals;
            this.depth = depth;
            roundOpen = true;
            discarded(old);
            return copy(proposals);
        } finally {
            exit();
        }
    }

    @Override
    public final void commit(int[] accepted, HostTensor context) {
        enter("commit");
        try {
            RowContract.checkRoundOpen("commit", roundOpen);
            int b = rows;
            int d = depth;
            RowContract.accepted(accepted, b, d);
            int width = d + 1;
            context = snapshot(context); // checked and used from one copy, as in prefill
            RowContract.context("commit", context, b, width, hiddenSize, "width = depth + 1 = " + width
                    + " verify taps");
            float[] ctx = context.toFloatArray(); // [B, depth+1, H]
            int[] acc = accepted.clone();
            // 1. keep the pending row plus the rows of accepted proposals; full acceptance adds the last proposal's
            int[] kept = new int[b];
            boolean[] full = new boolean[b];
            int[] after = new int[b];
            for (int r = 0; r < b; r++) {
                kept[r] = beforeRound[r] + Math.min(acc[r] + 1, Math.max(1, d));
                full[r] = d > 0 && acc[r] == d;
                after[r] = kept[r] + (full[r] ? 1 : 0);
            }
            S next = onBackend("commit", () -> commitSteps(acc, ctx, kept, full));
            reached("commit", "publish");
            S old = storage;
            storage = next;
            lengths = after;
            beforeRound = null;
            drafts = null;
            depth = 0;
            roundOpen = false;
            discarded(old);
        } finally {
            exit();
        }
    }

    /** Commit's computation (spec §5.8) from the kept lengths. */
    private S commitSteps(int[] accepted, float[] ctx, int[] kept, boolean[] full) {
        int b = kept.length;
        int h = hiddenSize;
        int d = depth;
        int width = d + 1;
        S s = storage;
        // 2. full acceptance: build the last proposal's row from the true hidden preceding it
        if (any(full)) {
            int[] ids = new int[b];
            int[] before = new int[b];
            for (int r = 0; r < b; r++) {
                ids[r] = drafts[r][d - 1];
                before[r] = d - 1;
            }
            reached("commit", "full-acceptance forward");
            s = forward(s, kept.clone(), full, ids, taps(ctx, width, before), 1);
        }
        // 3. the true hidden at the last processed position
        reached("commit", "retain hidden");
        return seal(retain(s, taps(ctx, width, accepted)));
    }

    @Override
    public final RowCheckpoint capture(int row) {
        enter("capture");
        try {
            RowContract.checkNoOpenRound("capture", roundOpen);
            RowContract.row("capture", row, rows);
            if (!warm[row]) {
                throw MtpException.illegalState("capture: row " + row + " has consumed no target token yet (a cold "
                        + "row must be prefilled first, spec §11.1)");
            }
            int kept = lengths[row];
            RowTensors t = onBackend("capture", () -> export(storage, row, kept));
            return RowCheckpoint.sealed(RowCheckpoint.SCHEMA, kept + 1, kept, model.identity(), t.keys(), t.values(),
                    t.hidden());
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
            lengths = new int[0];
            warm = new boolean[0];
            roundOpen = false;
            beforeRound = null;
            drafts = null;
            release(s);
        } finally {
            callLock.unlock();
        }
    }

    /**
     * A private copy of a caller's tensor, so that what is validated is what is computed on: a buffer another thread
     * changes during the call cannot put an unchecked value (a NaN) into the group (spec §11.1). Null stays null.
     */
    private static HostTensor snapshot(HostTensor t) {
        boolean copyable = t != null && t.data().scope().isAlive() && t.data().isAccessibleBy(Thread.currentThread())
                && t.byteSize() <= Integer.MAX_VALUE - 8;
        return copyable ? t.copy() : t; // what cannot be copied is refused by the checks that follow
    }

    // ---- plumbing --------------------------------------------------------------------------------------------

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
                throw MtpException.illegalState(call + ": the model this group was opened from is closed; a group "
                        + "cannot outlive its model (spec §11.11)");
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

    /** After a publish: frees what the old storage held; a failure here means the device cannot be trusted. */
    private void discarded(S old) {
        if (old == storage) {
            return;
        }
        boolean done = false;
        try {
            discard(old, storage);
            done = true;
        } finally {
            if (!done) {
                poison("freeing superseded storage failed");
            }
        }
    }

    /** The backend's proposals checked as {@code [B][depth]} ids in {@code [0, V)} and copied. */
    private int[][] proposals(int[][] tokens, int b, int depth) {
        if (tokens == null || tokens.length != b) {
            throw new MtpException(MtpException.Kind.BACKEND_FAILURE, "draft: the backend returned "
                    + (tokens == null ? "no proposals" : tokens.length + " rows of proposals") + ", expected " + b);
        }
        int[][] out = new int[b][];
        for (int r = 0; r < b; r++) {
            if (tokens[r] == null || tokens[r].length != depth) {
                throw new MtpException(MtpException.Kind.BACKEND_FAILURE, "draft: the backend returned row " + r
                        + " with " + (tokens[r] == null ? "no" : tokens[r].length) + " proposals, expected " + depth);
            }
            for (int t = 0; t < depth; t++) {
                if (tokens[r][t] < 0 || tokens[r][t] >= vocab) {
                    throw new MtpException(MtpException.Kind.BACKEND_FAILURE, "draft: the backend proposed token "
                            + tokens[r][t] + " for row " + r + " position " + t + ", outside [0, " + vocab + ")");
                }
            }
            out[r] = tokens[r].clone();
        }
        return out;
    }

    /** {@code ctx[b, pick[b]]} of a {@code [B, width, H]} tap array, as {@code [B, H]}. */
    private float[] taps(float[] ctx, int width, int[] pick) {
        int h = hiddenSize;
        float[] out = new float[pick.length * h];
        for (int r = 0; r < pick.length; r++) {
            System.arraycopy(ctx, (r * width + pick[r]) * h, out, r * h, h);
        }
        return out;
    }

    private static boolean any(boolean[] flags) {
        for (boolean f : flags) {
            if (f) {
                return true;
            }
        }
        return false;
    }

    private static int[][] copy(int[][] a) {
        int[][] out = new int[a.length][];
        for (int r = 0; r < a.length; r++) {
            out[r] = a[r].clone();
        }
        return out;
    }
}
