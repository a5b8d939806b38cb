package org.mtporacle.reference.kernels;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * {@link StrictExp} against {@link StrictMath#exp}, bit for bit, over every branch of fdlibm's reduction and its
 * edges; and the σ it serves ({@link Activations}) against the scalar definition on every kind of input.
 */
class StrictExpTest {
    private static final long SEED = 0x57E1C7L;

    @Test
    void coveredLanesEqualStrictMathBitForBitAcrossTheRange() {
        SplittableRandom rnd = new SplittableRandom(SEED);
        double[] x = new double[1 << 20];
        for (int i = 0; i < x.length; i++) {
            x[i] = switch (i % 4) {
                case 0 -> (rnd.nextDouble() * 2 - 1) * 708;                    // |x| ≥ 1.5·ln2 mostly
                case 1 -> (rnd.nextDouble() * 2 - 1) * 1.1;                    // the k = ±1 and k = 0 branches
                case 2 -> Math.scalb(rnd.nextDouble() * 2 - 1, -rnd.nextInt(29)); // small magnitudes, down to 2^-28
                default -> -(double) Float.intBitsToFloat(rnd.nextInt());      // σ's arguments: −z for any f32 z
            };
        }
        int covered = check(x);
        assertThat(covered).as("lanes the vector form computed, seed %d", SEED).isGreaterThan(x.length * 7 / 10);
    }

    @Test
    void theBranchEdgesOfTheHighWordAgreeBitForBit() {
        // high words 2^-28, ln2/2, 1.5·ln2 and 708: each edge, one ulp either side, both signs
        double[] edges = {0x1p-28, Double.longBitsToDouble(0x3fd62e42L << 32), Double.longBitsToDouble(0x3fd62e43L << 32),
            Double.longBitsToDouble(0x3FF0A2B2L << 32), Double.longBitsToDouble(0x3FF0A2B1L << 32), 708.0,
            0.5 * Math.log(2), 1.5 * Math.log(2), Math.log(2), 1.0, 0.0, Double.MIN_VALUE, 709.7, 745.2,
            Double.POSITIVE_INFINITY, Double.NaN};
        double[] x = new double[edges.length * 6];
        int n = 0;
        for (double e : edges) {
            for (double v : new double[] {e, Math.nextUp(e), Math.nextDown(e)}) {
                x[n++] = v;
                x[n++] = -v;
            }
        }
        check(x);
    }

    @Test
    void zeroTinyHugeInfiniteAndNaNLanesAmongCoveredOnesEqualStrictMathToo() {
        double[] x = {0.0, 1.5, -0.0, 0x1p-29, -2.5, -0x1p-40, 708.0, 0.3, -708.0, 1e300, Double.NEGATIVE_INFINITY,
            Double.NaN, Math.nextDown(708.0), -Math.nextDown(708.0), 0x1p-28, -745.2, 709.9, -1e-300};
        assertThat(check(x)).isEqualTo(6);
    }

    @Test
    void vectorSigmaEqualsTheScalarDefinitionOnEveryKindOfInput() {
        SplittableRandom rnd = new SplittableRandom(SEED + 1);
        int n = 4099;
        float[] z = new float[n + 3];
        for (int i = 0; i < z.length; i++) {
            z[i] = switch (i % 5) {
                case 0 -> (float) (rnd.nextGaussian() * 8);
                case 1 -> Float.intBitsToFloat(rnd.nextInt());               // any bits: NaN, ±∞, huge, subnormal
                case 2 -> i % 10 == 2 ? 0f : -0f;
                case 3 -> (float) Math.scalb(rnd.nextDouble() - 0.5, -30);   // |z| < 2^-28: StrictMath's tiny branch
                default -> (float) ((rnd.nextDouble() - 0.5) * 2000);        // beyond ±708 half the time
            };
        }
        float[] m = new float[n + 1];
        for (int i = 0; i < m.length; i++) {
            m[i] = (float) rnd.nextGaussian();
        }
        float[] want = new float[n];
        float[] got = new float[n];
        for (boolean silu : new boolean[] {true, false}) {
            for (float[] factor : new float[][] {null, m}) {
                if (silu) {
                    Activations.siluScalar(want, 0, z, 3, factor, 1, n);
                    Activations.siluVector(got, 0, z, 3, factor, 1, n);
                } else {
                    Activations.sigmoidScalar(want, 0, z, 3, factor, 1, n);
                    Activations.sigmoidVector(got, 0, z, 3, factor, 1, n);
                }
                for (int i = 0; i < n; i++) { // NaN payloads aside (the f32 products already differ there)
                    assertThat(Float.floatToIntBits(got[i])).as("%s%s z = %s, seed %d", silu ? "silu" : "σ",
                            factor == null ? "" : "·m", z[3 + i], SEED + 1)
                            .isEqualTo(Float.floatToIntBits(want[i]));
                }
            }
        }
    }

    /** Checks {@link StrictExp#vector} on {@code x} (at an odd offset) against StrictMath; returns the covered count. */
    private static int check(double[] x) {
        double[] in = new double[x.length + 3];
        System.arraycopy(x, 0, in, 3, x.length);
        double[] y = new double[x.length + 1];
        StrictExp.vector(y, 1, in, 3, x.length);
        int covered = 0;
        for (int i = 0; i < x.length; i++) {
            double want = StrictMath.exp(x[i]);
            if (Double.doubleToRawLongBits(y[1 + i]) != Double.doubleToRawLongBits(want)) {
                assertThat(y[1 + i]).as("exp(%s)", x[i]).isEqualTo(want);
            }
            long hx = Double.doubleToRawLongBits(x[i]) >>> 32 & 0x7fffffffL;
            covered += hx >= 0x3e300000L && hx < 0x40862000L ? 1 : 0;
        }
        return covered;
    }
}
