package org.mtporacle.mlx;

import org.mtporacle.api.TargetRouterChoices;
import org.mtporacle.api.AbstractTargetRows;
import org.mtporacle.api.DType;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MtpConfig;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.TargetCheckpoint;
import org.mtporacle.api.TargetConfig;
import org.mtporacle.mlx.handle.MlxArray;
import org.mtporacle.mlx.handle.MlxOps;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.Supplier;

/**
 * The MLX target rows (spec §13.3) on the shared {@link AbstractTargetRows} skeleton. Every row's state lives on the
 * device, batched per layer: conv windows {@code [B, K−1, C]} (time-major, compute dtype), recurrent states
 * {@code [B, Hv, Dk, Dv]} f32, caches {@code [B, nKV, capacity, D]} (row {@code b} valid in {@code [0, P_b)}). A
 * verify keeps, per GDN layer, the round's conv inputs {@code [B, K−1+W, C]} and the state after every token
 * {@code [W·B, Hv, Dk, Dv]}; a commit selects each row's window and state after its last kept token with one gather
 * each, on the device; caches need no rollback (positions past {@code P_b} are never read). One host read per forward
 * (logits and taps, and a MoE target's router choices, which the forward computes anyway), none per token; a native
 * failure poisons the group.
 */
final class MlxTargetRows extends AbstractTargetRows<MlxTargetRows.DeviceRows> implements TargetRouterChoices {
    private final MlxTarget target;
    private final TargetConfig c;
    private final int nGdn;
    private final int nFull;
    private MlxOps ops; // the running call's device context, set only inside onBackend on the MLX thread
    /** The MoE router choices of the last prefill or verify (spec §12.5), read with its logits. */
    private final List<TargetRouterChoices.Choice> routed = new ArrayList<>();

    /** An open round's per-GDN-layer conv inputs {@code [B, K−1+W, C]} and states {@code [W·B, Hv, Dk, Dv]}. */
    record Round(MlxArray[] inputs, MlxArray[] every, int width) {
    }

    /**
     * All rows on the device; during a round {@code conv}/{@code rec} are the states before it and {@code round} what
     * a commit selects from. Entries are null when {@code rows = 0} (caches also while no row holds a position).
     */
    record DeviceRows(int rows, MlxArray[] conv, MlxArray[] rec, MlxArray[] keys, MlxArray[] values, Round round) {
        int capacity() {
            return keys.length == 0 || keys[0] == null ? 0 : keys[0].dim(2);
        }
    }

    MlxTargetRows(MlxTarget target) {
        super(target.model(), empty(target.model().config()));
        if (ByteOrder.nativeOrder() != ByteOrder.LITTLE_ENDIAN) { // MLX runs on none; the reads rely on it
            throw new MtpException(MtpException.Kind.UNAVAILABLE, "mlx: the target's host reads copy f32 values in "
                    + "the host's byte order into little-endian tensors, and this host is big-endian");
        }
        this.target = target;
        this.c = target.model().config();
        this.nGdn = c.count(TargetConfig.LayerType.LINEAR_ATTENTION);
        this.nFull = c.count(TargetConfig.LayerType.FULL_ATTENTION);
    }

    private static DeviceRows empty(TargetConfig c) {
        int g = c.count(TargetConfig.LayerType.LINEAR_ATTENTION);
        int f = c.count(TargetConfig.LayerType.FULL_ATTENTION);
        return new DeviceRows(0, new MlxArray[g], new MlxArray[g], new MlxArray[f], new MlxArray[f], null);
    }

    @Override
    protected boolean modelClosed() {
        return target.isClosed();
    }

