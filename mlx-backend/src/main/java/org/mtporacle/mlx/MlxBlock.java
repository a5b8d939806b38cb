package org.mtporacle.mlx;

import org.mtporacle.api.MlpWeights;
import org.mtporacle.api.MtpConfig;
import org.mtporacle.api.MtpWeights;
import org.mtporacle.mlx.ffi.MlxC;
import org.mtporacle.mlx.handle.MlxArray;
import org.mtporacle.mlx.handle.MlxCompiled;
import org.mtporacle.mlx.handle.MlxOps;

import java.util.ArrayList;
import java.util.List;

/**
 * The MTP draft block (spec §1.4–§1.5) and the target ports (§1.7) on MLX arrays, in one compute dtype. A forward
 * writes {@code S} new KV positions per row into the batched cache at each row's own logical end and attends with a
 * mask that shows each query only its row's keys up to its own position (spec §4.3), so rows never see each other's
 * or stale columns.
 */
final class MlxBlock implements AutoCloseable {
    private final MtpConfig c;
    private final int dtype; // compute dtype (mlx_dtype)
    private final float eps;
    private final MlxLinear fc, o, embedding, head;
    private final MlxStack qkv;              // q, k and v as one product where they stack
    private final MlxStack gateUp;           // the dense MLP's gate and up as one product, or null
    private final MlxLinear down;            // the dense MLP's down, or null
    private final MlxMoe moe;               // the MoE MLP (spec §12), or null
    private final MlxArray preE, preH, inNorm, qNorm, kNorm, postNorm, finalNorm;
    /** RoPE permutation {@code [D]} int32: {@code f + R/2} for {@code f < R/2}, {@code f − R/2} below {@code R}, else {@code f}. */
    private final MlxArray ropePerm;
    /** RoPE tables {@code [positions, D]} f32 for positions {@code [0, ropePositions)}, grown on demand. */
    private MlxArray ropeCos, ropeSin;
    private int ropePositions;
    /** With compile on: the one-position forward's fixed-shape parts through {@code mlx_compile}, made on first use. */
    private final boolean compile;
    private MlxCompiled preCompiled, postCompiled, headCompiled;

    /** The batched cache: {@code keys}/{@code values} {@code [B, nKV, capacity, D]}, row {@code b} valid in {@code [0, lengths[b])}. */
    record Kv(MlxArray keys, MlxArray values, int[] lengths) {
    }

    /**
     * A forward's output {@code y [B, S, H]}, the cache after the append, and for a MoE layer each forward row's
     * chosen experts ({@code b·S + t}, slot order, possibly still on the device; null when dense).
     */
    record Step(MlxArray y, Kv kv, MlxMoe.Choices experts) {
    }

    /** The MoE MLP, or null for a dense one. */
    MlxMoe moe() {
        return moe;
    }

    /** {@code moePath}: the MoE layer's path (null: its default); ignored for a dense MLP. */
    MlxBlock(MlxOps ops, MtpConfig config, MtpWeights w, int dtype, boolean quantF32, MlxMoe.Path moePath) {
        this(ops, config, w, dtype, quantF32, moePath, false);
    }

    /** {@code compile}: one-position forwards run their fixed-shape parts through {@code mlx_compile}. */
    MlxBlock(MlxOps ops, MtpConfig config, MtpWeights w, int dtype, boolean quantF32, MlxMoe.Path moePath,
             boolean compile) {
        this.c = config;
        this.compile = compile;
        this.dtype = dtype;
        this.eps = (float) config.rmsNormEps();
        List<AutoCloseable> made = new ArrayList<>();
        try {
            fc = track(made, MlxLinear.upload(ops, w.fc(), dtype, quantF32));
            qkv = track(made, MlxStack.upload(ops, List.of(w.qProj(), w.kProj(), w.vProj()), dtype, quantF32));
            o = track(made, MlxLinear.upload(ops, w.oProj(), dtype, quantF32));
            if (w.mlp() instanceof MlpWeights.Moe m) {
                gateUp = null;
                down = null;
                moe = new MlxMoe(ops, m, dtype, quantF32, moePath, made);
            } else {
                gateUp = track(made, MlxStack.upload(ops, List.of(w.gateProj(), w.upProj()), dtype, quantF32));
                down = track(made, MlxLinear.upload(ops, w.downProj(), dtype, quantF32));
                moe = null;
            }
            embedding = track(made, MlxLinear.upload(ops, w.embedding(), dtype, quantF32));
            head = track(made, MlxLinear.upload(ops, w.head(), dtype, quantF32));
            preE = track(made, gain(ops, w.preFcNormEmbedding()));
            preH = track(made, gain(ops, w.preFcNormHidden()));
            inNorm = track(made, gain(ops, w.inputNorm()));
            qNorm = track(made, gain(ops, w.qNorm()));
            kNorm = track(made, gain(ops, w.kNorm()));
            postNorm = track(made, gain(ops, w.postAttentionNorm()));
            finalNorm = track(made, gain(ops, w.finalNorm()));
            ropePerm = track(made, ropePermutation(ops));
        } catch (RuntimeException | Error e) {
            // Arrays already released from the scope belong to nobody yet: free them, or a failed upload (an
            // unsupported tensor, the device out of memory) would leak everything uploaded before it.
            for (int i = made.size() - 1; i >= 0; i--) {
                try {
                    made.get(i).close();
                } catch (Exception suppressed) {
                    e.addSuppressed(suppressed);
                }
            }
            throw e;
        }
    }

