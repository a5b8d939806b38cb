package org.mtporacle.mlx;

import org.mtporacle.api.DType;
import org.mtporacle.api.DraftRows;
import org.mtporacle.api.DraftSampling;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MtpConfig;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.RowCheckpoint;
import org.mtporacle.api.RowContract;
import org.mtporacle.mlx.handle.MlxArray;
import org.mtporacle.mlx.handle.MlxOps;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The MLX row group (spec §5): one batched KV cache {@code [B, nKV, capacity, D]} with per-row logical lengths (row
 * {@code b} valid in columns {@code [0, length_b)}; rollback only lowers a length, later appends overwrite the stale
 * columns), the retained hiddens {@code [B, 1, H]}, and the open round's drafts. Every call runs the shared
 * {@link RowContract} checks in the reference's order, then computes new device arrays and publishes them only after
 * they evaluated, so a failed call leaves every row unchanged; a native failure also poisons the group.
 */
final class MlxDraftRows implements DraftRows {
    /** Prefill forwards at most this many positions at once (spec §5.4). */
    static final int PREFILL_CHUNK = 2048;
    /** Cache capacity grows in steps of this many positions (spec §4.2). */
    static final int CAPACITY_STEP = 256;

    private static final int[][] NONE = new int[0][];

    private final MlxDraftModel model;
    private final MtpConfig c;
    private int rows;
    private MlxArray keys;     // [B, nKV, capacity, D] or null
    private MlxArray values;   // [B, nKV, capacity, D] or null
    private int capacity;
    private int[] lengths = new int[0];
    private MlxArray hidden;   // [B, 1, H] (zeros for cold rows) or null when B == 0
    private boolean[] prefilled = new boolean[0];
    private int[][] drafts = NONE;
    private int[] beforeRound = new int[0];
    private boolean roundOpen;
    private int depth;
    private boolean closed;
    private String poisonedBy;
    private int draftHostReads;

    MlxDraftRows(MlxDraftModel model) {
        this.model = model;
        this.c = model.model().config();
    }

    @Override
    public int rowCount() {
        return rows;
    }

    @Override
    public void append(List<RowCheckpoint> checkpoints) {
        RowContract.checkUsable("append", closed, poisonedBy);
        RowContract.checkNoOpenRound("append", roundOpen);
        RowContract.checkpoints("append", checkpoints, model.model());
        if (checkpoints.isEmpty()) {
            return;
        }
        int n = checkpoints.size();
        int nKv = c.numKvHeads();
        int d = c.headDim();
        int hSize = c.hiddenSize();
        int newRows = rows + n;
        int[] newLengths = Arrays.copyOf(lengths, newRows);
        boolean[] newPrefilled = Arrays.copyOf(prefilled, newRows);
        int needed = 0;
        for (int i = 0; i < n; i++) {
            RowCheckpoint cp = checkpoints.get(i);
            newLengths[rows + i] = cp == null ? 0 : cp.processedTokens() - 1;
            newPrefilled[rows + i] = cp != null;
            needed = Math.max(needed, newLengths[rows + i]);
        }
        int newCapacity = Math.max(capacity, roundUp(needed));
        device("append", ops -> {
            int dt = model.dtype();
            MlxArray k = null;
            MlxArray v = null;
            if (newCapacity > 0) {
                k = ops.zeros(dt, newRows, nKv, newCapacity, d);
                v = ops.zeros(dt, newRows, nKv, newCapacity, d);
                if (keys != null) {
                    int[] start = {0, 0, 0, 0};
                    int[] stop = {rows, nKv, capacity, d};
                    k = ops.sliceUpdate(k, keys, start, stop);
                    v = ops.sliceUpdate(v, values, start, stop);
                }
            }
            MlxArray h = ops.zeros(dt, newRows, 1, hSize);
            if (hidden != null) {
                h = ops.sliceUpdate(h, hidden, new int[] {0, 0, 0}, new int[] {rows, 1, hSize});
            }
            for (int i = 0; i < n; i++) {
                RowCheckpoint cp = checkpoints.get(i);
                if (cp == null) {
                    continue;
                }
                int r = rows + i;
                int len = newLengths[r];
                if (len > 0) {
                    int[] start = {r, 0, 0, 0};
                    int[] stop = {r + 1, nKv, len, d};
                    k = ops.sliceUpdate(k, model.upload(ops, cp.keys()), start, stop);
                    v = ops.sliceUpdate(v, model.upload(ops, cp.values()), start, stop);
                }
                h = ops.sliceUpdate(h, model.upload(ops, cp.hidden()), new int[] {r, 0, 0},
                        new int[] {r + 1, 1, hSize});
            }
            publish(ops, k, v, h, true);
        });
        rows = newRows;
        lengths = newLengths;
        prefilled = newPrefilled;
    }