    @Override
    protected DeviceRows appendRows(DeviceRows s, List<TargetCheckpoint> checkpoints) {
        TargetConfig.Gdn g = c.gdn();
        MtpConfig a = c.shape();
        int b = s.rows();
        int total = b + checkpoints.size();
        int dt = target.dtype();
        int k1 = g.convKernel() - 1;
        // each restored row's tensors once, all layers: windows to [nGDN, K−1, C] in the compute dtype, made
        // row-contiguous: a layer's window of a transposed view is a [1, K−1, C] array with column-major inner axes,
        // and MLX 0.31.1's CPU take along axis 0 (keepRows after appending into an empty group, where the window is
        // kept as that view) returns such an array's elements in memory order, i.e. the window transposed
        MlxArray[] cw = new MlxArray[checkpoints.size()];
        MlxArray[] cs = new MlxArray[checkpoints.size()];
        MlxArray[] ck = new MlxArray[checkpoints.size()];
        MlxArray[] cv = new MlxArray[checkpoints.size()];
        int longest = 0;
        for (int i = 0; i < checkpoints.size(); i++) {
            TargetCheckpoint cp = checkpoints.get(i);
            if (cp == null) {
                continue;
            }
            if (nGdn > 0) {
                cw[i] = ops.contiguous(cast(ops.transpose(ops.fromHost(cp.convWindows()), 0, 2, 1), dt));
                cs[i] = ops.fromHost(cp.recurrentStates());
            }
            if (nFull > 0) {
                ck[i] = cast(ops.fromHost(cp.keys()), dt);
                cv[i] = cast(ops.fromHost(cp.values()), dt);
                longest = Math.max(longest, cp.processedTokens());
            }
        }
        MlxArray[] conv = new MlxArray[nGdn];
        MlxArray[] rec = new MlxArray[nGdn];
        for (int l = 0; l < nGdn; l++) {
            List<MlxArray> wins = new ArrayList<>();
            List<MlxArray> states = new ArrayList<>();
            if (b > 0) {
                wins.add(s.conv()[l]);
                states.add(s.rec()[l]);
            }
            for (int i = 0; i < checkpoints.size(); i++) {
                if (cw[i] == null) {
                    wins.add(ops.zeros(dt, 1, k1, g.convDim()));
                    states.add(ops.zeros(org.mtporacle.mlx.ffi.MlxC.MLX_FLOAT32, 1, g.numValueHeads(),
                            g.keyHeadDim(), g.valueHeadDim()));
                } else {
                    wins.add(layer(cw[i], l));
                    states.add(layer(cs[i], l));
                }
            }
            conv[l] = wins.size() == 1 ? wins.getFirst() : ops.concatenate(wins, 0);
            rec[l] = states.size() == 1 ? states.getFirst() : ops.concatenate(states, 0);
        }
        int cap = Math.max(s.capacity(), roundUp(longest));
        MlxArray[] keys = new MlxArray[nFull];
        MlxArray[] values = new MlxArray[nFull];
        for (int l = 0; l < nFull && cap > 0; l++) {
            MlxArray k = ops.zeros(dt, total, a.numKvHeads(), cap, a.headDim());
            MlxArray v = ops.zeros(dt, total, a.numKvHeads(), cap, a.headDim());
            if (b > 0 && s.keys()[l] != null) {
                int[] stop = {b, a.numKvHeads(), s.capacity(), a.headDim()};
                k = ops.sliceUpdate(k, s.keys()[l], new int[4], stop);
                v = ops.sliceUpdate(v, s.values()[l], new int[4], stop);
            }
            for (int i = 0; i < checkpoints.size(); i++) {
                if (ck[i] == null) {
                    continue;
                }
                int r = b + i;
                int p = checkpoints.get(i).processedTokens();
                int[] start = {r, 0, 0, 0};
                int[] stop = {r + 1, a.numKvHeads(), p, a.headDim()};
                k = ops.sliceUpdate(k, layer(ck[i], l), start, stop);
                v = ops.sliceUpdate(v, layer(cv[i], l), start, stop);
            }
            keys[l] = k;
            values[l] = v;
        }
        return new DeviceRows(total, conv, rec, keys, values, null);
    }

    /** {@code a[l : l+1]} along the first axis (one layer of a checkpoint tensor, as one row). */
    private MlxArray layer(MlxArray a, int l) {
        int[] start = new int[a.rank()];
        int[] stop = a.shape();
        start[0] = l;
        stop[0] = l + 1;
        return ops.slice(a, start, stop);
    }

    @Override
    protected DeviceRows keepRows(DeviceRows s, int[] keep) {
        if (keep.length == 0) {
            return empty(c);
        }
        MlxArray idx = ops.fromInts(keep.clone(), keep.length);
        return new DeviceRows(keep.length, take(s.conv(), idx), take(s.rec(), idx), take(s.keys(), idx),
                take(s.values(), idx), null);
    }

    private MlxArray[] take(MlxArray[] all, MlxArray idx) {
        MlxArray[] out = new MlxArray[all.length];
        for (int i = 0; i < all.length; i++) {
            out[i] = all[i] == null ? null : ops.take(all[i], idx, 0);
        }
        return out;
    }

