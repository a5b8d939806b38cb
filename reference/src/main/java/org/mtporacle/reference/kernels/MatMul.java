package org.mtporacle.reference.kernels;

import static org.mtporacle.reference.kernels.LaneSum.F;
import static org.mtporacle.reference.kernels.LaneSum.L;

import jdk.incubator.vector.FloatVector;
import org.mtporacle.api.LinearWeight;

/**
 * {@code out[r, o] = Σ_i x[r, i] · W[o, i]} for {@code r < rows} and output rows {@code [oFrom, oTo)} (spec §1.2):
 * prefill and batched drafting. Each output is computed with exactly {@link MatVec}'s arithmetic, so batched rows
 * equal rows multiplied one at a time (spec §10.1.3).
 *
 * <p>Vector schedule: a panel of weight rows is decoded once into f32 (lane order, affine codes plus lane scales) and
 * reused by every input row; tiles of 4 input rows × 4 weight rows (dense) or 4 × 2 (affine, which also holds chunk
 * sums) keep their accumulators in registers. Edge rows use a one-output kernel with the same per-output order.
 */
final class MatMul {
    /** f32 elements of a decoded weight panel: 256 KiB, so a panel stays in L2 while input rows stream past it. */
    private static final int PANEL_FLOATS = 1 << 16;

    private MatMul() {
    }

    /** The definition: each output is {@link MatVec#scalar} of its input row. */
    static void scalar(float[] out, int outOff, LinearWeight w, float[] x, int xOff, int rows, int oFrom, int oTo) {
        int in = w.inFeatures();
        int outF = w.outFeatures();
        for (int r = 0; r < rows; r++) {
            MatVec.scalar(out, outOff + r * outF, w, x, xOff + r * in, oFrom, oTo);
        }
    }

    /** The Vector API version (class Javadoc). */
    static void vector(float[] out, int outOff, LinearWeight w, float[] x, int xOff, int rows, int oFrom, int oTo) {
        WeightFormat f = WeightFormat.of(w);
        AffineFormat a = f instanceof AffineFormat af ? af : null;
        int in = f.in();
        int n = f.vectorEnd();
        int outF = w.outFeatures();
        int chunks = n / f.chunk();
        int vg = a == null ? 0 : a.vectorGroups();
        float[] xp = new float[rows * in];
        float[] gsum = new float[rows * vg];
        for (int r = 0; r < rows; r++) {
            f.permute(xp, r * in, x, xOff + r * in);
            System.arraycopy(x, xOff + r * in + n, xp, r * in + n, in - n);
            if (a != null) {
                a.groupSums(gsum, r * vg, x, xOff + r * in);
            }
        }
        int panelRows = Math.max(4, PANEL_FLOATS / Math.max(1, in) / 4 * 4);
        float[] panel = new float[panelRows * in];
        float[] scales = new float[panelRows * chunks * L];
        float[] bias = new float[panelRows * vg];
        float[] lanes = new float[16];
        for (int o0 = oFrom; o0 < oTo; o0 += panelRows) {
            int p = Math.min(panelRows, oTo - o0);
            for (int pi = 0; pi < p; pi++) {
                f.decode(panel, pi * in, scales, pi * chunks * L, o0 + pi);
                WeightRows.decodeRange(panel, pi * in + n, w, o0 + pi, n, in);
                if (a != null) {
                    a.biases(bias, pi * vg, o0 + pi);
                }
            }
            int tw = a == null ? 4 : 2;
            for (int r0 = 0; r0 < rows; r0 += 4) {
                int rr = Math.min(4, rows - r0);
                for (int pi = 0; pi < p; pi += tw) {
                    int pp = Math.min(tw, p - pi);
                    if (rr == 4 && pp == tw) {
                        if (a == null) {
                            dense4x4(lanes, xp, r0 * in, in, panel, pi * in, n);
                        } else {
                            affine4x2(lanes, xp, r0 * in, in, panel, pi * in, scales, pi * chunks * L, chunks,
                                    f.chunk() / L);
                        }
                    } else {
                        for (int r = 0; r < rr; r++) {
                            for (int q = 0; q < pp; q++) {
                                lanes[r * tw + q] = one(xp, (r0 + r) * in, panel, (pi + q) * in, scales,
                                        (pi + q) * chunks * L, chunks, a == null ? 0 : f.chunk() / L, n);
                            }
                        }
                    }
                    for (int r = 0; r < rr; r++) {
                        for (int q = 0; q < pp; q++) {
                            int o = o0 + pi + q;
                            float b = a == null ? 0f : a.biasDot(bias, (pi + q) * vg, gsum, (r0 + r) * vg);
                            out[outOff + (r0 + r) * outF + o] = MatVec.finish(lanes[r * tw + q], b, xp,
                                    (r0 + r) * in + n, panel, (pi + q) * in + n, in - n);
                        }
                    }
                }
            }
        }
    }