    private static <T extends AutoCloseable> T track(List<AutoCloseable> made, T t) {
        made.add(t);
        return t;
    }

    private MlxArray gain(MlxOps ops, float[] g) {
        MlxArray a = ops.fromFloats(g, g.length);
        if (dtype != MlxC.MLX_FLOAT32) {
            a = ops.astype(a, dtype);
        }
        ops.eval(a);
        return ops.scope().release(a);
    }

    int dtype() {
        return dtype;
    }

    /** Whether one-position forwards go through {@code mlx_compile}. */
    boolean compiled() {
        return compile;
    }

    /** How many graphs MLX has traced for the compiled parts so far (one per new input signature and part). */
    int traces() {
        int n = 0;
        for (MlxCompiled f : new MlxCompiled[] {preCompiled, postCompiled, headCompiled}) {
            n += f == null ? 0 : f.traces();
        }
        return n;
    }

    /** {@code [B, S] int32 ids → [B, S, H]} (spec §1.7). */
    MlxArray embed(MlxOps ops, MlxArray ids) {
        return embedding.gather(ops, ids, dtype);
    }

    /** {@code [B, 1, H] → [B, V]} log-probs {@code logits − logsumexp(logits)} in the compute dtype (spec §1.7). */
    MlxArray logProbs(MlxOps ops, MlxArray y) {
        if (compile && y.dim(1) == 1) {
            if (headCompiled == null) {
                headCompiled = new MlxCompiled(ops, "head", (o, in) -> List.of(logProbsGraph(o, in.get(0))));
            }
            return headCompiled.apply(ops, List.of(y)).getFirst();
        }
        return logProbsGraph(ops, y);
    }

    private MlxArray logProbsGraph(MlxOps ops, MlxArray y) {
        int b = y.dim(0);
        MlxArray logits = ops.reshape(head.apply(ops, y), b, c.vocabSize());
        return ops.subtract(logits, ops.logsumexp(logits, -1, true));
    }

    /** What the block computes before the cache append: RoPE'd queries and keys, values, the output gate, x. */
    private record Pre(MlxArray query, MlxArray key, MlxArray value, MlxArray gateHalf, MlxArray x) {
        List<MlxArray> list() {
            return List.of(query, key, value, gateHalf, x);
        }

        static Pre of(List<MlxArray> l) {
            return new Pre(l.get(0), l.get(1), l.get(2), l.get(3), l.get(4));
        }
    }

