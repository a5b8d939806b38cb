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

    @Test
    void aChainsTypicalNmseIsJudgedAtItsEndFromEightComparisonsOn() {
        TargetJudge j = new TargetJudge(TargetTolerance.BF16);
        // keys off by 6 % everywhere: NMSE 0.06² = 3.6e-3 per comparison, far under the per-comparison 0.1
        TargetJudge.RowState e = new TargetJudge.RowState(2, new float[0], new float[0], new float[] {1, -1},
                new float[0]);
        TargetJudge.RowState a = new TargetJudge.RowState(2, new float[0], new float[0], new float[] {1.06f, -1.06f},
                new float[0]);
        for (int i = 0; i < TargetTolerance.TYPICAL_MIN_COMPARISONS - 1; i++) {
            assertThat(j.state(0, "row 0", e, a)).isNull();
        }
        TargetJudge seven = new TargetJudge(TargetTolerance.BF16);
        for (int i = 0; i < TargetTolerance.TYPICAL_MIN_COMPARISONS - 1; i++) {
            seven.state(0, "row 0", e, a);
        }
        assertThat(seven.typical("the chain")).as("7 comparisons: too few to judge").isNull();
        assertThat(seven.counts().nmse()).doesNotContainKey("median.keys");

        assertThat(j.state(0, "row 0", e, a)).isNull();
        TargetDivergence d = j.typical("the chain");
        assertThat(d.kind()).isEqualTo(TargetDivergence.Kind.TYPICAL_NMSE);
        assertThat(d.category()).isEqualTo(TargetDivergence.Category.TYPICAL);
        assertThat(d.message()).startsWith("the chain: typical keys NMSE 0.00360 (the median of the chain's 8 "
                + "comparisons) > 0.00100 bf16");
        assertThat(j.counts().nmse().get("median.keys").total()).isEqualTo(1);

        TargetJudge f32 = new TargetJudge(TargetTolerance.F32);
        TargetJudge.RowState tiny = new TargetJudge.RowState(2, new float[0], new float[0], new float[] {1, -1},
                new float[0]);
        for (int i = 0; i < 8; i++) {
            f32.state(0, "row 0", e, tiny);
        }
        assertThat(f32.typical("the chain")).as("f32 has no typical bound; its per-comparison bound is tight")
                .isNull();
    }
}
