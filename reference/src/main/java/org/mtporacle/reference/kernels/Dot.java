package org.mtporacle.reference.kernels;

import static org.mtporacle.reference.kernels.LaneSum.F;
import static org.mtporacle.reference.kernels.LaneSum.L;

import jdk.incubator.vector.FloatVector;

/**
 * {@code Σ a[i]·b[i]} over {@code n} elements. Scalar: {@code i} ascending, f32. Vector: lane-wise {@code fma},
 * {@link LaneSum}, then the tail in order added last.
 */
final class Dot {
    private Dot() {
    }

    static float scalar(float[] a, int aOff, float[] b, int bOff, int n) {
        float acc = 0f;
        for (int i = 0; i < n; i++) {
            acc += a[aOff + i] * b[bOff + i];
        }
        return acc;
    }

    static float vector(float[] a, int aOff, float[] b, int bOff, int n) {
        int end = n - n % L;
        FloatVector acc = FloatVector.zero(F);
        for (int i = 0; i < end; i += L) {
            acc = FloatVector.fromArray(F, a, aOff + i).fma(FloatVector.fromArray(F, b, bOff + i), acc);
        }
        float s = LaneSum.sum(acc);
        for (int i = end; i < n; i++) {
            s += a[aOff + i] * b[bOff + i];
        }
        return s;
    }
}