    /**
     * {@code Y = forward(E, Hin)} (spec §1.4) for all {@code B} rows, {@code S} positions each, appended at each row's
     * logical end; the caller has made room ({@code capacity ≥ max(lengths) + S}).
     */
    Step forward(MlxOps ops, MlxArray ids, MlxArray hin, Kv kv) {
        int b = hin.dim(0);
        int s = hin.dim(1);
        int nKv = c.numKvHeads();
        int d = c.headDim();
        boolean compiled = compile && s == 1;
        // 1.5.5's tables at logical positions lengths[b] + t: [1 or B, 1, S, D] each
        MlxArray[] tables = c.rotaryDims() > 0 ? ropeTables(ops, kv.lengths(), s) : null;
        Pre pre;
        if (compiled) {
            if (preCompiled == null) {
                preCompiled = new MlxCompiled(ops, "pre-attention", (o, in) -> preAttention(o, in.get(0), in.get(1),
                        in.size() > 2 ? in.get(2) : null, in.size() > 2 ? in.get(3) : null).list());
            }
            pre = Pre.of(preCompiled.apply(ops, tables == null ? List.of(ids, hin)
                    : List.of(ids, hin, tables[0], tables[1])));
        } else {
            pre = preAttention(ops, ids, hin, tables == null ? null : tables[0], tables == null ? null : tables[1]);
        }
        // 1.5.6 append at each row's logical end
        Kv next = append(ops, kv, pre.key(), pre.value(), s);
        int t = 0;
        for (int len : kv.lengths()) {
            t = Math.max(t, len + s);
        }
        MlxArray keys = ops.slice(next.keys(), new int[] {0, 0, 0, 0}, new int[] {b, nKv, t, d});
        MlxArray values = ops.slice(next.values(), new int[] {0, 0, 0, 0}, new int[] {b, nKv, t, d});
        // 1.5.7 attention over the row's own columns [0, length_b + i]: with every row at one length that is every
        // column for one query and MLX's end-aligned causal mask for several; otherwise an explicit mask
        float scale = (float) c.attentionScale();
        MlxArray attn;
        if (!equalLengths(kv.lengths())) {
            attn = ops.attention(pre.query(), keys, values, scale, mask(ops, kv.lengths(), s, t));
        } else if (s == 1) {
            attn = ops.attention(pre.query(), keys, values, scale, null);
        } else {
            attn = ops.attentionCausal(pre.query(), keys, values, scale);
        }
        if (compiled && moe == null) {
            if (postCompiled == null) {
                postCompiled = new MlxCompiled(ops, "post-attention",
                        (o, in) -> List.of(postAttention(o, in.get(0), in.get(1), in.get(2)).y()));
            }
            MlxArray y = postCompiled.apply(ops, List.of(attn, pre.gateHalf(), pre.x())).getFirst();
            return new Step(y, next, null);
        }
        Step post = postAttention(ops, attn, pre.gateHalf(), pre.x());
        return new Step(post.y(), next, post.experts());
    }

    /** Spec §1.4 steps 1–5 and §1.5 steps 1–5 for {@code ids [B, S]}, {@code hin [B, S, H]}; null tables: no RoPE. */
    private Pre preAttention(MlxOps ops, MlxArray ids, MlxArray hin, MlxArray cos, MlxArray sin) {
        int b = hin.dim(0);
        int s = hin.dim(1);
        int nH = c.numHeads();
        int nKv = c.numKvHeads();
        int d = c.headDim();
        // 1–3. u = concat(RMSNorm(E), RMSNorm(Hin)), embedding half first; x = u · W_fcᵀ
        MlxArray e = ops.rmsNorm(embed(ops, ids), preE, eps);
        MlxArray g = ops.rmsNorm(hin, preH, eps);
        MlxArray x = fc.apply(ops, ops.concatenate(List.of(e, g), 2));
        // 5. a = RMSNorm(x)
        MlxArray a = ops.rmsNorm(x, inNorm, eps);
        // 1.5.1 query and gate interleaved per head; k and v (one product)
        List<MlxArray> proj = qkv.apply(ops, a);
        MlxArray qg = ops.reshape(proj.get(0), b, s, nH, 2 * d);
        MlxArray query = ops.slice(qg, new int[] {0, 0, 0, 0}, new int[] {b, s, nH, d});
        MlxArray gateHalf = ops.reshape(ops.slice(qg, new int[] {0, 0, 0, d}, new int[] {b, s, nH, 2 * d}),
                b, s, nH * d);
        MlxArray key = ops.reshape(proj.get(1), b, s, nKv, d);
        MlxArray value = ops.reshape(proj.get(2), b, s, nKv, d);
        // 1.5.3 per-head RMSNorm before RoPE; 1.5.4 to [B, heads, S, D]
        query = ops.transpose(ops.rmsNorm(query, qNorm, eps), 0, 2, 1, 3);
        key = ops.transpose(ops.rmsNorm(key, kNorm, eps), 0, 2, 1, 3);
        value = ops.transpose(value, 0, 2, 1, 3);
        // 1.5.5 RoPE, queries and keys in one pass
        if (cos != null) {
            MlxArray both = rope(ops, ops.concatenate(List.of(query, key), 1), cos, sin);
            query = ops.slice(both, new int[] {0, 0, 0, 0}, new int[] {b, nH, s, d});
            key = ops.slice(both, new int[] {0, nH, 0, 0}, new int[] {b, nH + nKv, s, d});
        }
        return new Pre(query, key, value, gateHalf, x);
    }

