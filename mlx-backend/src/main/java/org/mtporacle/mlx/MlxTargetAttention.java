package org.mtporacle.mlx;

import org.mtporacle.api.MtpConfig;
import org.mtporacle.api.TargetConfig;
import org.mtporacle.api.TargetWeights;
import org.mtporacle.mlx.ffi.MlxC;
import org.mtporacle.mlx.handle.MlxArray;
import org.mtporacle.mlx.handle.MlxOps;

import java.util.List;

/**
 * A gated full-attention decoder layer of the target on MLX (spec §13.1, the MTP block's attention, §1.5):
 * {@code q_proj} per head {@code [query D | gate D]}, q/k RMSNorms (full gains) before partial RoPE, attention over
 * each row's own cache columns {@code [0, P_b + i]}, {@code out ⊙ σ(gate)} before {@code o_proj}; then the MLP. The
 * cache is {@code [B, nKV, capacity, D]} in the compute dtype; row {@code b} is valid in {@code [0, P_b)}, and a
 * forward writes its {@code S} new positions at {@code [P_b, P_b + S)}. The residual stream and its norms are f32, the
 * products and attention in the compute dtype.
 */
final class MlxTargetAttention implements AutoCloseable {
    private final MtpConfig c;
    private final float eps;
    private final MlxArray inNorm, postNorm;  // full gains, f32 (the residual stream is f32)
    private final MlxArray qNorm, kNorm;      // full gains, compute dtype
    private final MlxStack qkv;
    private final MlxLinear o;
    private final MlxTargetMlp mlp;
    private final int dtype;

    /** The layer's output {@code [B, S, H]} and the cache with the new positions written. */
    record Out(MlxArray y, MlxArray keys, MlxArray values) {
    }

    MlxTargetAttention(MtpConfig c, MlxArray inNorm, MlxArray postNorm, MlxArray qNorm, MlxArray kNorm, MlxStack qkv,
                       MlxLinear o, MlxTargetMlp mlp, int dtype) {
        this.c = c;
        this.eps = (float) c.rmsNormEps();
        this.inNorm = inNorm;
        this.postNorm = postNorm;
        this.qNorm = qNorm;
        this.kNorm = kNorm;
        this.qkv = qkv;
        this.o = o;
        this.mlp = mlp;
        this.dtype = dtype;
    }

    static MlxTargetAttention upload(MlxOps ops, TargetConfig c, TargetWeights.Layer w, int dtype, boolean cpu,
                                     MlxMoe.Path path, List<AutoCloseable> made) {
        TargetWeights.Attention a = (TargetWeights.Attention) w.mixer();
        MlxArray in = MlxGdn.keep(ops, made, ops.fromFloats(w.inputNorm(), w.inputNorm().length), MlxC.MLX_FLOAT32);
        MlxArray post = MlxGdn.keep(ops, made, ops.fromFloats(w.postAttentionNorm(), w.postAttentionNorm().length),
                MlxC.MLX_FLOAT32);
        MlxArray qn = MlxGdn.keep(ops, made, ops.fromFloats(a.qNorm(), a.qNorm().length), dtype);
        MlxArray kn = MlxGdn.keep(ops, made, ops.fromFloats(a.kNorm(), a.kNorm().length), dtype);
        MlxStack qkv = MlxStack.upload(ops, List.of(a.qProj(), a.kProj(), a.vProj()), dtype, cpu);
        made.add(qkv);
        MlxLinear o = MlxLinear.upload(ops, a.oProj(), dtype, cpu);
        made.add(o);
        MlxTargetMlp mlp = MlxTargetMlp.upload(ops, w.mlp(), dtype, cpu, path, made);
        made.add(mlp);
        return new MlxTargetAttention(c.shape(), in, post, qn, kn, qkv, o, mlp, dtype);
    }

