package org.mtporacle.conformance.compare;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import org.junit.jupiter.api.Test;

/** The NMSE distributions and the bound their tail implies, on hand-built data. */
class NmseCalibrationTest {
    @Test
    void valuesFallInTheirDecadeBins() {
        NmseHistogram h = new NmseHistogram();
        h.add(1e-5);       // log10 = -5: bin (−5 − (−20))·20 = 300
        h.add(1.2e-5);     // log10 ≈ −4.92: still bin 301 (−4.95 … −4.90)
        h.add(0);          // an exact match: below the range
        h.add(1e3);        // past 10^2: above
        assertThat(h.counts()[300]).isEqualTo(1);
        assertThat(h.counts()[301]).isEqualTo(1);
        assertThat(h.below()).isEqualTo(1);
        assertThat(h.above()).isEqualTo(1);
        assertThat(h.total()).isEqualTo(4);
        assertThat(h.max()).isEqualTo(1e3);
        h.add(Double.NaN);
        assertThat(h.above()).isEqualTo(2);
        assertThat(h.max()).isNaN();
    }

    @Test
    void theBoundExtrapolatesTheFittedTail() {
        // 950 comparisons in the bin [1e−6.05, 1e−6), 50 in [1e−5, 1e−4.95): the tail of 50 sits on u = −5,
        // every excess is half a bin (0.025 decades), so β = 0.025 and log10 B = −5 + 0.025·ln(M·50 / (1000·p))
        NmseHistogram h = new NmseHistogram();
        for (int i = 0; i < 950; i++) {
            h.add(Math.pow(10, -6.025));
        }
        for (int i = 0; i < 50; i++) {
            h.add(Math.pow(10, -4.975));
        }
        NmseCalibration c = NmseCalibration.of(h);
        assertThat(c.tail()).isEqualTo(50);
        assertThat(c.threshold()).isCloseTo(-5.0, within(1e-12));
        assertThat(c.scale()).isCloseTo(0.025, within(1e-12));
        double m = 1e6;
        double p = 1e-3;
        double expected = -5 + 0.025 * Math.log(m * 50 / (1000 * p)); // −4.5568
        assertThat(Math.log10(c.bound(m, p))).isCloseTo(expected, within(1e-9));
        assertThat(Math.log10(c.bound(m, p))).isCloseTo(-4.5568, within(1e-4));
        // a larger campaign, or fewer expected failures, needs a larger bound; a heavier tail too
        assertThat(c.bound(10 * m, p)).isGreaterThan(c.bound(m, p));
        assertThat(c.bound(m, p / 10)).isGreaterThan(c.bound(m, p));
        NmseHistogram heavier = h.copy();
        for (int i = 0; i < 20; i++) {
            heavier.add(Math.pow(10, -3.975));
        }
        assertThat(NmseCalibration.of(heavier).bound(m, p)).isGreaterThan(c.bound(m, p));
    }

    @Test
    void aSmallSampleUsesAllOfItFromItsLowestBin() {
        NmseHistogram h = new NmseHistogram();
        h.add(Math.pow(10, -7.975)); // bin lower edge −8
        h.add(Math.pow(10, -6.975)); // bin lower edge −7
        NmseCalibration c = NmseCalibration.of(h);
        assertThat(c.tail()).isEqualTo(2);
        assertThat(c.threshold()).isCloseTo(-8.0, within(1e-12));
        assertThat(c.scale()).isCloseTo((0.025 + 1.025) / 2, within(1e-12));
        assertThat(NmseCalibration.of(new NmseHistogram()).bound(1e6, 1e-3)).isZero();
    }
}
