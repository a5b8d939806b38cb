package org.mtporacle.reference.kernels;

import static org.mtporacle.reference.kernels.LaneSum.F;
import static org.mtporacle.reference.kernels.LaneSum.L;

import jdk.incubator.vector.FloatVector;

/**
 * {@code out = x · (Σx² + 10⁻⁶)^-½ · scale} over each row of {@code n} features, ε inside the root (transformers'
 * {@code l2norm}; spec §13.2): {@code q̂ = l2norm(q)·Dk^-½}, {@code k̂ = l2norm(k)}.
 *
 * <p>Order, as {@link RmsNorm}: {@code Σx²} in f32 ({@code i} ascending for scalar; lane-wise {@code fma},
 * {@link LaneSum}, then the tail in order for vector); {@code scale / √(Σx² + ε)} in f64, rounded to f32 once; each
 * output {@code x·inv} in f32. The modes agree bit for bit when {@code n < L} and to f32 rounding of the sum otherwise.
 */
final class L2Norm {
    /** transformers' {@code l2norm} ε, added to {@code Σx²} inside the root. */
    static final double EPS = 1e-6;

    private L2Norm() {
    }

    static void scalar(float[] out, int outOff, float[] x, int xOff, int n, int rows, float scale) {
        for (int r = 0; r < rows; r++) {
            int xb = xOff + r * n;
            float ss = 0f;
            for (int i = 0; i < n; i++) {
                ss += x[xb + i] * x[xb + i];
            }
            scale(out, outOff + r * n, x, xb, n, inverse(ss, scale), 0);
        }
    }

    static void vector(float[] out, int outOff, float[] x, int xOff, int n, int rows, float scale) {
        int end = n - n % L;
        for (int r = 0; r < rows; r++) {
            int xb = xOff + r * n;
            int ob = outOff + r * n;
            FloatVector acc = FloatVector.zero(F);
            for (int i = 0; i < end; i += L) {
                FloatVector v = FloatVector.fromArray(F, x, xb + i);
                acc = v.fma(v, acc);
            }
            float ss = LaneSum.sum(acc);
            for (int i = end; i < n; i++) {
                ss += x[xb + i] * x[xb + i];
            }
            float inv = inverse(ss, scale);
            for (int i = 0; i < end; i += L) {
                FloatVector.fromArray(F, x, xb + i).mul(inv).intoArray(out, ob + i);
            }
            scale(out, ob, x, xb, n, inv, end);
        }
    }

    private static float inverse(float ss, float scale) {
        return (float) (scale / Math.sqrt((double) ss + EPS));
    }

    private static void scale(float[] out, int ob, float[] x, int xb, int n, float inv, int from) {
        for (int i = from; i < n; i++) {
            out[ob + i] = x[xb + i] * inv;
        }
    }
}
