package org.mtporacle.mlx;

import org.mtporacle.api.MtpConfig;
import org.mtporacle.mlx.ffi.MlxC;
import org.mtporacle.mlx.handle.MlxArray;
import org.mtporacle.mlx.handle.MlxOps;

/**
 * Half-split partial RoPE (spec §1.5 step 5) for the target's attention layers, as {@link MlxBlock} computes it:
 * {@code x · C + x[perm] · S} in f32 over tables of {@code cos θ} and {@code ±sin θ} whose angles are computed in f64
 * ({@link StrictMath}, as the reference) and rounded to f32 once, grown in steps of {@link MlxDraftRows#CAPACITY_STEP} positions. Owns its tables.
 */
final class MlxRope implements AutoCloseable {
    private final MtpConfig c;
    private final MlxArray perm; // [D] int32
    private MlxArray cos, sin;   // [positions, D] f32
    private int positions;

    MlxRope(MlxOps ops, MtpConfig c) {
        this.c = c;
        int d = c.headDim();
        int half = c.rotaryDims() / 2;
        int[] p = new int[d];
        for (int f = 0; f < d; f++) {
            p[f] = f >= c.rotaryDims() ? f : f < half ? f + half : f - half;
        }
        MlxArray a = ops.fromInts(p, d);
        ops.eval(a);
        this.perm = ops.scope().release(a);
    }

    /** {@code C} and {@code S} at positions {@code at[b] + t}: {@code [1 or B, 1, S, D]} f32 each. */
    MlxArray[] tables(MlxOps ops, int[] at, int s) {
        int b = at.length;
        int d = c.headDim();
        int end = 0;
        boolean equal = true;
        for (int p : at) {
            end = Math.max(end, p + s);
            equal &= p == at[0];
        }
        grow(ops, end);
        if (equal) {
            int[] start = {at[0], 0};
            int[] stop = {at[0] + s, d};
            return new MlxArray[] {ops.reshape(ops.slice(cos, start, stop), 1, 1, s, d),
                ops.reshape(ops.slice(sin, start, stop), 1, 1, s, d)};
        }
        int[] pos = new int[b * s];
        for (int r = 0; r < b; r++) {
            for (int t = 0; t < s; t++) {
                pos[r * s + t] = at[r] + t;
            }
        }
        MlxArray idx = ops.fromInts(pos, b, s);
        return new MlxArray[] {ops.reshape(ops.take(cos, idx, 0), b, 1, s, d),
            ops.reshape(ops.take(sin, idx, 0), b, 1, s, d)};
    }

    /** {@code x [B, heads, S, D]} rotated with {@code tables}, back in {@code dtype}. */
    MlxArray apply(MlxOps ops, MlxArray x, MlxArray[] tables, int dtype) {
        MlxArray xf = x.dtype() == MlxC.MLX_FLOAT32 ? x : ops.astype(x, MlxC.MLX_FLOAT32);
        MlxArray out = ops.add(ops.multiply(xf, tables[0]), ops.multiply(ops.take(xf, perm, 3), tables[1]));
        return dtype == MlxC.MLX_FLOAT32 ? out : ops.astype(out, dtype);
    }

    private void grow(MlxOps ops, int end) {
        if (end <= positions) {
            return;
        }
        int step = MlxDraftRows.CAPACITY_STEP;
        int n = Math.toIntExact(((long) end + step - 1) / step * step);
        int d = c.headDim();
        int r = c.rotaryDims();
        int half = r / 2;
        float[] cs = new float[Math.multiplyExact(n, d)];
        float[] sn = new float[cs.length];
        for (int p = 0; p < n; p++) {
            for (int f = 0; f < d; f++) {
                int i = p * d + f;
                if (f >= r) {
                    cs[i] = 1f;
                    continue;
                }
                int g = f < half ? f : f - half;
                double angle = p * StrictMath.pow(c.ropeTheta(), -2.0 * g / r);
                cs[i] = (float) StrictMath.cos(angle);
                float s = (float) StrictMath.sin(angle);
                sn[i] = f < half ? -s : s;
            }
        }
        MlxArray newCos = ops.scope().release(ops.fromFloats(cs, n, d));
        MlxArray newSin = ops.scope().release(ops.fromFloats(sn, n, d));
        freeTables();
        cos = newCos;
        sin = newSin;
        positions = n;
    }

    private void freeTables() {
        if (cos != null) {
            cos.close();
            sin.close();
        }
    }

    @Override
    public void close() {
        freeTables();
        perm.close();
    }
}
