package org.mtporacle.reference.kernels;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.SplittableRandom;
import jdk.incubator.vector.DoubleVector;
import org.junit.jupiter.api.Test;

/** {@link Exp} against {@link StrictMath#exp}, and its two modes against each other. */
class ExpTest {
    /** About 4.5 ulp of f64: Taylor remainder below 1 ulp plus Horner and scaling roundings. */
    private static final double MAX_RELATIVE_ERROR = 1e-15;
    private static final long SEED = 0xE4FL;

    @Test
    void scalarIsWithinAFewUlpOfStrictMath() {
        SplittableRandom rnd = new SplittableRandom(SEED);
        double worst = 0;
        for (int i = 0; i < 1_000_000; i++) {
            double x = i < 1000 ? -i * 0.7077 : -rnd.nextDouble() * (i % 2 == 0 ? 708 : 30);
            double e = StrictMath.exp(x);
            worst = Math.max(worst, Math.abs(Exp.scalar(x) - e) / e);
        }
        assertThat(worst).as("max relative error, seed %d", SEED).isLessThanOrEqualTo(MAX_RELATIVE_ERROR);
        assertThat(Exp.scalar(0.0)).isEqualTo(1.0);
    }

    @Test
    void edgesFlushToZeroAndKeepNaN() {
        assertThat(Exp.scalar(-708.5)).isEqualTo(0.0);
        assertThat(Exp.scalar(Double.NEGATIVE_INFINITY)).isEqualTo(0.0);
        assertThat(Exp.scalar(Double.NaN)).isNaN();
    }

    @Test
    void vectorEqualsScalarBitForBit() {
        SplittableRandom rnd = new SplittableRandom(SEED);
        var d = DoubleVector.SPECIES_PREFERRED;
        double[] x = new double[d.length() * 4096];
        for (int i = 0; i < x.length; i++) {
            x[i] = i % 97 == 0 ? Double.NEGATIVE_INFINITY : i % 89 == 0 ? Double.NaN : -rnd.nextDouble() * 720;
        }
        x[1] = 0.0;
        for (int i = 0; i < x.length; i += d.length()) {
            double[] v = Exp.vector(DoubleVector.fromArray(d, x, i)).toArray();
            for (int j = 0; j < v.length; j++) {
                assertThat(Double.doubleToRawLongBits(v[j]) == Double.doubleToRawLongBits(Exp.scalar(x[i + j]))
                        || Double.isNaN(v[j]) && Double.isNaN(Exp.scalar(x[i + j])))
                        .as("x=%s seed %d", x[i + j], SEED).isTrue();
            }
        }
    }
}