    @Override
    public void filterRows(int[] keep) {
        RowContract.checkUsable("filterRows", closed, poisonedBy);
        RowContract.checkNoOpenRound("filterRows", roundOpen);
        RowContract.keep(keep, rows);
        int[] newLengths = new int[keep.length];
        boolean[] newPrefilled = new boolean[keep.length];
        int longest = 0;
        for (int i = 0; i < keep.length; i++) {
            newLengths[i] = lengths[keep[i]];
            newPrefilled[i] = prefilled[keep[i]];
            longest = Math.max(longest, newLengths[i]);
        }
        // The survivors keep only the capacity their own rows need: columns past every kept row's length are never
        // read again (attention slices to the longest row), so a long row that leaves takes its memory with it.
        int kept = Math.min(capacity, roundUp(longest));
        device("filterRows", ops -> {
            if (keep.length == 0) {
                publish(ops, null, null, null, true);
                return;
            }
            MlxArray idx = ops.fromInts(keep.clone(), keep.length);
            MlxArray k = null;
            MlxArray v = null;
            if (keys != null && kept > 0) {
                int[] start = {0, 0, 0, 0};
                int[] stop = {rows, c.numKvHeads(), kept, c.headDim()};
                // gather from the narrowed view, so the result is a new buffer of the smaller size
                k = ops.take(kept < capacity ? ops.slice(keys, start, stop) : keys, idx, 0);
                v = ops.take(kept < capacity ? ops.slice(values, start, stop) : values, idx, 0);
            }
            publish(ops, k, v, ops.take(hidden, idx, 0), true);
        });
        rows = keep.length;
        lengths = newLengths;
        prefilled = newPrefilled;
    }

