package org.mtporacle.mlx;

import org.mtporacle.api.AbstractDraftRows;
import org.mtporacle.api.DType;
import org.mtporacle.api.DraftSampling;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MtpConfig;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.RouterChoices;
import org.mtporacle.api.RowCheckpoint;
import org.mtporacle.mlx.handle.MlxArray;
import org.mtporacle.mlx.handle.MlxOps;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * The MLX row group (spec §5) on the shared {@link AbstractDraftRows} skeleton, which owns the checks, the round's
 * bookkeeping and the publish. The rows live on the device as one batched KV cache {@code [B, nKV, capacity, D]}
 * whose row {@code b} is valid in columns {@code [0, length_b)} (the skeleton's committed lengths; later appends
 * overwrite stale columns) and the retained hiddens {@code [B, 1, H]}. Every call computes new device arrays, which
 * are evaluated before the skeleton publishes them; a native failure also poisons the group.
 */
final class MlxDraftRows extends AbstractDraftRows<MlxDraftRows.DeviceRows> implements RouterChoices {
    /** Cache capacity grows in steps of this many positions (spec §4.2). */
    static final int CAPACITY_STEP = 256;

    private final MlxDraftModel model;
    private final MtpConfig c;
    private MlxOps ops; // the running call's device context, set only inside onBackend on the MLX thread
    /** The MoE router choices of the last computing call (spec §12.5), read when its work is done. */
    private final List<RouterChoices.Choice> routed = new ArrayList<>();
    /** This call's MoE forwards whose choices are not read yet. */
    private final List<PendingRoute> pendingRoutes = new ArrayList<>();
    private int draftHostReads;

    /**
     * All rows on the device.
     *
     * @param rows   B
     * @param keys   [B, nKV, capacity, D], null before any row holds a position
     * @param values [B, nKV, capacity, D], null with keys
     * @param hidden [B, 1, H] the retained hiddens (zeros for cold rows), null when B = 0
     */
    record DeviceRows(int rows, MlxArray keys, MlxArray values, MlxArray hidden) {
        int capacity() {
            return keys == null ? 0 : keys.dim(2);
        }
    }

    MlxDraftRows(MlxDraftModel model) {
        super(model.model(), new DeviceRows(0, null, null, null));
        this.model = model;
        this.c = model.model().config();
    }

    @Override
    protected boolean modelClosed() {
        return model.isClosed();
    }

    @Override
    protected DeviceRows appendRows(DeviceRows s, List<RowCheckpoint> checkpoints) {
        int b = s.rows();
        int n = checkpoints.size();
        int nKv = c.numKvHeads();
        int d = c.headDim();
        int h = c.hiddenSize();
        int needed = 0;
        for (RowCheckpoint cp : checkpoints) {
            needed = Math.max(needed, cp == null ? 0 : cp.processedTokens() - 1);
        }
        int capacity = Math.max(s.capacity(), roundUp(needed));
        int dt = model.dtype();
        MlxArray k = null;
        MlxArray v = null;
        if (capacity > 0) {
            k = ops.zeros(dt, b + n, nKv, capacity, d);
            v = ops.zeros(dt, b + n, nKv, capacity, d);
            if (s.keys() != null) {
                int[] start = {0, 0, 0, 0};
                int[] stop = {b, nKv, s.capacity(), d};
                k = ops.sliceUpdate(k, s.keys(), start, stop);
                v = ops.sliceUpdate(v, s.values(), start, stop);
            }
        }
        MlxArray hid = ops.zeros(dt, b + n, 1, h);
        if (s.hidden() != null) {
            hid = ops.sliceUpdate(hid, s.hidden(), new int[] {0, 0, 0}, new int[] {b, 1, h});
        }
        for (int i = 0; i < n; i++) {
            RowCheckpoint cp = checkpoints.get(i);
            if (cp == null) {
                continue;
            }
            int r = b + i;
            int len = cp.processedTokens() - 1;
            if (len > 0) {
                int[] start = {r, 0, 0, 0};
                int[] stop = {r + 1, nKv, len, d};
                k = ops.sliceUpdate(k, model.upload(ops, cp.keys()), start, stop);
                v = ops.sliceUpdate(v, model.upload(ops, cp.values()), start, stop);
            }
            hid = ops.sliceUpdate(hid, model.upload(ops, cp.hidden()), new int[] {r, 0, 0}, new int[] {r + 1, 1, h});
        }
        return new DeviceRows(b + n, k, v, hid);
    }

    @Override
    protected DeviceRows keepRows(DeviceRows s, int[] keep, int[] lengths) {
        if (keep.length == 0) {
            return new DeviceRows(0, null, null, null);
        }
        int longest = 0;
        for (int len : lengths) {
            longest = Math.max(longest, len);
        }
        // The survivors keep only the capacity their own rows need: columns past every kept row's length are never
        // read again (attention slices to the longest row), so a long row that leaves takes its memory with it.
        int kept = Math.min(s.capacity(), roundUp(longest));
        MlxArray idx = ops.fromInts(keep.clone(), keep.length);
        MlxArray k = null;
        MlxArray v = null;
        if (s.keys() != null && kept > 0) {
            int[] start = {0, 0, 0, 0};
            int[] stop = {s.rows(), c.numKvHeads(), kept, c.headDim()};
            // gather from the narrowed view, so the result is a new buffer of the smaller size
            k = ops.take(kept < s.capacity() ? ops.slice(s.keys(), start, stop) : s.keys(), idx, 0);
            v = ops.take(kept < s.capacity() ? ops.slice(s.values(), start, stop) : s.values(), idx, 0);
        }
        return new DeviceRows(keep.length, k, v, ops.take(s.hidden(), idx, 0));
    }

