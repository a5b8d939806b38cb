package org.mtporacle.reference.kernels;

import static org.mtporacle.reference.kernels.LaneSum.F;
import static org.mtporacle.reference.kernels.LaneSum.L;

import java.lang.foreign.MemorySegment;
import jdk.incubator.vector.FloatVector;
import org.mtporacle.api.LinearWeight;

/**
 * {@code out[r, o] = Σ_i x[r, i] · W[o, i]} for {@code r < rows} and output rows {@code [oFrom, oTo)} (spec §1.2):
 * prefill and batched drafting. Each output is computed with exactly {@link MatVec}'s arithmetic, so batched rows
 * equal rows multiplied one at a time (spec §10.1.3).
 *
 * <p>Vector schedule. Dense: a panel of weight rows is decoded once into f32 and reused by every input row; tiles of
 * 4 input rows × 4 weight rows keep their accumulators in registers; edge rows use a one-output kernel with the same
 * per-output order. BF16 with at most 8 input rows skips the panel (widening is two instructions, storing and reloading f32 costs more): the
 * same 4 × 4 tiles widen their 4 weight rows straight from memory (4 rows a quarter of the range apart, so that each
 * streams from its own pages), and a block of 4 weight rows stays in L1 while every group of 4 input rows passes.
 * Affine: each output is {@link WeightFormat#dot} of its row, over blocks of weight rows.
 */
