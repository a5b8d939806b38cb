package org.mtporacle.reference.kernels;

import static org.mtporacle.reference.kernels.LaneSum.F;
import static org.mtporacle.reference.kernels.LaneSum.L;

import jdk.incubator.vector.FloatVector;

/**
 * The Gated DeltaNet's output norm, per value head over {@code Dv} (spec §13.2): {@code out = gain ⊙ x·(mean(x²) +
 * ε)^-½ ⊙ silu(z)}, with the plain gain {@code w} (not {@code 1 + w}).
 *
 * <p>Order, as {@link RmsNorm}: {@code Σx²} in f32 ({@code i} ascending for scalar; lane-wise {@code fma},
 * {@link LaneSum}, then the tail in order for vector); the inverse root in f64, rounded to f32 once; each output
 * {@code ((x·inv)·gain)·silu(z)} in f32, {@code silu} as {@link Activations} defines it, in a plain loop in both modes
 * (its f64 {@code exp} dominates). {@code out} may be {@code x} or {@code z} at the same offset.
 */
final class GatedRmsNorm {
    private GatedRmsNorm() {
    }

    static void scalar(float[] out, int outOff, float[] x, int xOff, float[] z, int zOff, float[] gain, int n,
                       int rows, double eps) {
        for (int r = 0; r < rows; r++) {
            int xb = xOff + r * n;
            float ss = 0f;
            for (int i = 0; i < n; i++) {
                ss += x[xb + i] * x[xb + i];
            }
            gate(out, outOff + r * n, x, xb, z, zOff + r * n, gain, n, inverse(ss, n, eps));
        }
    }

    static void vector(float[] out, int outOff, float[] x, int xOff, float[] z, int zOff, float[] gain, int n,
                       int rows, double eps) {
        int end = n - n % L;
        for (int r = 0; r < rows; r++) {
            int xb = xOff + r * n;
            FloatVector acc = FloatVector.zero(F);
            for (int i = 0; i < end; i += L) {
                FloatVector v = FloatVector.fromArray(F, x, xb + i);
                acc = v.fma(v, acc);
            }
            float ss = LaneSum.sum(acc);
            for (int i = end; i < n; i++) {
                ss += x[xb + i] * x[xb + i];
            }
            gate(out, outOff + r * n, x, xb, z, zOff + r * n, gain, n, inverse(ss, n, eps));
        }
    }

    private static float inverse(float ss, int n, double eps) {
        return (float) (1.0 / Math.sqrt((double) ss / n + eps));
    }

    private static void gate(float[] out, int ob, float[] x, int xb, float[] z, int zb, float[] gain, int n,
                             float inv) {
        for (int i = 0; i < n; i++) {
            float zi = z[zb + i];
            out[ob + i] = x[xb + i] * inv * gain[i] * (zi * Activations.sigma(zi));
        }
    }
}