    @Override
    public void prefill(HostTensor tokens, HostTensor context) {
        RowContract.checkUsable("prefill", closed, poisonedBy);
        RowContract.checkNoOpenRound("prefill", roundOpen);
        RowContract.checkHasRows("prefill", rows);
        int b = rows;
        int[][] ids = RowContract.tokens("prefill", tokens, b, model.vocabSize());
        int len = ids[0].length;
        int hSize = c.hiddenSize();
        RowContract.context("prefill", context, b, len, hSize, "the taps at the same L positions as tokens");
        float[] ctx = context.toFloatArray(); // [B, L, H]
        boolean anyPrefilled = false;
        for (boolean p : prefilled) {
            anyPrefilled |= p;
        }
        boolean bridge = anyPrefilled;
        int[] after = lengths.clone();
        device("prefill", ops -> {
            MlxBlock.Kv kv = new MlxBlock.Kv(keys, values, lengths.clone());
            int appended = (bridge ? 1 : 0) + len - 1;
            kv = ensureCapacity(ops, kv, appended);
            // 1. bridge: every row pairs tokens[b, 0] with its retained hidden; cold rows keep nothing
            if (bridge) {
                int[] first = new int[b];
                for (int r = 0; r < b; r++) {
                    first[r] = ids[r][0];
                }
                MlxBlock.Step step = model.block().forward(ops, ops.fromInts(first, b, 1), hidden, kv);
                int[] kept = kv.lengths().clone();
                for (int r = 0; r < b; r++) {
                    kept[r] += prefilled[r] ? 1 : 0;
                }
                kv = new MlxBlock.Kv(step.kv().keys(), step.kv().values(), kept);
            }
            // 2. shifted chunks: token p+1 pairs with hidden p
            for (int pos = 0; pos + 1 < len; pos += PREFILL_CHUNK) {
                int end = Math.min(pos + PREFILL_CHUNK, len - 1);
                int s = end - pos;
                int[] chunkIds = new int[b * s];
                float[] hin = new float[b * s * hSize];
                for (int r = 0; r < b; r++) {
                    System.arraycopy(ids[r], pos + 1, chunkIds, r * s, s);
                    System.arraycopy(ctx, (r * len + pos) * hSize, hin, r * s * hSize, s * hSize);
                }
                MlxBlock.Step step = model.block().forward(ops, ops.fromInts(chunkIds, b, s),
                        model.uploadFloats(ops, hin, b, s, hSize), kv);
                kv = step.kv();
            }
            // 3. retain the last tap
            float[] last = new float[b * hSize];
            for (int r = 0; r < b; r++) {
                System.arraycopy(ctx, (r * len + len - 1) * hSize, last, r * hSize, hSize);
            }
            publish(ops, kv.keys(), kv.values(), model.uploadFloats(ops, last, b, 1, hSize), true);
            System.arraycopy(kv.lengths(), 0, after, 0, b);
        });
        lengths = after;
        Arrays.fill(prefilled, true);
    }

    @Override
    public int[][] draft(int[] pending, int depth, long[] steps, DraftSampling sampling) {
        RowContract.checkUsable("draft", closed, poisonedBy);
        RowContract.checkNoOpenRound("draft", roundOpen);
        RowContract.checkHasRows("draft", rows);
        int b = rows;
        int vocab = model.vocabSize();
        RowContract.draftArguments(pending, depth, steps, sampling, b, vocab);
        for (int r = 0; r < b; r++) {
            if (!prefilled[r]) {
                throw MtpException.illegalState("draft: row " + r + " has no retained hidden (a cold row must be "
                        + "prefilled first, spec §5.7)");
            }
        }
        int[][] out = new int[b][depth];
        int[] after = lengths.clone();
        int[] reads = new int[1];
        device("draft", ops -> {
            MlxBlock.Kv kv = ensureCapacity(ops, new MlxBlock.Kv(keys, values, lengths.clone()), Math.max(1, depth));
            MlxArray ids = ops.fromInts(pending.clone(), b, 1);
            MlxArray hin = hidden;
            if (depth == 0) {
                // the pending row only; no logits, no sampling (spec §5.7, §11.2)
                kv = model.block().forward(ops, ids, hin, kv).kv();
            } else {
                // every draw stays on the device and feeds the next position; the round's keys go up once
                MlxDraftSampler sampler = MlxDraftSampler.forRound(ops, sampling, steps, depth, vocab);
                List<MlxArray> chain = new ArrayList<>();
                for (int t = 0; t < depth; t++) {
                    MlxBlock.Step step = model.block().forward(ops, ids, hin, kv);
                    kv = step.kv();
                    MlxArray tok = sampler.draw(ops, model.block().logProbs(ops, step.y()), t); // [B]
                    chain.add(tok);
                    ids = ops.reshape(tok, b, 1);
                    hin = step.y();
                }
                int[] packed = ops.toInts(ops.stack(chain)); // [depth, B], the round's one host read
                for (int t = 0; t < depth; t++) {
                    for (int r = 0; r < b; r++) {
                        out[r][t] = packed[t * b + r];
                    }
                }
            }
            publish(ops, kv.keys(), kv.values(), null, false);
            System.arraycopy(kv.lengths(), 0, after, 0, b);
            reads[0] = ops.hostReads();
        });
        draftHostReads = reads[0];
        beforeRound = lengths;
        lengths = after;
        drafts = new int[b][];
        for (int r = 0; r < b; r++) {
            drafts[r] = out[r].clone();
        }
        this.depth = depth;
        this.roundOpen = true;
        return out;
    }

