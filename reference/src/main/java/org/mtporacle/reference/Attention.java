package org.mtporacle.reference;

import org.mtporacle.reference.kernels.Kernels;

/** Scaled dot-product attention of one query head over one row's visible keys (spec §1.5 step 7). */
final class Attention {
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

    /** {@code o[oOff + i] += Σ_j p[j] · V[j, i]}, keys in order. */
    static void weightedSum(float[] o, int oOff, float[] p, float[] values, int d, int visible) {
        for (int j = 0; j < visible; j++) {
            float pj = p[j];
            int base = j * d;
            for (int i = 0; i < d; i++) {
                o[oOff + i] += pj * values[base + i];
            }
        }
    }
}