    /** The layer over {@code x [B, S, H]} for rows that have processed {@code at[b]} tokens; RoPE {@code tables}. */
    Out forward(MlxOps ops, MlxArray x, MlxArray keys, MlxArray values, int[] at, MlxRope rope, MlxArray[] tables) {
        int b = x.dim(0);
        int s = x.dim(1);
        int nH = c.numHeads();
        int nKv = c.numKvHeads();
        int d = c.headDim();
        List<MlxArray> p = qkv.apply(ops, cast(ops, ops.rmsNorm(x, inNorm, eps)));
        MlxArray qg = ops.reshape(p.get(0), b, s, nH, 2 * d);
        MlxArray query = ops.slice(qg, new int[] {0, 0, 0, 0}, new int[] {b, s, nH, d});
        MlxArray gate = ops.reshape(ops.slice(qg, new int[] {0, 0, 0, d}, new int[] {b, s, nH, 2 * d}), b, s, nH * d);
        MlxArray key = ops.reshape(p.get(1), b, s, nKv, d);
        MlxArray value = ops.transpose(ops.reshape(p.get(2), b, s, nKv, d), 0, 2, 1, 3);
        query = ops.transpose(ops.rmsNorm(query, qNorm, eps), 0, 2, 1, 3);
        key = ops.transpose(ops.rmsNorm(key, kNorm, eps), 0, 2, 1, 3);
        if (tables != null) {
            MlxArray both = rope.apply(ops, ops.concatenate(List.of(query, key), 1), tables, dtype);
            query = ops.slice(both, new int[] {0, 0, 0, 0}, new int[] {b, nH, s, d});
            key = ops.slice(both, new int[] {0, nH, 0, 0}, new int[] {b, nH + nKv, s, d});
        }
        // write at each row's end, attend over its own columns
        boolean equal = true;
        int t = 0;
        for (int p0 : at) {
            equal &= p0 == at[0];
            t = Math.max(t, p0 + s);
        }
        MlxArray k2 = keys;
        MlxArray v2 = values;
        if (equal) {
            int[] start = {0, 0, at[0], 0};
            int[] stop = {b, nKv, at[0] + s, d};
            k2 = ops.sliceUpdate(k2, key, start, stop);
            v2 = ops.sliceUpdate(v2, value, start, stop);
        } else {
            for (int r = 0; r < b; r++) {
                int[] from = {r, 0, 0, 0};
                int[] to = {r + 1, nKv, s, d};
                int[] start = {r, 0, at[r], 0};
                int[] stop = {r + 1, nKv, at[r] + s, d};
                k2 = ops.sliceUpdate(k2, ops.slice(key, from, to), start, stop);
                v2 = ops.sliceUpdate(v2, ops.slice(value, from, to), start, stop);
            }
        }
        MlxArray ks = ops.slice(k2, new int[] {0, 0, 0, 0}, new int[] {b, nKv, t, d});
        MlxArray vs = ops.slice(v2, new int[] {0, 0, 0, 0}, new int[] {b, nKv, t, d});
        float scale = (float) c.attentionScale();
        MlxArray attn;
        if (!equal) {
            attn = ops.attention(query, ks, vs, scale, mask(ops, at, s, t));
        } else if (s == 1) {
            attn = ops.attention(query, ks, vs, scale, null);
        } else {
            attn = ops.attentionCausal(query, ks, vs, scale);
        }
        MlxArray merged = ops.reshape(ops.transpose(attn, 0, 2, 1, 3), b, s, nH * d);
        MlxArray h = ops.add(x, o.apply(ops, ops.multiply(merged, ops.sigmoid(gate))));
        MlxArray y = ops.add(h, mlp.apply(ops, cast(ops, ops.rmsNorm(h, postNorm, eps))));
        return new Out(y, k2, v2);
    }

    /** {@code [B, 1, S, T]}: query {@code i} of row {@code b} sees column {@code j} iff {@code j ≤ at[b] + i}. */
    private static MlxArray mask(MlxOps ops, int[] at, int s, int t) {
        int b = at.length;
        boolean[] m = new boolean[b * s * t];
        for (int r = 0; r < b; r++) {
            for (int i = 0; i < s; i++) {
                for (int j = 0; j <= at[r] + i && j < t; j++) {
                    m[(r * s + i) * t + j] = true;
                }
            }
        }
        return ops.fromBools(m, b, 1, s, t);
    }

    private MlxArray cast(MlxOps ops, MlxArray a) {
        return a.dtype() == dtype ? a : ops.astype(a, dtype);
    }

    /** The layer's MLP. */
    MlxTargetMlp mlp() {
        return mlp;
    }

    @Override
    public void close() {
        qkv.close();
        o.close();
        mlp.close();
        for (MlxArray a : List.of(inNorm, postNorm, qNorm, kNorm)) {
            a.close();
        }
    }
}