    @Override
    protected Forwarded<DeviceRows> forward(DeviceRows s, int[] at, int[] ids, int n, Pass pass) {
        boolean verify = pass == Pass.VERIFY;
        int b = s.rows();
        int h = c.shape().hiddenSize();
        int v = c.shape().vocabSize();
        int nl = verify ? n : 1;
        // the read's destinations are allocated (and zeroed: 33 MB at 27b, B = 8) while the graph builds and runs
        java.util.concurrent.Future<MemorySegment[]> buffers = MlxOps.hostBuffers(4L * b * nl * v, 4L * b * n * h,
                4L * b * n * h);
        MlxArray[][] kv = ensureCapacity(s, at, n);
        MlxTarget.Result r = target.forward(ops, ids, at, n, s.conv(), s.rec(), kv[0], kv[1], verify, verify);
        List<MlxArray> outs = new ArrayList<>(List.of(r.host()));
        MlxArray[] conv = s.conv();
        MlxArray[] rec = s.rec();
        Round round = null;
        if (verify) {
            round = new Round(r.inputs(), r.every(), n);
            outs.addAll(Arrays.asList(r.every()));
        } else {
            conv = new MlxArray[nGdn];
            rec = r.last();
            int k1 = c.gdn().convKernel() - 1;
            for (int l = 0; l < nGdn; l++) {
                conv[l] = ops.slice(r.inputs()[l], new int[] {0, n, 0}, new int[] {b, n + k1, c.gdn().convDim()});
            }
            outs.addAll(Arrays.asList(rec));
            outs.addAll(Arrays.asList(conv));
        }
        outs.addAll(Arrays.asList(r.keys()));
        outs.addAll(Arrays.asList(r.values()));
        ops.evalAll(outs);
        int routedValues = 0;
        for (MlxTarget.Routes rt : r.routes()) {
            if (rt.choices().onDevice() != null) {
                routedValues += rt.choices().size();
            }
        }
        // the forward's one host read, straight into the caller's logits and taps, the router choices after them
        MemorySegment[] out = MlxOps.await(buffers);
        float[] routes = new float[routedValues];
        ops.readFloats(r.host(), MlxOps.READ_THREADS, out[0], out[1], out[2],
                MemorySegment.ofArray(routes));
        record(r.routes(), routes, 0, at, n);
        return new Forwarded<>(HostTensor.view(DType.F32, new int[] {b, nl, v}, out[0]),
                HostTensor.view(DType.F32, new int[] {b, n, h}, out[1]),
                HostTensor.view(DType.F32, new int[] {b, n, h}, out[2]),
                new DeviceRows(b, conv, rec, r.keys(), r.values(), round));
    }

    @Override
    public List<TargetRouterChoices.Choice> lastRouterChoices() {
        return List.copyOf(routed);
    }

    /**
     * Records one forward's router choices (spec §12.5): row {@code r}'s {@code t}-th token at position
     * {@code at[r] + t}, per MoE layer; device-side choices come from {@code host} past {@code from}, where the
     * forward's one host read put them.
     */
    private void record(List<MlxTarget.Routes> routes, float[] host, int from, int[] at, int n) {
        int off = from;
        for (MlxTarget.Routes rt : routes) {
            MlxMoe.Choices ch = rt.choices();
            if (ch.onDevice() != null) {
                ch.resolve(host, off);
                off += ch.size();
            }
            int[][] experts = ch.experts();
            for (int r = 0; r < at.length; r++) {
                for (int t = 0; t < n; t++) {
                    routed.add(new TargetRouterChoices.Choice(r, at[r] + t, rt.layer(), experts[r * n + t]));
                }
            }
        }
    }

    @Override
    protected DeviceRows rollback(DeviceRows verified, int[] before, int[] keep) {
        Round round = verified.round();
        int b = verified.rows();
        int w = round.width();
        TargetConfig.Gdn g = c.gdn();
        int k1 = g.convKernel() - 1;
        int[] stateAt = new int[b];
        int[] windowAt = new int[b * k1];
        for (int r = 0; r < b; r++) {
            stateAt[r] = (keep[r] - 1) * b + r;
            for (int j = 0; j < k1; j++) {
                windowAt[r * k1 + j] = r * (k1 + w) + keep[r] + j;
            }
        }
        MlxArray si = ops.fromInts(stateAt, b);
        MlxArray wi = ops.fromInts(windowAt, b * k1);
        MlxArray[] conv = new MlxArray[nGdn];
        MlxArray[] rec = new MlxArray[nGdn];
        for (int l = 0; l < nGdn; l++) {
            rec[l] = ops.take(round.every()[l], si, 0);
            MlxArray u = ops.reshape(round.inputs()[l], b * (k1 + w), g.convDim());
            conv[l] = ops.reshape(ops.take(u, wi, 0), b, k1, g.convDim());
        }
        return new DeviceRows(b, conv, rec, verified.keys(), verified.values(), null);
    }

