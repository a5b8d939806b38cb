package org.mtporacle.reference.kernels;

import static org.mtporacle.reference.kernels.LaneSum.F;
import static org.mtporacle.reference.kernels.LaneSum.L;

import jdk.incubator.vector.FloatVector;

/**
 * Rotates features {@code [0, R)} of one head vector in place, half-split layout (spec §1.5 step 5): pairs
 * {@code (f, f+R/2)}, {@code ω_f = θ^(−2f/R)}, {@code φ = pos·ω_f},
 * {@code (a, b) → (a·cosφ − b·sinφ, a·sinφ + b·cosφ)}.
 *
 * <p>Angles, cosines and sines are computed in f64 with {@link StrictMath} (bit-reproducible on every JVM) and rounded
 * to f32 once; the rotation is f32, the same expression in both modes, so scalar and vector agree bit for bit.
 */
final class Rope {
    private Rope() {
    }

    static void scalar(float[] x, int off, int rotaryDims, double theta, int position) {
        int half = rotaryDims / 2;
        for (int f = 0; f < half; f++) {
            double angle = position * StrictMath.pow(theta, -2.0 * f / rotaryDims);
            rotate(x, off, half, f, (float) StrictMath.cos(angle), (float) StrictMath.sin(angle));
        }
    }

    static void vector(float[] x, int off, int rotaryDims, double theta, int position) {
        int half = rotaryDims / 2;
        int end = half - half % L;
        float[] cos = new float[half];
        float[] sin = new float[half];
        for (int f = 0; f < half; f++) {
            double angle = position * StrictMath.pow(theta, -2.0 * f / rotaryDims);
            cos[f] = (float) StrictMath.cos(angle);
            sin[f] = (float) StrictMath.sin(angle);
        }
        for (int f = 0; f < end; f += L) {
            FloatVector a = FloatVector.fromArray(F, x, off + f);
            FloatVector b = FloatVector.fromArray(F, x, off + f + half);
            FloatVector c = FloatVector.fromArray(F, cos, f);
            FloatVector s = FloatVector.fromArray(F, sin, f);
            a.mul(c).sub(b.mul(s)).intoArray(x, off + f);
            a.mul(s).add(b.mul(c)).intoArray(x, off + f + half);
        }
        for (int f = end; f < half; f++) {
            rotate(x, off, half, f, cos[f], sin[f]);
        }
    }

    private static void rotate(float[] x, int off, int half, int f, float c, float s) {
        float a = x[off + f];
        float b = x[off + f + half];
        x[off + f] = a * c - b * s;
        x[off + f + half] = a * s + b * c;
    }
}
