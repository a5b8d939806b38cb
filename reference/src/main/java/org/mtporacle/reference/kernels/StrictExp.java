package org.mtporacle.reference.kernels;

import jdk.incubator.vector.DoubleVector;
import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * {@code y[i] = e^x[i]} exactly as {@link StrictMath#exp}, bit for bit: {@link #scalar} calls it, {@link #vector}
 * runs fdlibm's {@code e_exp.c} (the algorithm {@code StrictMath} specifies) on vectors of doubles with its branches
 * as lane masks, every step the same IEEE operation in the same order. The vector lanes cover {@code 2^-28 ≤ |x| <
 * 708} by the high word of {@code x}, where fdlibm reduces normally; the others (zero, tiny, huge, infinite, NaN) take
 * {@code StrictMath.exp}.
 *
 * <p>Reduction: {@code |x| ≤ ln2/2} keeps {@code k = 0}; {@code |x| < 1.5·ln2} takes {@code k = ±1}, {@code hi = x ∓
 * ln2_hi}, {@code lo = ±ln2_lo}; otherwise {@code k = (int)(x/ln2 ± ½)}, {@code hi = x − k·ln2_hi}, {@code lo =
 * k·ln2_lo}; and {@code r = hi − lo}. Then {@code t = r²}, {@code c = r − t·(P1 + t·(P2 + t·(P3 + t·(P4 + t·P5))))},
 * and {@code e^x = 1 − ((r·c)/(c − 2) − r)} when {@code k = 0}, else {@code (1 − ((lo − (r·c)/(2 − c)) − hi))·2^k}
 * with {@code k} added to the exponent bits.
 */
final class StrictExp {
    private static final VectorSpecies<Double> D = DoubleVector.SPECIES_PREFERRED;
    private static final double LN2_HI = 0x1.62e42feep-1;
    private static final double LN2_LO = 0x1.a39ef35793c76p-33;
    private static final double INV_LN2 = 0x1.71547652b82fep0;
    private static final double P1 = 0x1.555555555553ep-3;
    private static final double P2 = -0x1.6c16c16bebd93p-9;
    private static final double P3 = 0x1.1566aaf25de2cp-14;
    private static final double P4 = -0x1.bbd41c5d26bf1p-20;
    private static final double P5 = 0x1.6376972bea4d0p-25;
    /** High words of {@code |x|}: {@code 2^-28}, {@code ln2/2}, {@code 1.5·ln2}, {@code 708}. */
    private static final long TINY = 0x3e300000L, HALF_LN2 = 0x3fd62e42L, NEAR = 0x3FF0A2B2L, LIMIT = 0x40862000L;

    private StrictExp() {
    }

    static void scalar(double[] y, int yOff, double[] x, int xOff, int n) {
        for (int i = 0; i < n; i++) {
            y[yOff + i] = StrictMath.exp(x[xOff + i]);
        }
    }

    /**
     * {@link #scalar}'s bits, fdlibm's steps on the lanes they cover (class Javadoc), one loop without calls (a
     * vector passed to a method that is not inlined is boxed). {@code y} may be {@code x} at the same offset.
     */
    static void vector(double[] y, int yOff, double[] x, int xOff, int n) {
        DoubleVector one = DoubleVector.broadcast(D, 1.0);
        int i = 0;
        for (; i + D.length() <= n; i += D.length()) {
            DoubleVector v = DoubleVector.fromArray(D, x, xOff + i);
            LongVector bits = v.reinterpretAsLongs();
            LongVector hx = bits.lanewise(VectorOperators.LSHR, 32).and(0x7fffffffL);
            VectorMask<Double> covered = hx.compare(VectorOperators.GE, TINY)
                    .and(hx.compare(VectorOperators.LT, LIMIT)).cast(D);
            VectorMask<Double> negative = bits.compare(VectorOperators.LT, 0L).cast(D);
            VectorMask<Double> reduced = hx.compare(VectorOperators.GT, HALF_LN2).cast(D);
            VectorMask<Double> nearOne = reduced.and(hx.compare(VectorOperators.LT, NEAR).cast(D));
            // |x| ≥ 1.5·ln2: k = (int)(invln2·x ± ½), truncated toward zero; ln2/2 < |x| < 1.5·ln2: k = ±1
            DoubleVector sign = one.blend(-1.0, negative);
            DoubleVector k = (DoubleVector) v.mul(INV_LN2).add(sign.mul(0.5)).convert(VectorOperators.D2L, 0)
                    .convert(VectorOperators.L2D, 0);
            DoubleVector hi = v.sub(k.mul(LN2_HI)).blend(v.sub(sign.mul(LN2_HI)), nearOne);
            DoubleVector lo = k.mul(LN2_LO).blend(sign.mul(LN2_LO), nearOne);
            k = k.blend(sign, nearOne).blend(0.0, reduced.not());
            DoubleVector r = hi.sub(lo).blend(v, reduced.not());
            DoubleVector t = r.mul(r);
            DoubleVector c = r.sub(t.mul(t.mul(t.mul(t.mul(t.mul(P5).add(P4)).add(P3)).add(P2)).add(P1)));
            // (r·c)/(2 − c) = −(r·c)/(c − 2) and lo − (−q) = lo + q exactly: one division serves both forms
            DoubleVector q = r.mul(c).div(c.sub(2.0));
            DoubleVector y0 = one.sub(q.sub(r));
            DoubleVector y1 = one.sub(lo.add(q).sub(hi));
            LongVector power = ((LongVector) k.convert(VectorOperators.D2L, 0)).lanewise(VectorOperators.LSHL, 52);
            y1.blend(y0, reduced.not()).reinterpretAsLongs().add(power).reinterpretAsDoubles()
                    .intoArray(y, yOff + i);
            for (int j = 0; j < D.length() && !covered.allTrue(); j++) {
                if (!covered.laneIsSet(j)) {
                    y[yOff + i + j] = StrictMath.exp(v.lane(j));
                }
            }
        }
        scalar(y, yOff + i, x, xOff + i, n - i);
    }
}