final class MatMul {
    /**
     * f32 elements of a decoded weight panel: 512 KiB, so a panel stays in L2 while every input row streams past it.
     * The input rows are re-read once per panel, so larger panels cut that traffic (measured in docs/cli.md,
     * "mtp bench": prefill of 2048 rows × 3584 columns, 29 MB of input).
     */
    private static final int PANEL_FLOATS = 1 << 17;
    /** Affine weight rows per block: their codes stay in L1 while the input rows pass. */
    private static final int AFFINE_BLOCK = 16;
    /** Up to this many input rows (all of them stay in L1/L2) BF16 tiles read weights directly; prefill uses panels. */
    private static final int DIRECT_MAX_ROWS = 8;

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
        int ps = f.preparedSize();
        float[] xp = new float[rows * ps];
        for (int r = 0; r < rows; r++) {
            f.prepare(xp, r * ps, x, xOff + r * f.in());
        }
        if (f instanceof AffineFormat a) {
            affine(out, outOff, a, xp, rows, oFrom, oTo);
        } else if (f instanceof WeightFormat.Bf16 b && rows <= DIRECT_MAX_ROWS) {
            bf16(out, outOff, b, w, xp, rows, oFrom, oTo);
        } else {
            dense(out, outOff, f, w, xp, rows, oFrom, oTo);
        }
    }

    /** Affine: blocks of weight rows stay in cache while every input row takes {@link MatVec}'s row arithmetic. */
    private static void affine(float[] out, int outOff, AffineFormat f, float[] xp, int rows, int oFrom, int oTo) {
        int in = f.in();
        int n = f.vectorEnd();
        int ps = f.preparedSize();
        int outF = f.w().outFeatures();
        float[] scratch = new float[f.scratchSize()];
        float[] tails = new float[AFFINE_BLOCK * (in - n)];
        float[] four = new float[4];
        for (int o0 = oFrom; o0 < oTo; o0 += AFFINE_BLOCK) {
            int p = Math.min(AFFINE_BLOCK, oTo - o0);
            for (int q = 0; q < p && n < in; q++) {
                WeightRows.decodeRange(tails, q * (in - n), f.w(), o0 + q, n, in);
            }
            int r = 0;
            for (; f.hasDot4() && r + 4 <= rows; r += 4) {
                for (int q = 0; q < p; q++) {
                    f.dot4(o0 + q, xp, r * ps, ps, scratch, four);
                    for (int k = 0; k < 4; k++) {
                        out[outOff + (r + k) * outF + o0 + q] = MatVec.finish(four[k], xp, (r + k) * ps + n, tails,
                                q * (in - n), in - n);
                    }
                }
            }
            for (; r < rows; r++) {
                for (int q = 0; q < p; q++) {
                    out[outOff + r * outF + o0 + q] = MatVec.finish(f.dot(o0 + q, xp, r * ps, scratch), xp,
                            r * ps + n, tails, q * (in - n), in - n);
                }
            }
        }
    }

    /** Dense: f32 panels of weight rows, 4 × 4 register tiles, one-output kernels on the edges. */
    private static void dense(float[] out, int outOff, WeightFormat f, LinearWeight w, float[] xp, int rows,
            int oFrom, int oTo) {
        int in = f.in();
        int n = f.vectorEnd();
        int outF = w.outFeatures();
        int panelRows = Math.max(4, PANEL_FLOATS / Math.max(1, in) / 4 * 4);
        float[] panel = new float[panelRows * in];
        float[] lanes = new float[16];
        float[] acc = new float[16 * L];
        for (int o0 = oFrom; o0 < oTo; o0 += panelRows) {
            int p = Math.min(panelRows, oTo - o0);
            for (int pi = 0; pi < p; pi++) {
                f.decode(panel, pi * in, o0 + pi);
                WeightRows.decodeRange(panel, pi * in + n, w, o0 + pi, n, in);
            }
            for (int r0 = 0; r0 < rows; r0 += 4) {
                int rr = Math.min(4, rows - r0);
                for (int pi = 0; pi < p; pi += 4) {
                    int pp = Math.min(4, p - pi);
                    if (rr == 4 && pp == 4) {
                        dense4x4(lanes, acc, xp, r0 * in, in, panel, pi * in, n);
                    } else {
                        for (int r = 0; r < rr; r++) {
                            for (int q = 0; q < pp; q++) {
                                lanes[r * 4 + q] = one(xp, (r0 + r) * in, panel, (pi + q) * in, n);
                            }
                        }
                    }
                    store(out, outOff + r0 * outF + o0 + pi, outF, 1, lanes, rr, pp, xp, r0 * in, panel, pi * in, in,
                            n);
                }
            }
        }
    }

    /**
     * BF16: 4 weight rows at a time, widened in the tile kernels; only their scalar tails are decoded. The 4 rows of a
     * tile are a quarter of the range apart ({@code o, o + Q, o + 2Q, o + 3Q}), so each streams from its own pages:
     * 4 adjacent rows share pages, and this machine's prefetchers serve several interleaved streams inside one page
     * far worse than streams in separate pages. The rows past {@code 4Q} take the same kernels in adjacent groups.
     */
    private static void bf16(float[] out, int outOff, WeightFormat.Bf16 f, LinearWeight w, float[] xp, int rows,
            int oFrom, int oTo) {
        float[] tails = new float[4 * f.in()];
        float[] lanes = new float[16];
        float[] acc = new float[16 * L];
        int quarter = (oTo - oFrom) / 4;
        for (int o = oFrom; o < oFrom + quarter; o++) {
            bf16Rows(out, outOff, f, w, xp, rows, o, quarter, 4, tails, lanes, acc);
        }
        for (int o = oFrom + 4 * quarter; o < oTo; o += 4) {
            bf16Rows(out, outOff, f, w, xp, rows, o, 1, Math.min(4, oTo - o), tails, lanes, acc);
        }
    }

    /** Outputs of the {@code pp ≤ 4} weight rows {@code o + q·step} against every input row. */
    private static void bf16Rows(float[] out, int outOff, WeightFormat.Bf16 f, LinearWeight w, float[] xp, int rows,
            int o, int step, int pp, float[] tails, float[] lanes, float[] acc) {
        int in = f.in();
        int n = f.vectorEnd();
        int outF = w.outFeatures();
        for (int q = 0; q < pp && n < in; q++) {
            WeightRows.decodeRange(tails, q * in + n, w, o + q * step, n, in);
        }
        for (int r0 = 0; r0 < rows; r0 += 4) {
            int rr = Math.min(4, rows - r0);
            if (rr == 4 && pp == 4) {
                bf16x4x4(lanes, acc, xp, r0 * in, in, f.data(), (long) o * in * 2, (long) step * in, n);
            } else {
                for (int r = 0; r < rr; r++) {
                    for (int q = 0; q < pp; q++) {
                        lanes[r * 4 + q] = f.dot(o + q * step, xp, (r0 + r) * in, null);
                    }
                }
            }
            store(out, outOff + r0 * outF + o, outF, step, lanes, rr, pp, xp, r0 * in, tails, 0, in, n);
        }
    }

    /**
     * Writes the {@code rr × pp} tile {@code lanes[r·4 + q]} (weight row {@code q} at output {@code o + q·qStride}) plus
     * each output's tail, added last as in MatVec.
     */
    private static void store(float[] out, int o, int outF, int qStride, float[] lanes, int rr, int pp, float[] xp,
            int x0, float[] pan, int w0, int in, int n) {
        for (int r = 0; r < rr; r++) {
            for (int q = 0; q < pp; q++) {
                float t = 0f;
                for (int i = n; i < in; i++) {
                    t += xp[x0 + r * in + i] * pan[w0 + q * in + i];
                }
                out[o + r * outF + q * qStride] = lanes[r * 4 + q] + t;
            }
        }
    }

    /** One dense output: the lane sum of {@code fma} over the vector region. */
    private static float one(float[] xp, int x0, float[] pan, int w0, int n) {
        FloatVector acc = FloatVector.zero(F);
        for (int i = 0; i < n; i += L) {
            acc = FloatVector.fromArray(F, pan, w0 + i).fma(FloatVector.fromArray(F, xp, x0 + i), acc);
        }
        return LaneSum.sum(acc);
    }

    /** 4 input rows × 4 dense weight rows; {@code res[r·4 + q]} = lane sum of output (r, q) via {@code acc}. */
    private static void dense4x4(float[] res, float[] acc, float[] xp, int xb, int in, float[] pan, int wb, int n) {
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
        a00.intoArray(acc, 0); a01.intoArray(acc, L); a02.intoArray(acc, 2 * L); a03.intoArray(acc, 3 * L);
        a10.intoArray(acc, 4 * L); a11.intoArray(acc, 5 * L); a12.intoArray(acc, 6 * L); a13.intoArray(acc, 7 * L);
        a20.intoArray(acc, 8 * L); a21.intoArray(acc, 9 * L); a22.intoArray(acc, 10 * L); a23.intoArray(acc, 11 * L);
        a30.intoArray(acc, 12 * L); a31.intoArray(acc, 13 * L); a32.intoArray(acc, 14 * L); a33.intoArray(acc, 15 * L);
        LaneSum.sum16(res, 0, acc);
    }

    /** {@link #dense4x4} with the 4 BF16 weight rows ({@code rs} elements apart from {@code wb}) widened in place; {@code res[r·4 + q]} = lane sum of output (r, q) via {@code acc}. */
    private static void bf16x4x4(float[] res, float[] acc, float[] xp, int xb, int in, MemorySegment w, long wb,
            long rs, int n) {
        FloatVector a00 = FloatVector.zero(F), a01 = FloatVector.zero(F), a02 = FloatVector.zero(F), a03 = FloatVector.zero(F);
        FloatVector a10 = FloatVector.zero(F), a11 = FloatVector.zero(F), a12 = FloatVector.zero(F), a13 = FloatVector.zero(F);
        FloatVector a20 = FloatVector.zero(F), a21 = FloatVector.zero(F), a22 = FloatVector.zero(F), a23 = FloatVector.zero(F);
        FloatVector a30 = FloatVector.zero(F), a31 = FloatVector.zero(F), a32 = FloatVector.zero(F), a33 = FloatVector.zero(F);
        for (int i = 0; i < n; i += L) {
            FloatVector xv0 = FloatVector.fromArray(F, xp, xb + 0 * in + i);
            FloatVector xv1 = FloatVector.fromArray(F, xp, xb + 1 * in + i);
            FloatVector xv2 = FloatVector.fromArray(F, xp, xb + 2 * in + i);
            FloatVector xv3 = FloatVector.fromArray(F, xp, xb + 3 * in + i);
            FloatVector wv0 = WeightFormat.Bf16.load(w, wb + 2L * (0L * rs + i));
            FloatVector wv1 = WeightFormat.Bf16.load(w, wb + 2L * (1L * rs + i));
            FloatVector wv2 = WeightFormat.Bf16.load(w, wb + 2L * (2L * rs + i));
            FloatVector wv3 = WeightFormat.Bf16.load(w, wb + 2L * (3L * rs + i));
            a00 = wv0.fma(xv0, a00); a10 = wv0.fma(xv1, a10); a20 = wv0.fma(xv2, a20); a30 = wv0.fma(xv3, a30);
            a01 = wv1.fma(xv0, a01); a11 = wv1.fma(xv1, a11); a21 = wv1.fma(xv2, a21); a31 = wv1.fma(xv3, a31);
            a02 = wv2.fma(xv0, a02); a12 = wv2.fma(xv1, a12); a22 = wv2.fma(xv2, a22); a32 = wv2.fma(xv3, a32);
            a03 = wv3.fma(xv0, a03); a13 = wv3.fma(xv1, a13); a23 = wv3.fma(xv2, a23); a33 = wv3.fma(xv3, a33);
        }
        a00.intoArray(acc, 0); a01.intoArray(acc, L); a02.intoArray(acc, 2 * L); a03.intoArray(acc, 3 * L);
        a10.intoArray(acc, 4 * L); a11.intoArray(acc, 5 * L); a12.intoArray(acc, 6 * L); a13.intoArray(acc, 7 * L);
        a20.intoArray(acc, 8 * L); a21.intoArray(acc, 9 * L); a22.intoArray(acc, 10 * L); a23.intoArray(acc, 11 * L);
        a30.intoArray(acc, 12 * L); a31.intoArray(acc, 13 * L); a32.intoArray(acc, 14 * L); a33.intoArray(acc, 15 * L);
        LaneSum.sum16(res, 0, acc);
    }
}
