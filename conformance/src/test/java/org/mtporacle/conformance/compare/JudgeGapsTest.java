package org.mtporacle.conformance.compare;

import org.junit.jupiter.api.Test;
import org.mtporacle.api.RowSampler;
import org.mtporacle.api.Tolerance;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

/** The judge keeps the reference's gap at every greedy position it judges: the calibration data of the allowance. */
class JudgeGapsTest {
    // a 4-token row: token 2 leads token 0 by 0.25, token 1 by 1.5
    private static final float[] LP = {-1.25f, -2.5f, -1.0f, -4.0f};

    @Test
    void anAgreeingGreedyPositionCountsItsGapToTheRunnerUp() {
        Judge j = new Judge(Tolerance.BF16, 4, "the reference");
        assertThat(j.token(0, 0, LP, 0, 2, 2, RowSampler.GREEDY, 0, "backend", "reference")).isNull();
        GapHistogram h = j.gaps();
        assertThat(h.positions()).isEqualTo(1);
        assertThat(h.differing()).isZero();
        assertThat(h.agreeCounts()[(int) (0.25 / GapHistogram.BIN)]).isEqualTo(1);
    }

    @Test
    void aDifferingGreedyPositionCountsTheGapToTheBackendsTokenWhetherOrNotItPasses() {
        Judge j = new Judge(new Tolerance("test", 0.3, 1, 1), 4, "the reference");
        assertThat(j.token(0, 0, LP, 0, 2, 0, RowSampler.GREEDY, 0, "backend", "reference")).isNull();
        assertThat(j.token(0, 1, LP, 0, 2, 1, RowSampler.GREEDY, 1, "backend", "reference")).isNotNull();
        GapHistogram h = j.gaps();
        assertThat(h.differing()).isEqualTo(2);
        assertThat(h.differCounts()[(int) (0.25 / GapHistogram.BIN)]).isEqualTo(1);
        assertThat(h.differBeyond()).isEqualTo(1);
        assertThat(h.maxDifferGap()).isCloseTo(1.5, within(1e-9));
    }

    @Test
    void seededPositionsAreNotCounted() {
        Judge j = new Judge(Tolerance.BF16, 4, "the reference");
        j.token(0, 0, LP, 0, 2, 2, RowSampler.of(1.0, 0, 1.0, 7), 0, "backend", "reference");
        assertThat(j.gaps().positions()).isZero();
    }
}