    /** One output: dense when {@code steps == 0}, else affine chunks of {@code steps} vectors. */
    private static float one(float[] xp, int x0, float[] pan, int w0, float[] sc, int s0, int chunks, int steps,
            int n) {
        FloatVector acc = FloatVector.zero(F);
        if (steps == 0) {
            for (int i = 0; i < n; i += L) {
                acc = FloatVector.fromArray(F, pan, w0 + i).fma(FloatVector.fromArray(F, xp, x0 + i), acc);
            }
            return LaneSum.sum(acc);
        }
        for (int k = 0, i = 0; k < chunks; k++) {
            FloatVector t = FloatVector.zero(F);
            for (int s = 0; s < steps; s++, i += L) {
                t = FloatVector.fromArray(F, pan, w0 + i).fma(FloatVector.fromArray(F, xp, x0 + i), t);
            }
            acc = t.fma(FloatVector.fromArray(F, sc, s0 + k * L), acc);
        }
        return LaneSum.sum(acc);
    }

    /** 4 input rows × 4 dense weight rows; {@code res[r·4 + q]} = lane sum of output (r, q). */
    private static void dense4x4(float[] res, float[] xp, int xb, int in, float[] pan, int wb, int n) {
        FloatVector a00 = FloatVector.zero(F), a01 = FloatVector.zero(F), a02 = FloatVector.zero(F), a03 = FloatVector.zero(F);
        FloatVector a10 = FloatVector.zero(F), a11 = FloatVector.zero(F), a12 = FloatVector.zero(F), a13 = FloatVector.zero(F);
        FloatVector a20 = FloatVector.zero(F), a21 = FloatVector.zero(F), a22 = FloatVector.zero(F), a23 = FloatVector.zero(F);
        FloatVector a30 = FloatVector.zero(F), a31 = FloatVector.zero(F), a32 = FloatVector.zero(F), a33 = FloatVector.zero(F);
        for (int i = 0; i < n; i += L) {
            FloatVector xv0 = FloatVector.fromArray(F, xp, xb + 0 * in + i);
            FloatVector xv1 = FloatVector.fromArray(F, xp, xb + 1 * in + i);
            FloatVector xv2 = FloatVector.fromArray(F, xp, xb + 2 * in + i);
            FloatVector xv3 = FloatVector.fromArray(F, xp, xb + 3 * in + i);
            FloatVector wv0 = FloatVector.fromArray(F, pan, wb + 0 * in + i);
            FloatVector wv1 = FloatVector.fromArray(F, pan, wb + 1 * in + i);
            FloatVector wv2 = FloatVector.fromArray(F, pan, wb + 2 * in + i);
            FloatVector wv3 = FloatVector.fromArray(F, pan, wb + 3 * in + i);
            a00 = wv0.fma(xv0, a00); a10 = wv0.fma(xv1, a10); a20 = wv0.fma(xv2, a20); a30 = wv0.fma(xv3, a30);
            a01 = wv1.fma(xv0, a01); a11 = wv1.fma(xv1, a11); a21 = wv1.fma(xv2, a21); a31 = wv1.fma(xv3, a31);
            a02 = wv2.fma(xv0, a02); a12 = wv2.fma(xv1, a12); a22 = wv2.fma(xv2, a22); a32 = wv2.fma(xv3, a32);
            a03 = wv3.fma(xv0, a03); a13 = wv3.fma(xv1, a13); a23 = wv3.fma(xv2, a23); a33 = wv3.fma(xv3, a33);
        }
        res[0] = LaneSum.sum(a00); res[1] = LaneSum.sum(a01); res[2] = LaneSum.sum(a02); res[3] = LaneSum.sum(a03);
        res[4] = LaneSum.sum(a10); res[5] = LaneSum.sum(a11); res[6] = LaneSum.sum(a12); res[7] = LaneSum.sum(a13);
        res[8] = LaneSum.sum(a20); res[9] = LaneSum.sum(a21); res[10] = LaneSum.sum(a22); res[11] = LaneSum.sum(a23);
        res[12] = LaneSum.sum(a30); res[13] = LaneSum.sum(a31); res[14] = LaneSum.sum(a32); res[15] = LaneSum.sum(a33);
    }

