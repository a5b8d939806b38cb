package org.mtporacle.reference.kernels;

import static org.mtporacle.reference.kernels.LaneSum.F;
import static org.mtporacle.reference.kernels.LaneSum.L;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;

/**
 * {@code out[i] = logits[i] − logsumexp(logits)} over {@code n} elements (spec §1.7), and {@link #argmax}.
 *
 * <p>Order: the maximum (exact in any order); {@code Σ exp(l − max)} in f64 with {@link StrictMath#exp}, {@code i}
 * ascending; {@code lse = (float) (max + log(sum))}; each output {@code l − lse} in f32. Both modes share this order, so
 * they agree bit for bit; the vector mode only vectorizes the maximum and the subtraction.
 */
final class LogSoftmax {
    private LogSoftmax() {
    }

    static void scalar(float[] out, int outOff, float[] logits, int off, int n) {
        float max = Float.NEGATIVE_INFINITY;
        for (int i = 0; i < n; i++) {
            max = Math.max(max, logits[off + i]);
        }
        float lse = lse(logits, off, n, max);
        for (int i = 0; i < n; i++) {
            out[outOff + i] = logits[off + i] - lse;
        }
    }

    static void vector(float[] out, int outOff, float[] logits, int off, int n) {
        int end = n - n % L;
        FloatVector m = FloatVector.broadcast(F, Float.NEGATIVE_INFINITY);
        for (int i = 0; i < end; i += L) {
            m = m.max(FloatVector.fromArray(F, logits, off + i));
        }
        float max = m.reduceLanes(VectorOperators.MAX);
        for (int i = end; i < n; i++) {
            max = Math.max(max, logits[off + i]);
        }
        float lse = lse(logits, off, n, max);
        for (int i = 0; i < end; i += L) {
            FloatVector.fromArray(F, logits, off + i).sub(lse).intoArray(out, outOff + i);
        }
        for (int i = end; i < n; i++) {
            out[outOff + i] = logits[off + i] - lse;
        }
    }

    private static float lse(float[] logits, int off, int n, float max) {
        double sum = 0;
        for (int i = 0; i < n; i++) {
            sum += StrictMath.exp((double) logits[off + i] - max);
        }
        return (float) (max + StrictMath.log(sum));
    }

    /** The index of the largest of {@code n} values (the first one on ties; NaN is never chosen over a number). */
    static int argmax(float[] v, int off, int n) {
        int best = 0;
        for (int i = 1; i < n; i++) {
            if (v[off + i] > v[off + best]) {
                best = i;
            }
        }
        return best;
    }
}
