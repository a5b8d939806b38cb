package org.mtporacle.reference.kernels;

import jdk.incubator.vector.DoubleVector;
import jdk.incubator.vector.VectorOperators;

/**
 * {@code e^x} in f64 for {@code x ≤ 0} (the log-softmax terms, spec §1.7), one formula in both modes: {@code k =
 * rint(x·log2 e)} by the {@code 1.5·2^52} shift, {@code r = x − k·ln2} in two {@code fma} steps (Cody–Waite), the
 * degree-12 Taylor polynomial of {@code e^r} by Horner with {@code fma}, times {@code 2^k} built from exponent bits.
 * Every step is one IEEE operation, so {@link #scalar} and {@link #vector} agree bit for bit; within about 2 ulp of
 * {@link StrictMath#exp}. Below {@code −708} (where {@code 2^k} would be subnormal) the result is 0; NaN stays NaN.
 */
final class Exp {
    private static final double SHIFT = 0x1.8p52;
    private static final double LOG2E = 0x1.71547652b82fep0;
    private static final double LN2_HI = 0x1.62e42fee00000p-1;
    private static final double LN2_LO = 0x1.a39ef35793c76p-33;
    private static final double MIN = -708.0;
    /** {@code 1/j!} for {@code j = 12 … 2}. */
    private static final double[] C = coefficients();

    private Exp() {
    }

    static double scalar(double x) {
        double k = Math.fma(x, LOG2E, SHIFT) - SHIFT;
        double r = Math.fma(k, -LN2_HI, x);
        r = Math.fma(k, -LN2_LO, r);
        double p = C[0];
        for (int j = 1; j < C.length; j++) {
            p = Math.fma(p, r, C[j]);
        }
        p = Math.fma(p, r, 1.0);
        p = Math.fma(p, r, 1.0);
        double y = p * Double.longBitsToDouble(((long) k + 1023) << 52);
        return x < MIN ? 0.0 : y;
    }

    static DoubleVector vector(DoubleVector x) {
        var d = x.species();
        DoubleVector one = DoubleVector.broadcast(d, 1.0);
        DoubleVector k = x.fma(DoubleVector.broadcast(d, LOG2E), DoubleVector.broadcast(d, SHIFT)).sub(SHIFT);
        DoubleVector r = k.fma(DoubleVector.broadcast(d, -LN2_HI), x);
        r = k.fma(DoubleVector.broadcast(d, -LN2_LO), r);
        DoubleVector p = DoubleVector.broadcast(d, C[0]);
        for (int j = 1; j < C.length; j++) {
            p = p.fma(r, DoubleVector.broadcast(d, C[j]));
        }
        p = p.fma(r, one);
        p = p.fma(r, one);
        DoubleVector scale = k.convert(VectorOperators.D2L, 0).lanewise(VectorOperators.ADD, 1023)
                .lanewise(VectorOperators.LSHL, 52).reinterpretAsDoubles();
        return p.mul(scale).blend(0.0, x.compare(VectorOperators.LT, MIN));
    }

    private static double[] coefficients() {
        double[] c = new double[11];
        for (int j = 12; j >= 2; j--) {
            double f = 1;
            for (int i = 2; i <= j; i++) {
                f *= i;
            }
            c[12 - j] = 1.0 / f;
        }
        return c;
    }
}
