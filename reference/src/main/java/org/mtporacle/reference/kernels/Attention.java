package org.mtporacle.reference.kernels;

import static org.mtporacle.reference.kernels.LaneSum.F;
import static org.mtporacle.reference.kernels.LaneSum.L;

import java.util.Arrays;
import jdk.incubator.vector.FloatVector;

/**
 * {@code o = Σ_j p_j · V[j]}, {@code p = softmax_j(q·K[j] · scale)}: scaled dot-product attention of one query head
 * over one row's {@code visible} keys (spec §1.5 step 7). Keys and values are rows of stride {@code D} from 0.
 *
 * <p>Order: each score by {@link Dot} (the mode's form) times {@code scale}; the maximum subtracted in f32; {@code
 * e^x} by {@link Exp} in f64, rounded to f32; summed in f32 in key order; each term times the f32 inverse of the
 * sum. Then for each feature {@code i}, {@code o[i] = ((0 + p_0·V[0, i]) + p_1·V[1, i]) + …} in key order, a product
 * then a sum (no fma), so the vector weighted sum equals the scalar one bit for bit: the modes differ only through
 * {@link Dot}.
 */
final class Attention {
    private Attention() {
    }

    /** {@code p[0, visible)} receives the probabilities; {@code o[oOff, oOff + d)} the weighted sum. */
    static void scalar(float[] o, int oOff, float[] p, float[] q, int qOff, float[] keys, float[] values, int d,
                       int visible, float scale) {
        for (int j = 0; j < visible; j++) {
            p[j] = Dot.scalar(q, qOff, keys, j * d, d) * scale;
        }
        softmax(p, visible);
        Arrays.fill(o, oOff, oOff + d, 0f);
        weightedSumScalar(o, oOff, p, values, 0, d, d, visible);
    }

    static void vector(float[] o, int oOff, float[] p, float[] q, int qOff, float[] keys, float[] values, int d,
                       int visible, float scale) {
        for (int j = 0; j < visible; j++) {
            p[j] = Dot.vector(q, qOff, keys, j * d, d) * scale;
        }
        softmax(p, visible);
        Arrays.fill(o, oOff, oOff + d, 0f);
        weightedSumVector(o, oOff, p, values, d, visible);
    }

    /** {@code p[j] = e^(p[j] − max) / Σ e^(p[k] − max)} in place, the order above. */
    private static void softmax(float[] p, int visible) {
        float max = Float.NEGATIVE_INFINITY;
        for (int j = 0; j < visible; j++) {
            max = Math.max(max, p[j]);
        }
        float sum = 0f;
        for (int j = 0; j < visible; j++) {
            p[j] = (float) Exp.scalar(p[j] - max);
            sum += p[j];
        }
        float inv = 1f / sum;
        for (int j = 0; j < visible; j++) {
            p[j] *= inv;
        }
    }

    /** {@code o[oOff + i] += Σ_j p[j] · V[j, i]}, four vectors of {@code o} in registers while it walks the keys. */
    static void weightedSumVector(float[] o, int oOff, float[] p, float[] values, int d, int visible) {
        int i = 0;
        for (; i + 4 * L <= d; i += 4 * L) {
            FloatVector a0 = FloatVector.fromArray(F, o, oOff + i);
            FloatVector a1 = FloatVector.fromArray(F, o, oOff + i + L);
            FloatVector a2 = FloatVector.fromArray(F, o, oOff + i + 2 * L);
            FloatVector a3 = FloatVector.fromArray(F, o, oOff + i + 3 * L);
            for (int j = 0, base = i; j < visible; j++, base += d) {
                FloatVector pj = FloatVector.broadcast(F, p[j]);
                a0 = FloatVector.fromArray(F, values, base).mul(pj).add(a0);
                a1 = FloatVector.fromArray(F, values, base + L).mul(pj).add(a1);
                a2 = FloatVector.fromArray(F, values, base + 2 * L).mul(pj).add(a2);
                a3 = FloatVector.fromArray(F, values, base + 3 * L).mul(pj).add(a3);
            }
            a0.intoArray(o, oOff + i);
            a1.intoArray(o, oOff + i + L);
            a2.intoArray(o, oOff + i + 2 * L);
            a3.intoArray(o, oOff + i + 3 * L);
        }
        for (; i + L <= d; i += L) {
            FloatVector a = FloatVector.fromArray(F, o, oOff + i);
            for (int j = 0, base = i; j < visible; j++, base += d) {
                a = FloatVector.fromArray(F, values, base).mul(FloatVector.broadcast(F, p[j])).add(a);
            }
            a.intoArray(o, oOff + i);
        }
        weightedSumScalar(o, oOff + i, p, values, i, d, d - i, visible);
    }

    /** The definition, over features {@code [from, from + n)} of each value row of stride {@code d}. */
    static void weightedSumScalar(float[] o, int oOff, float[] p, float[] values, int from, int d, int n,
                                  int visible) {
        for (int j = 0; j < visible; j++) {
            float pj = p[j];
            int base = j * d + from;
            for (int i = 0; i < n; i++) {
                o[oOff + i] += pj * values[base + i];
            }
        }
    }
}
