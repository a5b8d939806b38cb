package org.mtporacle.reference.kernels;

import static org.mtporacle.reference.kernels.LaneSum.F;
import static org.mtporacle.reference.kernels.LaneSum.L;

import jdk.incubator.vector.FloatVector;

/**
 * {@code out = x · (mean(x²) + ε)^-½ · gain} over each row of {@code n} features (spec §1.6).
 *
 * <p>Order: {@code Σx²} in f32 ({@code i} ascending for scalar; lane-wise {@code fma}, {@link LaneSum}, then the tail
 * in order for vector); the inverse root in f64, rounded to f32 once; each output {@code (x·inv)·gain} in f32.
 */
final class RmsNorm {
    private RmsNorm() {
    }

    static void scalar(float[] out, int outOff, float[] x, int xOff, float[] gain, int n, int rows, double eps) {
        for (int r = 0; r < rows; r++) {
            int xb = xOff + r * n;
            float ss = 0f;
            for (int i = 0; i < n; i++) {
                ss += x[xb + i] * x[xb + i];
            }
            scale(out, outOff + r * n, x, xb, gain, n, inverse(ss, n, eps), 0);
        }
    }

    static void vector(float[] out, int outOff, float[] x, int xOff, float[] gain, int n, int rows, double eps) {
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
            float inv = inverse(ss, n, eps);
            for (int i = 0; i < end; i += L) {
                FloatVector.fromArray(F, x, xb + i).mul(inv).mul(FloatVector.fromArray(F, gain, i)).intoArray(out, ob + i);
            }
            scale(out, ob, x, xb, gain, n, inv, end);
        }
    }

    private static float inverse(float ss, int n, double eps) {
        return (float) (1.0 / Math.sqrt((double) ss / n + eps));
    }

    private static void scale(float[] out, int ob, float[] x, int xb, float[] gain, int n, float inv, int from) {
        for (int i = from; i < n; i++) {
            out[ob + i] = x[xb + i] * inv * gain[i];
        }
    }
}
