package org.mtporacle.reference.kernels;

import org.mtporacle.api.LinearWeight;

/**
 * {@code out[o] = Σ_i x[i] · W[o, i]} for output rows {@code [oFrom, oTo)}: one input row, the weight streamed once
 * (spec §1.2; decode is memory-bound).
 *
 * <p>Accumulation order. Scalar: {@code i} ascending, {@code acc += x[i]·w[i]} in f32 over the row decoded by
 * {@link WeightRows}. Vector: over the format's vector region, one lane accumulator updated with {@code fma} chunk by
 * chunk in the format's lane order ({@link WeightFormat}; affine rows also fold their bias terms into it, see
 * {@link AffineFormat}); then {@code out = LaneSum(acc) + tail}, where {@code tail = Σ x[i]·w[i]} over
 * {@code [vectorEnd, in)} in order with {@code w} from {@link WeightRows}. {@link MatMul} computes every output with
 * exactly this arithmetic, so a row's result does not depend on how many rows are multiplied with it.
 *
 * <p>BF16 rows are taken four at a time, a quarter of the range apart ({@link WeightFormat.Bf16#dot4}; each row's
 * order unchanged, so the same bits), the rows past the quarters in a pair and alone. Several chains lift one chain's
 * latency bound (one 16-lane {@code fma} per 4 cycles: 8 bytes of BF16 a cycle); rows far apart stream from separate
 * pages, where adjacent rows would put several streams inside each page, which some memory systems serve at half the
 * rate; and four streams keep more of memory busy from one core than two (the 248320-row qwen3.5 head on one thread:
 * about 9 % faster than pairs half the range apart, while eight streams an eighth apart are slower again; figures in
 * docs/cli.md, "mtp bench"). Where the rows have no scalar tail the four rows' loop runs inside the format
 * ({@link WeightFormat.Bf16#quarters}), and where they are a multiple of four chunks long the four streams also run
 * half a row out of step ({@link WeightFormat.Bf16#staggered}), so two of them, not all four, enter a new row (a new
 * page at the qwen3.5 head's 4 KiB rows) at a time, with every row's arithmetic, hence its bits, unchanged. Against a
 * plain read of the same bytes, one thread, 248320 rows: K = 2048 about 1.2× → 1.1×, K = 1024 1.2× → 0.95×, but
 * K = 512 1.03× → 1.12× (blocks of 8 chunks), hence {@link WeightFormat.Bf16#staggers} from K = 64 chunks; and
 * blocks of at most 32 chunks, so that at K = 4096 the lag is still half a page (12288 × 4096: 3.3 ms with the plain
 * quarters, 4.2 ms in quarter-row blocks, 3.0 ms in 32-chunk blocks). At K = 8192 (24576 rows) it did not help
 * (14.9 ms plain, 15.9 ms staggered), so rows of more than 256 chunks keep the plain quarters.
 */
final class MatVec {
    private MatVec() {
    }

    /** The definition: plain loops in the spec's order. */
    static void scalar(float[] out, int outOff, LinearWeight w, float[] x, int xOff, int oFrom, int oTo) {
        int in = w.inFeatures();
        float[] row = new float[in];
        for (int o = oFrom; o < oTo; o++) {
            WeightRows.decodeRow(row, w, o);
            float acc = 0f;
            for (int i = 0; i < in; i++) {
                acc += x[xOff + i] * row[i];
            }
            out[outOff + o] = acc;
        }
    }

    /** The Vector API version: same result up to rounding, fixed order (class Javadoc). */
    static void vector(float[] out, int outOff, LinearWeight w, float[] x, int xOff, int oFrom, int oTo) {
        WeightFormat f = WeightFormat.of(w);
        int in = f.in();
        int n = f.vectorEnd();
        float[] xp = new float[f.preparedSize()];
        f.prepare(xp, 0, x, xOff);
        float[] scratch = new float[f.scratchSize()];
        float[] tail = new float[in - n];
        int o = oFrom;
        if (f instanceof WeightFormat.Bf16 b) {
            float[] four = new float[4];
            int quarter = (oTo - oFrom) / 4;
            if (n == in && quarter > 0) {
                if (b.staggers()) {
                    b.staggered(out, outOff, xp, oFrom, quarter);
                } else {
                    b.quarters(out, outOff, xp, oFrom, quarter);
                }
                o = oFrom + quarter;
            }
            for (; o < oFrom + quarter; o++) {
                b.dot4(o, quarter, xp, 0, four);
                for (int k = 0; k < 4; k++) {
                    emit(out, outOff, w, xp, tail, n, o + k * quarter, four[k]);
                }
            }
            o = oFrom + 4 * quarter; // up to 3 rows past the quarters: a pair, then one alone below
            if (oTo - o >= 2) {
                b.dot2(o, o + 1, xp, 0, four);
                emit(out, outOff, w, xp, tail, n, o, four[0]);
                emit(out, outOff, w, xp, tail, n, o + 1, four[1]);
                o += 2;
            }
        }
        for (; o < oTo; o++) {
            emit(out, outOff, w, xp, tail, n, o, f.dot(o, xp, 0, scratch));
        }
    }

    /** Output {@code o}: its lane sum, then its scalar tail past {@code n} (decoded into {@code tail}) added last. */
    private static void emit(float[] out, int outOff, LinearWeight w, float[] xp, float[] tail, int n, int o,
            float laneSum) {
        int in = w.inFeatures();
        if (n < in) {
            WeightRows.decodeRange(tail, 0, w, o, n, in);
        }
        out[outOff + o] = finish(laneSum, xp, n, tail, 0, in - n);
    }

    /** {@code laneSum + Σ_{i < len} x[xOff+i]·wt[wOff+i]}: the tail added last, in order. */
    static float finish(float laneSum, float[] x, int xOff, float[] wt, int wOff, int len) {
        float t = 0f;
        for (int i = 0; i < len; i++) {
            t += x[xOff + i] * wt[wOff + i];
        }
        return laneSum + t;
    }
}