    /** Spec §1.5 step 8 and §1.4 steps 7–10 from attention's {@code [B, nH, S, D]}: the block's output (and experts). */
    private Step postAttention(MlxOps ops, MlxArray attn, MlxArray gateHalf, MlxArray x) {
        int b = attn.dim(0);
        int s = attn.dim(2);
        int nH = c.numHeads();
        int d = c.headDim();
        // 1.5.8 back to [B, S, nH·D], gate, o_proj
        MlxArray merged = ops.reshape(ops.transpose(attn, 0, 2, 1, 3), b, s, nH * d);
        MlxArray r = o.apply(ops, ops.multiply(merged, ops.sigmoid(gateHalf)));
        // 7–9. h1 = x + r; y = h1 + MLP(RMSNorm(h1))
        MlxArray h1 = ops.add(x, r);
        MlxArray n = ops.rmsNorm(h1, postNorm, eps);
        MlxMoe.Choices experts = null;
        MlxArray m;
        if (moe == null) {
            List<MlxArray> gu = gateUp.apply(ops, n);
            MlxArray gt = gu.get(0);
            m = down.apply(ops, ops.multiply(ops.multiply(gt, ops.sigmoid(gt)), gu.get(1)));
        } else {
            MlxMoe.Routed routed = moe.apply(ops, n);
            m = routed.out();
            experts = routed.choices();
        }
        MlxArray y = ops.add(h1, m);
        // 10. Y = RMSNorm(y)
        return new Step(ops.rmsNorm(y, finalNorm, eps), null, experts);
    }

    /**
     * Half-split RoPE on the first R features of {@code x [B, heads, S, D]} at positions {@code lengths[b] + t}, in f32
     * (spec §1.5 step 5), as {@code x · C + x[perm] · S}: for {@code f < R/2}, {@code C = cos θ_f},
     * {@code S = −sin θ_f}, {@code x[perm] = x[f + R/2]}; for {@code R/2 ≤ f < R}, {@code C = cos θ_{f−R/2}},
     * {@code S = sin θ_{f−R/2}}, {@code x[perm] = x[f − R/2]}; past R, {@code C = 1}, {@code S = 0}. In IEEE f32
     * {@code a·c + b·(−s)} is {@code a·c − b·s} exactly, so this is the rotation term for term, in four kernels. The
     * tables come from {@link #ropeTables}.
     */
    private MlxArray rope(MlxOps ops, MlxArray x, MlxArray cos, MlxArray sin) {
        MlxArray xf = x.dtype() == MlxC.MLX_FLOAT32 ? x : ops.astype(x, MlxC.MLX_FLOAT32);
        MlxArray out = ops.add(ops.multiply(xf, cos), ops.multiply(ops.take(xf, ropePerm, 3), sin));
        return dtype == MlxC.MLX_FLOAT32 ? out : ops.astype(out, dtype);
    }

    /** {@code C} and {@code S} of {@link #rope} at positions {@code lengths[b] + t}: {@code [1 or B, 1, S, D]} f32 each. */
    private MlxArray[] ropeTables(MlxOps ops, int[] lengths, int s) {
        int b = lengths.length;
        int d = c.headDim();
        growRope(ops, maxEnd(lengths, s));
        MlxArray cos;
        MlxArray sin;
        if (equalLengths(lengths)) {
            int[] start = {lengths[0], 0};
            int[] stop = {lengths[0] + s, d};
            cos = ops.reshape(ops.slice(ropeCos, start, stop), 1, 1, s, d);
            sin = ops.reshape(ops.slice(ropeSin, start, stop), 1, 1, s, d);
        } else {
            int[] pos = new int[b * s];
            for (int r = 0; r < b; r++) {
                for (int t = 0; t < s; t++) {
                    pos[r * s + t] = lengths[r] + t;
                }
            }
            MlxArray at = ops.fromInts(pos, b, s);
            cos = ops.reshape(ops.take(ropeCos, at, 0), b, 1, s, d);
            sin = ops.reshape(ops.take(ropeSin, at, 0), b, 1, s, d);
        }
        return new MlxArray[] {cos, sin};
    }

