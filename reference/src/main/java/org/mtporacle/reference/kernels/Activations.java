package org.mtporacle.reference.kernels;

import static org.mtporacle.reference.kernels.LaneSum.F;
import static org.mtporacle.reference.kernels.LaneSum.L;

import jdk.incubator.vector.DoubleVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShape;
import jdk.incubator.vector.VectorSpecies;

/**
 * {@code σ(z) = 1/(1 + e^−z)} and {@code silu(z) = z·σ(z)} elementwise (spec §1.4 step 8, §1.5 step 8), optionally
 * times a second operand: {@code out = act(z) · m} ({@code m} null means 1).
 *
 * <p>{@code σ} is computed in f64 with {@link StrictMath#exp} and rounded to f32 once, in both modes (a vector
 * {@code EXP} may differ between its intrinsic and its fallback; the vector form takes {@link StrictExp}, which is
 * {@code StrictMath.exp} bit for bit); products are f32, {@code (z·σ)·m}.
 */
final class Activations {
    /** Elements per block of {@link #sigmas}' f64 scratch. */
    private static final int BLOCK = 1024;
    /** Doubles of {@code F}'s width, and floats of half of it: one {@code F} of z is two of {@code D}. */
    private static final VectorSpecies<Double> D = VectorSpecies.of(double.class, F.vectorShape());
    private static final VectorSpecies<Float> HALF = VectorSpecies.of(float.class,
            VectorShape.forBitSize(F.vectorBitSize() / 2));

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
        sigmas(s, z, zOff, n);
        multiply(out, outOff, s, null, 0, m, mOff, n);
    }

    static void siluVector(float[] out, int outOff, float[] z, int zOff, float[] m, int mOff, int n) {
        float[] s = new float[n];
        sigmas(s, z, zOff, n);
        multiply(out, outOff, s, z, zOff, m, mOff, n);
    }

    /**
     * {@code s[i] = σ(z[zOff + i])} for {@code i < n}, the bits of {@link #sigma}, in blocks of {@link #BLOCK}:
     * {@code −z} widened, {@code e^−z} by {@link StrictExp#vector} ({@code StrictMath.exp} bit for bit),
     * {@code 1/(1 + e)} in f64 and rounded once.
     */
    private static void sigmas(float[] s, float[] z, int zOff, int n) {
        int half = L / 2;
        double[] x = new double[Math.min(n, BLOCK)];
        DoubleVector one = DoubleVector.broadcast(D, 1.0);
        for (int b = 0; b < n; b += BLOCK) {
            int m = Math.min(BLOCK, n - b);
            int i = 0;
            for (; i + L <= m; i += L) {
                FloatVector zv = FloatVector.fromArray(F, z, zOff + b + i);
                ((DoubleVector) zv.convertShape(VectorOperators.F2D, D, 0)).neg().intoArray(x, i);
                ((DoubleVector) zv.convertShape(VectorOperators.F2D, D, 1)).neg().intoArray(x, i + half);
            }
            for (; i < m; i++) {
                x[i] = -(double) z[zOff + b + i];
            }
            StrictExp.vector(x, 0, x, 0, m);
            for (i = 0; i + half <= m; i += half) {
                DoubleVector sig = one.div(one.add(DoubleVector.fromArray(D, x, i)));
                ((FloatVector) sig.convertShape(VectorOperators.D2F, HALF, 0)).intoArray(s, b + i);
            }
            for (; i < m; i++) {
                s[b + i] = (float) (1.0 / (1.0 + x[i]));
            }
        }
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