    @Override
    protected RowState export(DeviceRows s, int row, int processed) {
        MtpConfig a = c.shape();
        HostTensor conv = null;
        HostTensor rec = null;
        if (nGdn > 0) {
            conv = ops.toHost(ops.transpose(rows(s.conv(), row, -1), 0, 2, 1), DType.F32);
            rec = ops.toHost(rows(s.rec(), row, -1), DType.F32);
        }
        HostTensor keys = null;
        HostTensor values = null;
        if (nFull > 0) {
            keys = ops.toHost(rows(s.keys(), row, processed), DType.F32);
            values = ops.toHost(rows(s.values(), row, processed), DType.F32);
        }
        return new RowState(conv, rec, keys, values);
    }

    /** Row {@code row} of every layer, one layer per entry of the result's first axis; caches cut at {@code p}. */
    private MlxArray rows(MlxArray[] all, int row, int p) {
        List<MlxArray> parts = new ArrayList<>(all.length);
        for (MlxArray x : all) {
            int[] start = new int[x.rank()];
            int[] stop = x.shape();
            start[0] = row;
            stop[0] = row + 1;
            if (p >= 0) {
                stop[2] = p;
            }
            parts.add(ops.slice(x, start, stop));
        }
        return parts.size() == 1 ? parts.getFirst() : ops.concatenate(parts, 0);
    }

    /** The caches with room for {@code extra} more positions per row (zero columns appended), per layer. */
    private MlxArray[][] ensureCapacity(DeviceRows s, int[] at, int extra) {
        int needed = 0;
        for (int p : at) {
            needed = Math.max(needed, p + extra);
        }
        int cap = s.capacity();
        if (needed <= cap || nFull == 0) {
            return new MlxArray[][] {s.keys(), s.values()};
        }
        int grown = roundUp(needed);
        MtpConfig a = c.shape();
        int dt = target.dtype();
        int b = s.rows();
        MlxArray[] k = new MlxArray[nFull];
        MlxArray[] v = new MlxArray[nFull];
        for (int l = 0; l < nFull; l++) {
            if (s.keys()[l] == null) {
                k[l] = ops.zeros(dt, b, a.numKvHeads(), grown, a.headDim());
                v[l] = ops.zeros(dt, b, a.numKvHeads(), grown, a.headDim());
            } else {
                int[] shape = {b, a.numKvHeads(), grown - cap, a.headDim()};
                k[l] = ops.concatenate(List.of(s.keys()[l], ops.zeros(dt, shape)), 2);
                v[l] = ops.concatenate(List.of(s.values()[l], ops.zeros(dt, shape)), 2);
            }
        }
        return new MlxArray[][] {k, v};
    }

    private MlxArray cast(MlxArray a, int dtype) {
        return a.dtype() == dtype ? a : ops.astype(a, dtype);
    }

    private static int roundUp(int n) {
        int step = MlxDraftRows.CAPACITY_STEP;
        return (n + step - 1) / step * step;
    }

    // ---- device plumbing, as MlxDraftRows

    @Override
    protected <T> T onBackend(String call, Supplier<T> work) {
        if (call.equals("prefill") || call.equals("verify")) {
            routed.clear();
        }
        try {
            return target.call(o -> {
                ops = o;
                try {
                    return work.get();
                } finally {
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

    /** Evaluates the new arrays and takes them out of the call's scope. */
    @Override
    protected DeviceRows seal(DeviceRows next) {
        List<MlxArray> all = arrays(next);
        ops.evalAll(all.stream().filter(a -> !ops.isAvailable(a)).toList());
        for (MlxArray a : all) {
            ops.scope().release(a);
        }
        return next;
    }

    @Override
    protected void discard(DeviceRows superseded, DeviceRows current) {
        List<MlxArray> now = arrays(current);
        List<MlxArray> old = arrays(superseded);
        target.library().thread().post(() -> {
            for (MlxArray a : old) {
                if (now.stream().noneMatch(x -> x == a)) {
                    a.close();
                }
            }
        });
    }

    @Override
    protected void release(DeviceRows s) {
        List<MlxArray> all = arrays(s);
        target.library().thread().run(() -> all.forEach(MlxArray::close));
    }

    /** Every non-null array of {@code s}, once each. */
    private static List<MlxArray> arrays(DeviceRows s) {
        List<MlxArray> out = new ArrayList<>();
        List<MlxArray[]> groups = new ArrayList<>(List.of(s.conv(), s.rec(), s.keys(), s.values()));
        if (s.round() != null) {
            groups.add(s.round().inputs());
            groups.add(s.round().every());
        }
        for (MlxArray[] g : groups) {
            for (MlxArray a : g) {
                if (a != null && out.stream().noneMatch(x -> x == a)) {
                    out.add(a);
                }
            }
        }
        return out;
    }
}
