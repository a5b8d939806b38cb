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

    /**
     * Where {@code actual} and {@code expected} (equal shapes) differ most: the element's index along each axis named
     * by {@code axes} (the last axes of the shape; leading ones of size 1 are left out), both values, and how many
     * elements differ at all, e.g. {@code "kv head 1, position 3, dim 12: 0.41 vs 0.02 (1 of 64 elements differ)"}.
     * Empty when no element differs.
     */
    public static String largestDifference(HostTensor actual, HostTensor expected, String... axes) {
        long n = expected.elementCount();
        long at = -1;
        double worst = 0;
        long differing = 0;
        for (long i = 0; i < n; i++) {
            double a = actual.getDouble(i);
            double e = expected.getDouble(i);
            double d = Math.abs(a - e);
            if (d > 0 || a != e && !(Double.isNaN(a) && Double.isNaN(e))) {
                differing++;
                if (at < 0 || d > worst || Double.isNaN(d) && !Double.isNaN(worst)) {
                    at = i;
                    worst = d;
                }
            }
        }
        if (at < 0) {
            return "";
        }
        int[] shape = expected.shape();
        long rest = at;
        String[] index = new String[shape.length];
        for (int k = shape.length - 1; k >= 0; k--) {
            index[k] = Long.toString(rest % shape[k]);
            rest /= shape[k];
        }
        java.util.List<String> where = new java.util.ArrayList<>();
        for (int k = 0; k < shape.length; k++) {
            int a = k - (shape.length - axes.length);
            if (a >= 0) {
                where.add(axes[a] + " " + index[k]);
            } else if (shape[k] != 1) {
                where.add("axis " + k + " " + index[k]);
            }
        }
        return String.format(java.util.Locale.ROOT, "%s: %.6g vs %.6g (%d of %d elements differ)",
                String.join(", ", where), actual.getDouble(at), expected.getDouble(at), differing, n);
    }
}
