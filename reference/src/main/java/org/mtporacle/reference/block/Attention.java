package org.mtporacle.reference.block;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;
import org.mtporacle.reference.kernels.Kernels;

/** Scaled dot-product attention of one query head over one row's visible keys (spec §1.5 step 7). */
final class Attention {
    private static final VectorSpecies<Float> F = FloatVector.SPECIES_PREFERRED;
    private static final int L = F.length();

    private Attention() {
    }

    /**
     * {@code p[j] = softmax_j(q·K[j]·scale)} for {@code j < visible}: scores by {@link Kernels#dot}, max subtracted,
     * {@code exp} in f64 rounded to f32, summed in f32 in key order, then each divided by the sum.
     */
    static void softmaxScores(float[] p, Kernels k, float[] q, int qOff, float[] keys, int d, int visible,
                              float scale) {
        float max = Float.NEGATIVE_INFINITY;
        for (int j = 0; j < visible; j++) {
            p[j] = k.dot(q, qOff, keys, j * d, d) * scale;
            max = Math.max(max, p[j]);
        }
        float sum = 0f;
        for (int j = 0; j < visible; j++) {
            p[j] = (float) Math.exp(p[j] - max);
            sum += p[j];
        }
        float inv = 1f / sum;
        for (int j = 0; j < visible; j++) {
            p[j] *= inv;
        }
    }

    /**
     * {@code o[oOff + i] += Σ_j p[j] · V[j, i]}: for each {@code i}, {@code o[i] = o[i] + p[j]·V[j, i]} with keys
     * {@code j} in order, a product then a sum (no fma), so the vector form below equals the plain loop bit for bit.
     * The vector form keeps four vectors of {@code o} in registers while it walks the keys.
     */
    static void weightedSum(float[] o, int oOff, float[] p, float[] values, int d, int visible) {
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
