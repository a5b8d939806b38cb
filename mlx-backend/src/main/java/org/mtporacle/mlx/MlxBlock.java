package org.mtporacle.mlx;

import org.mtporacle.api.MlpWeights;
import org.mtporacle.api.MtpConfig;
import org.mtporacle.api.MtpWeights;
import org.mtporacle.mlx.ffi.MlxC;
import org.mtporacle.mlx.handle.MlxArray;
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
    private final MlxLinear fc, q, k, v, o, embedding, head;
    private final MlxLinear gate, up, down; // the dense MLP, or null
    private final MlxMoe moe;               // the MoE MLP (spec §12), or null
    private final MlxArray preE, preH, inNorm, qNorm, kNorm, postNorm, finalNorm;

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
        this.c = config;
        this.dtype = dtype;
        this.eps = (float) config.rmsNormEps();
        List<AutoCloseable> made = new ArrayList<>();
        try {
            fc = track(made, MlxLinear.upload(ops, w.fc(), dtype, quantF32));
            q = track(made, MlxLinear.upload(ops, w.qProj(), dtype, quantF32));
            k = track(made, MlxLinear.upload(ops, w.kProj(), dtype, quantF32));
            v = track(made, MlxLinear.upload(ops, w.vProj(), dtype, quantF32));
            o = track(made, MlxLinear.upload(ops, w.oProj(), dtype, quantF32));
            if (w.mlp() instanceof MlpWeights.Moe m) {
                gate = null;
                up = null;
                down = null;
                moe = new MlxMoe(ops, m, dtype, quantF32, moePath, made);
            } else {
                gate = track(made, MlxLinear.upload(ops, w.gateProj(), dtype, quantF32));
                up = track(made, MlxLinear.upload(ops, w.upProj(), dtype, quantF32));
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

    /** {@code [B, S] int32 ids → [B, S, H]} (spec §1.7). */
    MlxArray embed(MlxOps ops, MlxArray ids) {
        return embedding.gather(ops, ids, dtype);
    }

    /** {@code [B, 1, H] → [B, V]} log-probs {@code logits − logsumexp(logits)} in the compute dtype (spec §1.7). */
    MlxArray logProbs(MlxOps ops, MlxArray y) {
        int b = y.dim(0);
        MlxArray logits = ops.reshape(head.apply(ops, y), b, c.vocabSize());
        return ops.subtract(logits, ops.logsumexp(logits, -1, true));
    }

    /**
     * {@code Y = forward(E, Hin)} (spec §1.4) for all {@code B} rows, {@code S} positions each, appended at each row's
     * logical end; the caller has made room ({@code capacity ≥ max(lengths) + S}).
     */
    Step forward(MlxOps ops, MlxArray ids, MlxArray hin, Kv kv) {
        int b = hin.dim(0);
        int s = hin.dim(1);
        int hSize = c.hiddenSize();
        int nH = c.numHeads();
        int nKv = c.numKvHeads();
        int d = c.headDim();
        // 1–3. u = concat(RMSNorm(E), RMSNorm(Hin)), embedding half first; x = u · W_fcᵀ
        MlxArray e = ops.rmsNorm(embed(ops, ids), preE, eps);
        MlxArray g = ops.rmsNorm(hin, preH, eps);
        MlxArray x = fc.apply(ops, ops.concatenate(List.of(e, g), 2));
        // 5. a = RMSNorm(x)
        MlxArray a = ops.rmsNorm(x, inNorm, eps);
        // 1.5.1 query and gate interleaved per head
        MlxArray qg = ops.reshape(q.apply(ops, a), b, s, nH, 2 * d);
        MlxArray query = ops.slice(qg, new int[] {0, 0, 0, 0}, new int[] {b, s, nH, d});
        MlxArray gateHalf = ops.reshape(ops.slice(qg, new int[] {0, 0, 0, d}, new int[] {b, s, nH, 2 * d}),
                b, s, nH * d);
        MlxArray key = ops.reshape(k.apply(ops, a), b, s, nKv, d);
        MlxArray value = ops.reshape(v.apply(ops, a), b, s, nKv, d);
        // 1.5.3 per-head RMSNorm before RoPE; 1.5.4 to [B, heads, S, D]
        query = ops.transpose(ops.rmsNorm(query, qNorm, eps), 0, 2, 1, 3);
        key = ops.transpose(ops.rmsNorm(key, kNorm, eps), 0, 2, 1, 3);
        value = ops.transpose(value, 0, 2, 1, 3);
        // 1.5.5 RoPE at logical positions lengths[b] + t
        MlxArray[] cosSin = rotaryTables(ops, kv.lengths(), s);
        query = rope(ops, query, cosSin);
        key = rope(ops, key, cosSin);
        // 1.5.6 append at each row's logical end
        Kv next = append(ops, kv, key, value, s);
        int t = 0;
        for (int len : kv.lengths()) {
            t = Math.max(t, len + s);
        }
        MlxArray keys = ops.slice(next.keys(), new int[] {0, 0, 0, 0}, new int[] {b, nKv, t, d});
        MlxArray values = ops.slice(next.values(), new int[] {0, 0, 0, 0}, new int[] {b, nKv, t, d});
        // 1.5.7 attention over the row's own columns [0, length_b + i]
        MlxArray attn = ops.attention(query, keys, values, (float) c.attentionScale(), mask(ops, kv.lengths(), s, t));
        // 1.5.8 back to [B, S, nH·D], gate, o_proj
        MlxArray merged = ops.reshape(ops.transpose(attn, 0, 2, 1, 3), b, s, nH * d);
        MlxArray r = o.apply(ops, ops.multiply(merged, ops.sigmoid(gateHalf)));
        // 7–9. h1 = x + r; y = h1 + MLP(RMSNorm(h1))
        MlxArray h1 = ops.add(x, r);
        MlxArray n = ops.rmsNorm(h1, postNorm, eps);
        MlxMoe.Choices experts = null;
        MlxArray m;
        if (moe == null) {
            MlxArray gt = gate.apply(ops, n);
            m = down.apply(ops, ops.multiply(ops.multiply(gt, ops.sigmoid(gt)), up.apply(ops, n)));
        } else {
            MlxMoe.Routed routed = moe.apply(ops, n);
            m = routed.out();
            experts = routed.choices();
        }
        MlxArray y = ops.add(h1, m);
        // 10. Y = RMSNorm(y)
        return new Step(ops.rmsNorm(y, finalNorm, eps), next, experts);
    }

    /** cos and sin {@code [B, 1, S, R/2]} f32 of {@code (lengths[b] + t) · θ^(−2f/R)}, as the reference computes them. */
    private MlxArray[] rotaryTables(MlxOps ops, int[] lengths, int s) {
        int half = c.rotaryDims() / 2;
        int b = lengths.length;
        float[] cos = new float[b * s * half];
        float[] sin = new float[b * s * half];
        for (int r = 0; r < b; r++) {
            for (int t = 0; t < s; t++) {
                int pos = lengths[r] + t;
                for (int f = 0; f < half; f++) {
                    double angle = pos * Math.pow(c.ropeTheta(), -2.0 * f / c.rotaryDims());
                    cos[(r * s + t) * half + f] = (float) Math.cos(angle);
                    sin[(r * s + t) * half + f] = (float) Math.sin(angle);
                }
            }
        }
        return new MlxArray[] {ops.fromFloats(cos, b, 1, s, half), ops.fromFloats(sin, b, 1, s, half)};
    }

    /** Half-split RoPE on the first R features of {@code x [B, heads, S, D]}, in f32 (spec §1.5 step 5). */
    private MlxArray rope(MlxOps ops, MlxArray x, MlxArray[] cosSin) {
        int rDims = c.rotaryDims();
        if (rDims == 0) {
            return x;
        }
        int[] sh = x.shape();
        int half = rDims / 2;
        MlxArray xf = x.dtype() == MlxC.MLX_FLOAT32 ? x : ops.astype(x, MlxC.MLX_FLOAT32);
        MlxArray x1 = ops.slice(xf, new int[] {0, 0, 0, 0}, new int[] {sh[0], sh[1], sh[2], half});
        MlxArray x2 = ops.slice(xf, new int[] {0, 0, 0, half}, new int[] {sh[0], sh[1], sh[2], rDims});
        MlxArray cos = cosSin[0];
        MlxArray sin = cosSin[1];
        MlxArray out1 = ops.subtract(ops.multiply(x1, cos), ops.multiply(x2, sin));
        MlxArray out2 = ops.add(ops.multiply(x1, sin), ops.multiply(x2, cos));
        List<MlxArray> parts = new ArrayList<>(List.of(out1, out2));
        if (rDims < sh[3]) {
            parts.add(ops.slice(xf, new int[] {0, 0, 0, rDims}, sh));
        }
        MlxArray out = ops.concatenate(parts, 3);
        return dtype == MlxC.MLX_FLOAT32 ? out : ops.astype(out, dtype);
    }

    /** Writes {@code k, v [B, nKV, S, D]} at columns {@code [lengths[b], lengths[b] + S)} of each row (spec §4.2). */
    private Kv append(MlxOps ops, Kv kv, MlxArray key, MlxArray value, int s) {
        int[] lengths = kv.lengths();
        int b = lengths.length;
        int nKv = c.numKvHeads();
        int d = c.headDim();
        boolean equal = true;
        for (int len : lengths) {
            equal &= len == lengths[0];
        }
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
        for (MlxLinear l : List.of(fc, q, k, v, o, embedding, head)) {
            l.close();
        }
        if (moe != null) {
            moe.close();
        } else {
            gate.close();
            up.close();
            down.close();
        }
        for (MlxArray a : List.of(preE, preH, inNorm, qNorm, kNorm, postNorm, finalNorm)) {
            a.close();
        }
    }
}
