package org.mtporacle.conformance.compare;

import org.mtporacle.api.HostTensor;

/** The normalised mean squared error {@code Σ(a−b)²/Σb²} (llama.cpp's test-backend-ops metric), in f64. */
public final class Nmse {
    private Nmse() {
    }

    /** NMSE of {@code actual} against {@code expected}; {@code Σ(a−b)²} when {@code expected} is all zeros. */
    public static double of(HostTensor actual, HostTensor expected) {
        long n = expected.elementCount();
        double num = 0;
        double den = 0;
        for (long i = 0; i < n; i++) {
            double e = expected.getDouble(i);
            double d = actual.getDouble(i) - e;
            num += d * d;
            den += e * e;
        }
        return den == 0 ? num : num / den;
    }
}