    @Override
    public void commit(int[] accepted, HostTensor context) {
        RowContract.checkUsable("commit", closed, poisonedBy);
        RowContract.checkRoundOpen("commit", roundOpen);
        int b = rows;
        RowContract.accepted(accepted, b, depth);
        int hSize = c.hiddenSize();
        int width = depth + 1;
        RowContract.context("commit", context, b, width, hSize, "width = depth + 1 = " + width + " verify taps");
        float[] ctx = context.toFloatArray(); // [B, depth+1, H]
        int appended = Math.max(1, depth);
        int[] kept = new int[b];
        boolean anyFull = false;
        for (int r = 0; r < b; r++) {
            kept[r] = beforeRound[r] + Math.min(accepted[r] + 1, appended);
            anyFull |= depth > 0 && accepted[r] == depth;
        }
        boolean full = anyFull;
        int[] after = kept.clone();
        device("commit", ops -> {
            MlxBlock.Kv kv = new MlxBlock.Kv(keys, values, kept.clone());
            // 2. full acceptance: build the last proposal's row from the true hidden preceding it; the other rows'
            //    temporary writes land past their lengths and stay invisible
            if (full) {
                kv = ensureCapacity(ops, kv, 1);
                int[] ids = new int[b];
                float[] hin = new float[b * hSize];
                for (int r = 0; r < b; r++) {
                    ids[r] = drafts[r][depth - 1];
                    System.arraycopy(ctx, (r * width + depth - 1) * hSize, hin, r * hSize, hSize);
                }
                MlxBlock.Step step = model.block().forward(ops, ops.fromInts(ids, b, 1),
                        model.uploadFloats(ops, hin, b, 1, hSize), kv);
                kv = step.kv();
                for (int r = 0; r < b; r++) {
                    after[r] = kept[r] + (accepted[r] == depth ? 1 : 0);
                }
            }
            // 3. retain the true hidden at the last processed position
            float[] last = new float[b * hSize];
            for (int r = 0; r < b; r++) {
                System.arraycopy(ctx, (r * width + accepted[r]) * hSize, last, r * hSize, hSize);
            }
            publish(ops, kv.keys(), kv.values(), model.uploadFloats(ops, last, b, 1, hSize), true);
        });
        lengths = after;
        drafts = NONE;
        roundOpen = false;
        depth = 0;
    }

    @Override
    public RowCheckpoint capture(int row) {
        RowContract.checkUsable("capture", closed, poisonedBy);
        RowContract.checkNoOpenRound("capture", roundOpen);
        RowContract.row("capture", row, rows);
        if (!prefilled[row]) {
            throw MtpException.illegalState("capture: row " + row + " has consumed no target token yet (a cold row "
                    + "must be prefilled first, spec §11.1)");
        }
        int kept = lengths[row];
        int nKv = c.numKvHeads();
        int d = c.headDim();
        DType dtype = model.checkpointDType();
        HostTensor[] out = new HostTensor[3];
        device("capture", ops -> {
            if (kept > 0) {
                int[] start = {row, 0, 0, 0};
                int[] stop = {row + 1, nKv, kept, d};
                out[0] = ops.toHost(ops.slice(keys, start, stop), dtype);
                out[1] = ops.toHost(ops.slice(values, start, stop), dtype);
            }
            out[2] = ops.toHost(ops.slice(hidden, new int[] {row, 0, 0}, new int[] {row + 1, 1, c.hiddenSize()}),
                    dtype);
        });
        return new RowCheckpoint(RowCheckpoint.SCHEMA, kept + 1, kept, model.model().identity(), out[0], out[1],
                out[2]);
    }

