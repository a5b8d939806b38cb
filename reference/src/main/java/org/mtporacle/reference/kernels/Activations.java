package org.mtporacle.reference.kernels;

import static org.mtporacle.reference.kernels.LaneSum.F;
import static org.mtporacle.reference.kernels.LaneSum.L;

import jdk.incubator.vector.FloatVector;

/**
 * {@code σ(z) = 1/(1 + e^−z)} and {@code silu(z) = z·σ(z)} elementwise (spec §1.4 step 8, §1.5 step 8), optionally
 * times a second operand: {@code out = act(z) · m} ({@code m} null means 1).
 *
 * <p>{@code σ} is computed in f64 with {@link StrictMath#exp} and rounded to f32 once, in both modes (a vector
 * {@code EXP} may differ between its intrinsic and its fallback); products are f32, {@code (z·σ)·m}.
 */
final class Activations {
    private Activations() {
    }

    /** {@code out[i] = σ(z[i]) · m[i]}. */
    static void sigmoidScalar(float[] out, int outOff, float[] z, int zOff, float[] m, int mOff, int n) {
        for (int i = 0; i < n; i++) {
            float s = sigma(z[zOff + i]);
            out[outOff + i] = m == null ? s : s * m[mOff + i];
        }
    }

    /** {@code out[i] = (z[i] · σ(z[i])) · m[i]}. */
    static void siluScalar(float[] out, int outOff, float[] z, int zOff, float[] m, int mOff, int n) {
        for (int i = 0; i < n; i++) {
            float s = z[zOff + i] * sigma(z[zOff + i]);
            out[outOff + i] = m == null ? s : s * m[mOff + i];
        }
    }

    static void sigmoidVector(float[] out, int outOff, float[] z, int zOff, float[] m, int mOff, int n) {
        float[] s = new float[n];
        for (int i = 0; i < n; i++) {
            s[i] = sigma(z[zOff + i]);
        }
        multiply(out, outOff, s, null, 0, m, mOff, n);
    }

    static void siluVector(float[] out, int outOff, float[] z, int zOff, float[] m, int mOff, int n) {
        float[] s = new float[n];
        for (int i = 0; i < n; i++) {
            s[i] = sigma(z[zOff + i]);
        }
        multiply(out, outOff, s, z, zOff, m, mOff, n);
    }

    /** {@code out = (z·s)·m} with {@code z} or {@code m} null meaning 1. */
    private static void multiply(float[] out, int outOff, float[] s, float[] z, int zOff, float[] m, int mOff, int n) {
        int end = n - n % L;
        for (int i = 0; i < end; i += L) {
            FloatVector v = FloatVector.fromArray(F, s, i);
            if (z != null) {
                v = FloatVector.fromArray(F, z, zOff + i).mul(v);
            }
            if (m != null) {
                v = v.mul(FloatVector.fromArray(F, m, mOff + i));
            }
            v.intoArray(out, outOff + i);
        }
        for (int i = end; i < n; i++) {
            float v = z == null ? s[i] : z[zOff + i] * s[i];
            out[outOff + i] = m == null ? v : v * m[mOff + i];
        }
    }

    /** {@code σ(z) = 1/(1 + e^−z)} in f64, rounded to f32 once. */
    static float sigma(float z) {
        return (float) (1.0 / (1.0 + StrictMath.exp(-(double) z)));
    }
}