    /**
     * Makes the RoPE tables cover positions {@code [0, end)}, in steps of {@link MlxDraftRows#CAPACITY_STEP}: each
     * angle {@code pos · θ^(−2f/R)} in f64, its cos and sin rounded to f32, as the reference computes them.
     */
    private void growRope(MlxOps ops, int end) {
        if (end <= ropePositions) {
            return;
        }
        int step = MlxDraftRows.CAPACITY_STEP;
        int positions = Math.toIntExact(((long) end + step - 1) / step * step);
        int d = c.headDim();
        int rDims = c.rotaryDims();
        int half = rDims / 2;
        float[] cos = new float[Math.multiplyExact(positions, d)];
        float[] sin = new float[cos.length];
        for (int p = 0; p < positions; p++) {
            for (int f = 0; f < d; f++) {
                int i = p * d + f;
                if (f >= rDims) {
                    cos[i] = 1f;
                    continue;
                }
                int g = f < half ? f : f - half;
                double angle = p * Math.pow(c.ropeTheta(), -2.0 * g / rDims);
                cos[i] = (float) Math.cos(angle);
                float sn = (float) Math.sin(angle);
                sin[i] = f < half ? -sn : sn;
            }
        }
        MlxArray newCos = ops.fromFloats(cos, positions, d);
        MlxArray newSin = ops.fromFloats(sin, positions, d);
        ops.scope().release(newCos);
        ops.scope().release(newSin);
        if (ropeCos != null) {
            ropeCos.close();
            ropeSin.close();
        }
        ropeCos = newCos;
        ropeSin = newSin;
        ropePositions = positions;
    }

    private MlxArray ropePermutation(MlxOps ops) {
        int d = c.headDim();
        int rDims = c.rotaryDims();
        int half = rDims / 2;
        int[] perm = new int[d];
        for (int f = 0; f < d; f++) {
            perm[f] = f >= rDims ? f : f < half ? f + half : f - half;
        }
        MlxArray a = ops.fromInts(perm, d);
        return ops.scope().release(a);
    }

    /** Whether there is at least one row and every row has the same length. */
    private static boolean equalLengths(int[] lengths) {
        if (lengths.length == 0) {
            return false;
        }
        for (int len : lengths) {
            if (len != lengths[0]) {
                return false;
            }
        }
        return true;
    }

    private static int maxEnd(int[] lengths, int s) {
        int end = 0;
        for (int len : lengths) {
            end = Math.max(end, Math.addExact(len, s));
        }
        return end;
    }

    /** Writes {@code k, v [B, nKV, S, D]} at columns {@code [lengths[b], lengths[b] + S)} of each row (spec §4.2). */
    private Kv append(MlxOps ops, Kv kv, MlxArray key, MlxArray value, int s) {
        int[] lengths = kv.lengths();
        int b = lengths.length;
        int nKv = c.numKvHeads();
        int d = c.headDim();
        boolean equal = equalLengths(lengths);
        MlxArray keys = kv.keys();
        MlxArray values = kv.values();
        if (equal) {
            int[] start = {0, 0, lengths[0], 0};
            int[] stop = {b, nKv, lengths[0] + s, d};
            keys = ops.sliceUpdate(keys, key, start, stop);
            values = ops.sliceUpdate(values, value, start, stop);
        } else {
            for (int r = 0; r < b; r++) {
                int[] from = {r, 0, 0, 0};
                int[] to = {r + 1, nKv, s, d};
                int[] start = {r, 0, lengths[r], 0};
                int[] stop = {r + 1, nKv, lengths[r] + s, d};
                keys = ops.sliceUpdate(keys, ops.slice(key, from, to), start, stop);
                values = ops.sliceUpdate(values, ops.slice(value, from, to), start, stop);
            }
        }
        int[] grown = lengths.clone();
        for (int r = 0; r < b; r++) {
            grown[r] += s;
        }
        return new Kv(keys, values, grown);
    }

    /** {@code [B, 1, S, T]}: query {@code i} of row {@code b} sees key column {@code j} iff {@code j ≤ lengths[b] + i}. */
    private static MlxArray mask(MlxOps ops, int[] lengths, int s, int t) {
        int b = lengths.length;
        boolean[] m = new boolean[b * s * t];
        for (int r = 0; r < b; r++) {
            for (int i = 0; i < s; i++) {
                int last = lengths[r] + i;
                for (int j = 0; j <= last && j < t; j++) {
                    m[(r * s + i) * t + j] = true;
                }
            }
        }
        return ops.fromBools(m, b, 1, s, t);
    }

    @Override
    public void close() {
        for (MlxLinear l : List.of(fc, o, embedding, head)) {
            l.close();
        }
        qkv.close();
        if (moe != null) {
            moe.close();
        } else {
            gateUp.close();
            down.close();
        }
        for (MlxArray a : List.of(preE, preH, inNorm, qNorm, kNorm, postNorm, finalNorm, ropePerm)) {
            a.close();
        }
        if (ropeCos != null) {
            ropeCos.close();
            ropeSin.close();
        }
        for (MlxCompiled f : new MlxCompiled[] {preCompiled, postCompiled, headCompiled}) {
            if (f != null) {
                f.close();
            }
        }
    }
}
