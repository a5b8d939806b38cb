package org.mtporacle.conformance.target.router;

import org.junit.jupiter.api.Test;
import org.mtporacle.conformance.target.lockstep.TargetDivergence;
import org.mtporacle.conformance.target.lockstep.TargetJudge;
import org.mtporacle.conformance.target.lockstep.TargetTolerance;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link TargetJudge#routerChoice} on hand-made router probabilities (spec §12.5): the gap is
 * {@code max p(dropped) − min p(added)}, worked out by hand below; the profiles' router bounds decide.
 */
class TargetJudgeRouterTest {
    // E = 5, K = 2: the reference chose {1, 3} (0.30, 0.25); expert 4 trails expert 3 by 0.01, expert 0 by 0.15
    private static final float[] PROBS = {0.10f, 0.30f, 0.05f, 0.25f, 0.24f};
    private static final int[] OURS = {1, 3};

    @Test
    void theSameSetInAnotherOrderAgreesUnderExact() {
        TargetJudge j = new TargetJudge(TargetTolerance.EXACT);
        assertThat(j.routerChoice("verify", 0, 3, 1, PROBS, OURS, new int[] {3, 1})).isNull();
        assertThat(j.routerTally().compared()).isEqualTo(1);
        assertThat(j.routerTally().nearTies()).isZero();
    }

    @Test
    void aNearTieWithinTheBf16BoundPassesAndIsCounted() {
        TargetJudge j = new TargetJudge(TargetTolerance.BF16);
        // dropped 3 (0.25), added 4 (0.24): gap 0.01 ≤ the bf16 router gap
        assertThat(j.routerChoice("prefill", 1, 7, 2, PROBS, OURS, new int[] {1, 4})).isNull();
        assertThat(j.routerTally().nearTies()).isEqualTo(1);
        assertThat(j.routerTally().maxGap()).isCloseTo(0.01, org.assertj.core.data.Offset.offset(1e-6));
    }

    @Test
    void theSameNearTieIsARouterDivergenceUnderF32WithEveryDetail() {
        TargetJudge j = new TargetJudge(TargetTolerance.F32);
        TargetDivergence d = j.routerChoice("verify", 1, 7, 2, PROBS, OURS, new int[] {1, 4});
        assertThat(d.kind()).isEqualTo(TargetDivergence.Kind.ROUTER);
        assertThat(d.category()).isEqualTo(TargetDivergence.Category.ROUTER);
        assertThat(d.row()).isEqualTo(1);
        assertThat(d.position()).isEqualTo(7);
        assertThat(d.message()).contains("verify row 1 position 7 layer 2", "backend chose experts [1, 4]",
                "reference [1, 3]", "[0.30000, 0.24000] vs [0.30000, 0.25000]", "gap 0.0100", "f32");
    }

    @Test
    void aFarChoiceFailsEvenUnderBf16() {
        TargetJudge j = new TargetJudge(TargetTolerance.BF16);
        // dropped 1 (0.30), added 0 (0.10): gap 0.20
        TargetDivergence d = j.routerChoice("verify", 0, 2, 0, PROBS, OURS, new int[] {0, 3});
        assertThat(d.kind()).isEqualTo(TargetDivergence.Kind.ROUTER);
        assertThat(d.message()).contains("gap 0.200 >");
    }

    @Test
    void exactAcceptsNoExactTieAndSaysTheLowerIndexWins() {
        float[] tied = {0.1f, 0.3f, 0.2f, 0.2f, 0.2f}; // experts 2, 3, 4 tie for the second slot: 2 wins
        TargetJudge exact = new TargetJudge(TargetTolerance.EXACT);
        TargetDivergence d = exact.routerChoice("prefill", 0, 0, 3, tied, new int[] {1, 2}, new int[] {1, 4});
        assertThat(d.kind()).isEqualTo(TargetDivergence.Kind.ROUTER);
        assertThat(d.message()).contains("gap 0", "allows no router near-tie", "the lower index wins");
        TargetJudge f32 = new TargetJudge(TargetTolerance.F32);
        assertThat(f32.routerChoice("prefill", 0, 0, 3, tied, new int[] {1, 2}, new int[] {1, 4})).isNull();
        assertThat(f32.routerTally().nearTies()).isEqualTo(1);
    }

    @Test
    void expertsThatAreNotKDistinctInRangeAreAContractFailure() {
        TargetJudge j = new TargetJudge(TargetTolerance.BF16);
        assertThat(j.routerChoice("verify", 0, 0, 0, PROBS, OURS, new int[] {1, 1}).kind())
                .isEqualTo(TargetDivergence.Kind.CONTRACT);
        assertThat(j.routerChoice("verify", 0, 0, 0, PROBS, OURS, new int[] {1, 5}).kind())
                .isEqualTo(TargetDivergence.Kind.CONTRACT);
        assertThat(j.routerChoice("verify", 0, 0, 0, PROBS, OURS, new int[] {1}).kind())
                .isEqualTo(TargetDivergence.Kind.CONTRACT);
    }
}