    /** Every row is computed; a row {@code rows} leaves out writes past its length, where nothing reads. */
    @Override
    protected DeviceRows forward(DeviceRows s, int[] at, boolean[] rows, int[] ids, float[] hin, int n) {
        int b = s.rows();
        MlxBlock.Kv kv = ensureCapacity(new MlxBlock.Kv(s.keys(), s.values(), at), n);
        MlxArray h = hin == null ? s.hidden() : ops.fromFloatsAs(hin, model.dtype(), b, n, c.hiddenSize());
        MlxBlock.Step step = model.block().forward(ops, ops.fromInts(ids, b, n), h, kv);
        route(step, at, rows, n, 0);
        return new DeviceRows(b, step.kv().keys(), step.kv().values(), s.hidden());
    }

    @Override
    protected DeviceRows retain(DeviceRows s, float[] hidden) {
        return new DeviceRows(s.rows(), s.keys(), s.values(),
                ops.fromFloatsAs(hidden, model.dtype(), s.rows(), 1, c.hiddenSize()));
    }

    /** Every draw stays on the device and feeds the next position; the round's keys go up once, tokens come back once. */
    @Override
    protected Drafted<DeviceRows> draftChain(DeviceRows s, int[] at, int[] pending, int depth, long[] steps,
                                             DraftSampling sampling) {
        int b = s.rows();
        MlxBlock.Kv kv = ensureCapacity(new MlxBlock.Kv(s.keys(), s.values(), at), depth);
        MlxDraftSampler sampler = MlxDraftSampler.forRound(ops, sampling, steps, depth, model.vocabSize());
        MlxArray ids = ops.fromInts(pending, b, 1);
        MlxArray hin = s.hidden();
        List<MlxArray> chain = new ArrayList<>();
        for (int t = 0; t < depth; t++) {
            MlxBlock.Step step = model.block().forward(ops, ids, hin, kv);
            route(step, at, null, 1, t);
            kv = step.kv();
            MlxArray tok = sampler.draw(ops, model.block().logProbs(ops, step.y()), t); // [B]
            chain.add(tok);
            ids = ops.reshape(tok, b, 1);
            hin = step.y();
        }
        int[] packed = ops.toInts(ops.stack(chain)); // [depth, B], the round's one host read
        int[][] out = new int[b][depth];
        for (int t = 0; t < depth; t++) {
            for (int r = 0; r < b; r++) {
                out[r][t] = packed[t * b + r];
            }
        }
        return new Drafted<>(out, new DeviceRows(b, kv.keys(), kv.values(), s.hidden()));
    }

    @Override
    protected RowTensors export(DeviceRows s, int row, int kept) {
        int nKv = c.numKvHeads();
        int d = c.headDim();
        DType dtype = model.checkpointDType();
        HostTensor keys = null;
        HostTensor values = null;
        if (kept > 0) {
            int[] start = {row, 0, 0, 0};
            int[] stop = {row + 1, nKv, kept, d};
            keys = ops.toHost(ops.slice(s.keys(), start, stop), dtype);
            values = ops.toHost(ops.slice(s.values(), start, stop), dtype);
        }
        HostTensor hidden = ops.toHost(ops.slice(s.hidden(), new int[] {row, 0, 0},
                new int[] {row + 1, 1, c.hiddenSize()}), dtype);
        return new RowTensors(keys, values, hidden);
    }

    @Override
    public List<RouterChoices.Choice> lastRouterChoices() {
        return List.copyOf(routed);
    }

    /**
     * Notes a MoE forward's choices of the computed rows at positions {@code at[r] + offset + t}; they are read when
     * the call's work is done ({@link #resolveRoutes}), so a forward whose experts stay on the device costs no sync.
     */
    private void route(MlxBlock.Step step, int[] at, boolean[] rows, int n, int offset) {
        if (step.experts() != null) {
            pendingRoutes.add(new PendingRoute(step.experts(), at.clone(), rows == null ? null : rows.clone(), n,
                    offset));
        }
    }

    private record PendingRoute(MlxMoe.Choices choices, int[] at, boolean[] rows, int n, int offset) {
    }

    /** Reads the call's pending router choices (one host read for those still on the device) and records them. */
    private void resolveRoutes() {
        if (pendingRoutes.isEmpty()) {
            return;
        }
        MlxMoe.Choices.resolveAll(ops, pendingRoutes.stream().map(PendingRoute::choices).toList());
        for (PendingRoute p : pendingRoutes) {
            record(p.choices().experts(), p.at(), p.rows(), p.n(), p.offset());
        }
        pendingRoutes.clear();
    }