    /** How many arrays the last {@link #draft} round copied to the host: 1 when it drafted, 0 at depth 0 (for tests). */
    int draftHostReads() {
        return draftHostReads;
    }

    /** The drafter positions each row holds (for tests). */
    int[] drafterLengths() {
        return lengths.clone();
    }

    @Override
    public boolean isClosed() {
        return closed;
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        roundOpen = false;
        try {
            model.library().thread().run(() -> {
                freeState();
            });
        } finally {
            rows = 0;
            lengths = new int[0];
            prefilled = new boolean[0];
        }
    }

    // ---- device plumbing

    /** Native work of one call on the MLX thread; a native failure poisons the group (spec §9.2). */
    void device(String call, java.util.function.Consumer<MlxOps> work) {
        try {
            model.run(work);
        } catch (MtpException e) {
            if (e.kind() == MtpException.Kind.BACKEND_FAILURE) {
                poisonedBy = call + ": " + e.getMessage();
            }
            throw e;
        } catch (RuntimeException e) {
            poisonedBy = call + ": " + e;
            throw new MtpException(MtpException.Kind.BACKEND_FAILURE, call + ": MLX work failed: " + e, e);
        }
    }

    /**
     * Evaluates the new state, takes it out of the call's scope, frees the superseded arrays and installs it. The
     * retained hiddens are replaced only when {@code setHidden}.
     */
    private void publish(MlxOps ops, MlxArray k, MlxArray v, MlxArray h, boolean setHidden) {
        for (MlxArray a : new MlxArray[] {k, v, setHidden ? h : null}) {
            if (a != null) {
                ops.eval(a);
            }
        }
        MlxArray[] old = {keys, values, hidden};
        keys = k == null ? null : ops.scope().release(k);
        values = v == null ? null : ops.scope().release(v);
        capacity = k == null ? 0 : k.dim(2);
        if (setHidden) {
            hidden = h == null ? null : ops.scope().release(h);
        }
        for (MlxArray a : old) {
            if (a != null && a != keys && a != values && a != hidden) {
                a.close();
            }
        }
    }

    private void freeState() {
        for (MlxArray a : new MlxArray[] {keys, values, hidden}) {
            if (a != null) {
                a.close();
            }
        }
        keys = null;
        values = null;
        hidden = null;
        capacity = 0;
    }

    private static int roundUp(int n) {
        return (n + CAPACITY_STEP - 1) / CAPACITY_STEP * CAPACITY_STEP;
    }

    /** Positions the KV cache has room for (0 with no cache); for tests. */
    int capacity() {
        return capacity;
    }

    private int kvCapacity(MlxBlock.Kv kv) {
        return kv.keys() == null ? 0 : kv.keys().dim(2);
    }

    /** {@code kv} with room for {@code extra} more positions in every row (zero columns appended, spec §4.2). */
    private MlxBlock.Kv ensureCapacity(MlxOps ops, MlxBlock.Kv kv, int extra) {
        int needed = 0;
        for (int len : kv.lengths()) {
            needed = Math.max(needed, len + extra);
        }
        int cap = kvCapacity(kv);
        if (needed <= cap) {
            return kv;
        }
        int grown = roundUp(needed);
        int dt = model.dtype();
        int[] shape = {rows, c.numKvHeads(), grown - cap, c.headDim()};
        MlxArray k = kv.keys() == null ? ops.zeros(dt, rows, c.numKvHeads(), grown, c.headDim())
                : ops.concatenate(List.of(kv.keys(), ops.zeros(dt, shape)), 2);
        MlxArray v = kv.values() == null ? ops.zeros(dt, rows, c.numKvHeads(), grown, c.headDim())
                : ops.concatenate(List.of(kv.values(), ops.zeros(dt, shape)), 2);
        return new MlxBlock.Kv(k, v, kv.lengths());
    }
}
