package org.mtporacle.conformance.compare;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;
import static org.assertj.core.api.Assertions.withinPercentage;

class GapCalibrationTest {

    /** erfc at points from a table (Abramowitz & Stegun 7.1), to the approximation's stated 1.2e-7 fractional error. */
    @Test
    void erfcMatchesTabulatedValues() {
        double[][] table = {{0, 1}, {0.5, 0.4795001221869535}, {1, 0.1572992070502851}, {2, 0.004677734981047266},
                {3, 2.209049699858544e-5}, {-1, 1.842700792949715}};
        for (double[] row : table) {
            assertThat(GapCalibration.erfc(row[0])).as("erfc(%s)", row[0]).isCloseTo(row[1],
                    within(1.2e-7 * row[1]));
        }
    }

    /** A histogram whose differing counts are the expected counts of a known error shape: the fit recovers its scale. */
    private static GapHistogram expectedCounts(String shape, double scale, long perBin) {
        long[] agree = new long[GapHistogram.BINS];
        long[] differ = new long[GapHistogram.BINS];
        for (int i = 0; i < GapHistogram.BINS; i++) {
            long d = Math.round(perBin * GapCalibration.survival(shape, scale, GapHistogram.centre(i)));
            differ[i] = d;
            agree[i] = perBin - d;
        }
        return GapHistogram.of(agree, differ, 1_000_000, 0, 0.2);
    }

    @Test
    void maximumLikelihoodRecoversTheScaleOfANormalError() {
        GapCalibration c = GapCalibration.of(expectedCounts("normal", 0.02, 1_000_000));
        assertThat(c.normal().scale()).isCloseTo(0.02, withinPercentage(0.5));
        assertThat(c.normal().logLikelihood()).isGreaterThan(c.laplace().logLikelihood());
    }

    @Test
    void maximumLikelihoodRecoversTheScaleOfALaplaceError() {
        GapCalibration c = GapCalibration.of(expectedCounts("laplace", 0.03, 1_000_000));
        assertThat(c.laplace().scale()).isCloseTo(0.03, withinPercentage(0.5));
        assertThat(c.laplace().logLikelihood()).isGreaterThan(c.normal().logLikelihood());
    }

    /** The closed forms against a plain trapezoid integral of the survival function. */
    @Test
    void tailIntegralsMatchNumericIntegration() {
        for (String shape : new String[] {"normal", "laplace"}) {
            GapCalibration.Fit f = new GapCalibration.Fit(shape, 0.04, 0);
            for (double a : new double[] {0, 0.03, 0.1, 0.2}) {
                double sum = 0;
                double h = 1e-5;
                for (double g = a; g < a + 2; g += h) {
                    sum += h * (GapCalibration.survival(shape, 0.04, g) + GapCalibration.survival(shape, 0.04, g + h))
                            / 2;
                }
                assertThat(GapCalibration.tailIntegral(f, a)).as("%s tail from %s", shape, a)
                        .isCloseTo(sum, within(1e-6 * Math.max(sum, 1e-12) + 1e-13));
            }
        }
    }

    /** For a Laplace error the allowance has a closed form: A = b·ln(M·ρ·b / (2p)). */
    @Test
    void theLaplaceAllowanceSolvesItsClosedForm() {
        GapCalibration c = GapCalibration.of(expectedCounts("laplace", 0.03, 100_000));
        GapCalibration.Fit f = c.laplace();
        double m = 5e6;
        double p = 1e-3;
        double expected = f.scale() * Math.log(m * c.density() * f.scale() / (2 * p));
        assertThat(c.allowance(f, m, p)).isCloseTo(expected, within(1e-9));
        assertThat(c.best()).as("Laplace data are fitted better by the Laplace shape").isEqualTo(f);
        assertThat(c.allowance(m, p)).isEqualTo(c.allowance(f, m, p));
    }

    @Test
    void moreCampaignOrFewerTolerableFailuresNeedALargerAllowance() {
        GapCalibration c = GapCalibration.of(expectedCounts("normal", 0.02, 100_000));
        assertThat(c.allowance(1e7, 1e-3)).isGreaterThan(c.allowance(1e6, 1e-3));
        assertThat(c.allowance(1e6, 1e-4)).isGreaterThan(c.allowance(1e6, 1e-3));
    }

    @Test
    void withNoDifferingPositionTheDataImplyNoAllowance() {
        GapHistogram h = new GapHistogram();
        for (int i = 0; i < 1000; i++) {
            h.add(i * 0.001, false);
        }
        assertThat(GapCalibration.of(h).allowance(1e9, 1e-6)).isZero();
    }

    @Test
    void theHistogramBinsByGapAndKeepsTheLargestDifferingGap() {
        GapHistogram h = new GapHistogram();
        h.add(0.0, true);
        h.add(0.0049, false);
        h.add(0.0051, true);
        h.add(2.5, false);
        assertThat(h.differCounts()[0]).isEqualTo(1);
        assertThat(h.agreeCounts()[0]).isEqualTo(1);
        assertThat(h.differCounts()[1]).isEqualTo(1);
        assertThat(h.agreeBeyond()).isEqualTo(1);
        assertThat(h.positions()).isEqualTo(4);
        assertThat(h.differing()).isEqualTo(2);
        assertThat(h.maxDifferGap()).isEqualTo(0.0051);
        GapHistogram sum = h.copy();
        sum.addAll(h);
        assertThat(sum.positions()).isEqualTo(8);
        assertThat(h.positions()).isEqualTo(4);
    }
}
