package org.mtporacle.conformance.target.lockstep;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import org.junit.jupiter.api.Test;
import org.mtporacle.api.HostTensor;
import org.mtporacle.conformance.compare.GapHistogram;
import org.mtporacle.conformance.compare.NmseHistogram;

/** The target judge records the data its bf16 bounds are derived from: greedy gaps and NMSEs by kind. */
class TargetJudgeDistributionsTest {
    @Test
    void greedyGapsAreTheReferenceMarginOrTheGapToTheBackendsToken() {
        TargetJudge j = new TargetJudge(TargetTolerance.calibration());
        // row 0, two positions: the reference's logits [1, 3, 2.5] and [4, 0, 3.8]
        HostTensor expected = HostTensor.ofFloats(new float[] {1, 3, 2.5f, 4, 0, 3.8f}, 1, 2, 3);
        // the backend agrees at position 0 (margin 0.5) and picks token 2 at position 1 (gap 4 − 3.8 = 0.2)
        HostTensor actual = HostTensor.ofFloats(new float[] {1, 3, 2.5f, 3.7f, 0, 3.9f}, 1, 2, 3);
        assertThat(j.logits("verify", expected, actual)).isNull();
        GapHistogram g = j.counts().gaps();
        assertThat(g.positions()).isEqualTo(2);
        assertThat(g.differing()).isEqualTo(1);
        assertThat(g.agreeCounts()[(int) (0.5 / GapHistogram.BIN)]).isEqualTo(1);
        assertThat(g.maxDifferGap()).isCloseTo(4 - 3.8f, within(1e-6));
        // one logits NMSE for the row: Σ(a−e)² / Σe² = (0.09 + 0.01) / (1 + 9 + 6.25 + 16 + 0 + 14.44)
        NmseHistogram logits = j.counts().nmse().get("logits");
        assertThat(logits.total()).isEqualTo(1);
        assertThat(logits.max()).isCloseTo(0.1 / 46.69, within(1e-7));
        assertThat(j.counts().nmse().get("taps").total()).isZero();
    }

    @Test
    void stateNmsesAreRecordedByTensorAndSummedByCounts() {
        TargetJudge j = new TargetJudge(TargetTolerance.calibration());
        TargetJudge.RowState e = new TargetJudge.RowState(3, new float[] {1, 2}, new float[] {3}, new float[0],
                new float[] {4});
        TargetJudge.RowState a = new TargetJudge.RowState(3, new float[] {1, 2}, new float[] {3.3f}, new float[0],
                new float[] {4});
        assertThat(j.state(0, "row 0", e, a)).isNull();
        TargetJudge.Counts c = j.counts().plus(j.counts());
        assertThat(c.nmse().get("convWindows").below()).isEqualTo(2);        // exact: 0
        assertThat(c.nmse().get("recurrentStates").max()).isCloseTo(0.09 / 9, within(1e-7));
        assertThat(c.nmse().get("keys").total()).as("an absent tensor is not a comparison").isZero();
        assertThat(c.nmse().get("values").total()).isEqualTo(2);
    }
}