    private void record(int[][] experts, int[] at, boolean[] rows, int n, int offset) {
        for (int r = 0; r < at.length; r++) {
            if (rows != null && !rows[r]) {
                continue;
            }
            for (int t = 0; t < n; t++) {
                int row = r;
                int position = at[r] + offset + t;
                routed.removeIf(x -> x.row() == row && x.position() == position);
                routed.add(new RouterChoices.Choice(row, position, experts[r * n + t]));
            }
        }
    }

    // ---- device plumbing

    /** Native work of one call on the MLX thread in a fresh scope; a native failure poisons the group (spec §9.2). */
    @Override
    protected <T> T onBackend(String call, Supplier<T> work) {
        routed.clear();
        pendingRoutes.clear();
        try {
            return model.call(o -> {
                ops = o;
                try {
                    T out = work.get();
                    resolveRoutes();
                    if (call.equals("draft")) {
                        draftHostReads = o.hostReads();
                    }
                    return out;
                } finally {
                    pendingRoutes.clear();
                    ops = null;
                }
            });
        } catch (MtpException e) {
            if (e.kind() == MtpException.Kind.BACKEND_FAILURE) {
                poison(call + ": " + e.getMessage());
            }
            throw e;
        } catch (RuntimeException e) {
            poison(call + ": " + e);
            throw new MtpException(MtpException.Kind.BACKEND_FAILURE, call + ": MLX work failed: " + e, e);
        }
    }

    /** {@link #onBackend} for arbitrary work (tests use it to make a native call fail inside a call). */
    void device(String call, Consumer<MlxOps> work) {
        onBackend(call, () -> {
            work.accept(ops);
            return null;
        });
    }

    /** Evaluates the new arrays and takes them out of the call's scope. */
    @Override
    protected DeviceRows seal(DeviceRows next) {
        // a draft round's host read has already run the graph its cache belongs to, and uploads are ready: evaluate
        // only what is not, as even a finished evaluation waits on the device
        ops.evalAll(arrays(next).stream().filter(a -> a != null && !ops.isAvailable(a)).toList());
        for (MlxArray a : arrays(next)) {
            if (a != null) {
                ops.scope().release(a);
            }
        }
        return next;
    }

    /** Frees the arrays the published rows no longer use, queued on the MLX thread (the caller does not wait). */
    @Override
    protected void discard(DeviceRows superseded, DeviceRows current) {
        List<MlxArray> now = List.of(arrays(current).stream().filter(a -> a != null).toArray(MlxArray[]::new));
        model.library().thread().post(() -> {
            for (MlxArray a : arrays(superseded)) {
                if (a != null && now.stream().noneMatch(x -> x == a)) {
                    a.close();
                }
            }
        });
    }

    @Override
    protected void release(DeviceRows s) {
        model.library().thread().run(() -> {
            for (MlxArray a : arrays(s)) {
                if (a != null) {
                    a.close();
                }
            }
        });
    }

    private static List<MlxArray> arrays(DeviceRows s) {
        return java.util.Arrays.asList(s.keys(), s.values(), s.hidden());
    }

    /** How many arrays the last {@link #draft} round copied to the host: 1 when it drafted, 0 at depth 0 (for tests). */
    int draftHostReads() {
        return draftHostReads;
    }

    /** Positions the KV cache has room for (0 with no cache); for tests. */
    int capacity() {
        return storage().capacity();
    }

    private static int roundUp(int n) {
        return (n + CAPACITY_STEP - 1) / CAPACITY_STEP * CAPACITY_STEP;
    }

    @Override
    protected DeviceRows reserve(DeviceRows s, int[] at, int extra) {
        MlxBlock.Kv kv = ensureCapacity(new MlxBlock.Kv(s.keys(), s.values(), at), extra);
        return new DeviceRows(s.rows(), kv.keys(), kv.values(), s.hidden());
    }

    /** {@code kv} with room for {@code extra} more positions in every row (zero columns appended, spec §4.2). */
    private MlxBlock.Kv ensureCapacity(MlxBlock.Kv kv, int extra) {
        int needed = 0;
        for (int len : kv.lengths()) {
            needed = Math.max(needed, len + extra);
        }
        int cap = kv.keys() == null ? 0 : kv.keys().dim(2);
        if (needed <= cap) {
            return kv;
        }
        int b = kv.lengths().length;
        int grown = roundUp(needed);
        int dt = model.dtype();
        int[] shape = {b, c.numKvHeads(), grown - cap, c.headDim()};
        MlxArray k = kv.keys() == null ? ops.zeros(dt, b, c.numKvHeads(), grown, c.headDim())
                : ops.concatenate(List.of(kv.keys(), ops.zeros(dt, shape)), 2);
        MlxArray v = kv.values() == null ? ops.zeros(dt, b, c.numKvHeads(), grown, c.headDim())
                : ops.concatenate(List.of(kv.values(), ops.zeros(dt, shape)), 2);
        return new MlxBlock.Kv(k, v, kv.lengths());
    }
}