    /** 4 input rows × 2 affine weight rows: per chunk, code sums {@code t}, then {@code acc = fma(t, scales, acc)}. */
    private static void affine4x2(float[] res, float[] xp, int xb, int in, float[] pan, int wb, float[] sc, int s0,
            int chunks, int steps) {
        FloatVector a00 = FloatVector.zero(F), a01 = FloatVector.zero(F);
        FloatVector a10 = FloatVector.zero(F), a11 = FloatVector.zero(F);
        FloatVector a20 = FloatVector.zero(F), a21 = FloatVector.zero(F);
        FloatVector a30 = FloatVector.zero(F), a31 = FloatVector.zero(F);
        int sStride = chunks * L;
        for (int k = 0, i = 0; k < chunks; k++) {
            FloatVector t00 = FloatVector.zero(F), t01 = FloatVector.zero(F);
            FloatVector t10 = FloatVector.zero(F), t11 = FloatVector.zero(F);
            FloatVector t20 = FloatVector.zero(F), t21 = FloatVector.zero(F);
            FloatVector t30 = FloatVector.zero(F), t31 = FloatVector.zero(F);
            for (int s = 0; s < steps; s++, i += L) {
                FloatVector xv0 = FloatVector.fromArray(F, xp, xb + 0 * in + i);
                FloatVector xv1 = FloatVector.fromArray(F, xp, xb + 1 * in + i);
                FloatVector xv2 = FloatVector.fromArray(F, xp, xb + 2 * in + i);
                FloatVector xv3 = FloatVector.fromArray(F, xp, xb + 3 * in + i);
                FloatVector wv0 = FloatVector.fromArray(F, pan, wb + 0 * in + i);
                FloatVector wv1 = FloatVector.fromArray(F, pan, wb + 1 * in + i);
                t00 = wv0.fma(xv0, t00); t10 = wv0.fma(xv1, t10); t20 = wv0.fma(xv2, t20); t30 = wv0.fma(xv3, t30);
                t01 = wv1.fma(xv0, t01); t11 = wv1.fma(xv1, t11); t21 = wv1.fma(xv2, t21); t31 = wv1.fma(xv3, t31);
            }
            FloatVector sv0 = FloatVector.fromArray(F, sc, s0 + 0 * sStride + k * L);
            FloatVector sv1 = FloatVector.fromArray(F, sc, s0 + 1 * sStride + k * L);
            a00 = t00.fma(sv0, a00); a10 = t10.fma(sv0, a10); a20 = t20.fma(sv0, a20); a30 = t30.fma(sv0, a30);
            a01 = t01.fma(sv1, a01); a11 = t11.fma(sv1, a11); a21 = t21.fma(sv1, a21); a31 = t31.fma(sv1, a31);
        }
        res[0] = LaneSum.sum(a00); res[1] = LaneSum.sum(a01);
        res[2] = LaneSum.sum(a10); res[3] = LaneSum.sum(a11);
        res[4] = LaneSum.sum(a20); res[5] = LaneSum.sum(a21);
        res[6] = LaneSum.sum(a30); res[7] = LaneSum.sum(a31);
    }
}
