package org.mtporacle.conformance.compare;

import org.junit.jupiter.api.Test;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.RowCheckpoint;
import org.mtporacle.api.RowSampler;
import org.mtporacle.api.Tolerance;
import org.mtporacle.conformance.compare.Divergence.Kind;
import org.mtporacle.conformance.compare.Divergence.TensorEvidence;
import org.mtporacle.conformance.compare.Divergence.TokenEvidence;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

/** The one comparator on hand-made observables whose verdicts are worked out by hand. */
class JudgeTest {
    private static final RowSampler GREEDY = RowSampler.GREEDY;
    private static final Tolerance GAP_QUARTER = new Tolerance("quarter", 0.25, 1e-6, 0);

    private static Judge judge(Tolerance t) {
        return new Judge(t, 4, "the reference");
    }

    @Test
    void aGreedyTokenPassesWhenEqualOrWithinTheGapAndFailsBeyondIt() {
        float[] lp = {-1.0f, -1.25f, -1.5f, -4f}; // the reference prefers 0; 1 is 0.25 behind, 2 is 0.5 behind
        Judge j = judge(GAP_QUARTER);
        assertThat(j.token(0, 0, lp, 0, 0, 0, GREEDY, 0, "drafted", "expected")).isNull();
        assertThat(j.token(0, 1, lp, 0, 0, 1, GREEDY, 1, "drafted", "expected")).as("gap 0.25 = allowance").isNull();
        Divergence d = j.token(2, 3, lp, 0, 0, 2, GREEDY, 7, "backend drafted", "reference").at(5, "backend");
        assertThat(d.kind()).isEqualTo(Kind.DRAFT_TOKEN);
        assertThat(d.category()).isEqualTo(Divergence.Category.DRAFT_TOKEN);
        assertThat(d.actionIndex()).isEqualTo(5);
        assertThat(d.row()).isEqualTo(2);
        assertThat(d.position()).isEqualTo(3);
        TokenEvidence e = (TokenEvidence) d.evidence();
        assertThat(e.expected()).isZero();
        assertThat(e.actual()).isEqualTo(2);
        assertThat(e.expectedLogprob()).isEqualTo(-1.0f);
        assertThat(e.actualLogprob()).isEqualTo(-1.5f);
        assertThat(e.gap()).isCloseTo(0.5, within(1e-12));
        assertThat(e.allowance()).isEqualTo(0.25);
        assertThat(d.message()).isEqualTo("row 2 position 3: backend drafted 2, reference 0 (reference log-probs "
                + "-1.50000 vs -1.00000, gap 0.500 > 0.250 quarter, greedy)");
        assertThat(d.details()).containsEntry("kind", "DRAFT_TOKEN").containsEntry("row", 2)
                .containsEntry("position", 3).containsEntry("gap", 0.5).containsEntry("allowance", 0.25);
        Judge.Counts c = j.counts();
        assertThat(c.comparedTokens()).isEqualTo(3);
        assertThat(c.nearTies()).isEqualTo(1);
        assertThat(c.maxNearTieGap()).isCloseTo(0.25, within(1e-12));
    }

    @Test
    void theExactProfileAllowsNoDifferentTokenEvenAnExactTie() {
        float[] lp = {-1f, -1f, -2f, -3f};
        // tokens 0 and 1 tie; the reference takes the lowest index (spec §7), a backend held to its bits must too
        Divergence tie = judge(Tolerance.EXACT).token(0, 0, lp, 0, 0, 1, GREEDY, 0, "a", "b");
        assertThat(tie).isNotNull();
        assertThat(tie.kind()).isEqualTo(Kind.DRAFT_TOKEN);
        assertThat(tie.message()).contains("gap 0.00 and exact allows no near-tie").contains("lowest index on ties");
        assertThat(judge(Tolerance.EXACT).token(0, 0, lp, 0, 0, 2, GREEDY, 0, "a", "b").message())
                .contains("gap 1.00 and exact allows no near-tie").doesNotContain("lowest index");
        // a looser profile still accepts the tie as a near-tie of gap 0
        Judge f32 = judge(Tolerance.F32);
        assertThat(f32.token(0, 0, lp, 0, 0, 1, GREEDY, 0, "a", "b")).isNull();
        assertThat(f32.counts().nearTies()).isEqualTo(1);
    }

    @Test
    void aSeededTokenIsJudgedByThePerturbationItNeeds() {
        // one certain winner: a token of probability ~1e-9 cannot be drawn by any small perturbation
        float[] lp = {0f, -30f, -30f, -30f};
        RowSampler seeded = RowSampler.of(1.0, 0, 1.0, 42);
        Divergence d = judge(Tolerance.BF16).token(0, 0, lp, 0, 0, 3, seeded, 0, "drafted", "expected");
        assertThat(d).isNotNull();
        assertThat(((TokenEvidence) d.evidence()).gap()).isGreaterThan(Tolerance.BF16.tokenGap());
        assertThat(d.details()).containsEntry("gapUnit", "log-prob (2 x perturbation)");
    }

    @Test
    void recordedLogprobsAndGapsPassWithinTheTokenGapOrWhenEqual() {
        Judge j = judge(GAP_QUARTER);
        assertThat(j.logprob(0, 0, 3, -1.0f, -1.2f)).isNull();
        assertThat(j.logprob(0, 0, 3, Float.NEGATIVE_INFINITY, Float.NEGATIVE_INFINITY)).as("equal infinities")
                .isNull();
        Divergence d = j.logprob(1, 2, 3, -1.0f, -1.5f);
        assertThat(d.kind()).isEqualTo(Kind.LOG_PROB);
        assertThat(d.message()).isEqualTo("row 1 position 2: log-prob of token 3 is -1.5, the reference says -1.0 "
                + "(|Δ| 0.500 > 0.250 quarter)");
        assertThat(j.top2Gap(0, 0, 0.0f, Float.NaN)).as("NaN never passes").isNotNull();
        assertThat(judge(Tolerance.EXACT).top2Gap(0, 0, 0.5f, 0.5f)).isNull();
        assertThat(judge(Tolerance.EXACT).top2Gap(0, 0, 0.5f, Math.nextUp(0.5f)).kind()).isEqualTo(Kind.TOP2_GAP);
    }

    private static HostTensor t(int[] shape, float... v) {
        return HostTensor.ofFloats(v, shape);
    }

    private static RowCheckpoint cp(int p, HostTensor k, HostTensor v, HostTensor h) {
        return new RowCheckpoint(RowCheckpoint.SCHEMA, p, p - 1, "id", k, v, h);
    }

    @Test
    void checkpointTensorsPassAtTheirThresholdAndFailAboveIt() {
        int[] kv = {1, 1, 1, 2};
        int[] hs = {1, 1, 2};
        RowCheckpoint ref = cp(2, t(kv, 3, 4), t(kv, 1, 0), t(hs, 1, 1));
        // keys off by (0, 0.005): NMSE = 0.005² / 25 = 1e-6, exactly the bound
        RowCheckpoint near = cp(2, t(kv, 3, 4.005f), t(kv, 1, 0), t(hs, 1, 1));
        Judge j = judge(GAP_QUARTER);
        assertThat(j.checkpoint(0, "row 0", ref, ref)).isNull();
        double nmse = Math.pow((double) 4.005f - 4, 2) / 25;
        Divergence d = j.checkpoint(0, "row 0", ref, near);
        assertThat(nmse <= 1e-6 ? d == null : d != null).as("NMSE %s against 1e-6", nmse).isTrue();
        // values off by 0.01 on a unit norm: NMSE 1e-4 > 1e-6
        d = j.checkpoint(1, "row 1", ref, cp(2, t(kv, 3, 4), t(kv, 1, 0.01f), t(hs, 1, 1)));
        assertThat(d.kind()).isEqualTo(Kind.CHECKPOINT_TENSOR);
        TensorEvidence e = (TensorEvidence) d.evidence();
        assertThat(e.tensor()).isEqualTo("values");
        assertThat(e.nmse()).isCloseTo(Math.pow(0.01f, 2), within(1e-12));
        assertThat(e.threshold()).isEqualTo(1e-6);
        // the hidden's bound is 0 here: any change fails
        d = j.checkpoint(1, "row 1", ref, cp(2, t(kv, 3, 4), t(kv, 1, 0), t(hs, 1, Math.nextUp(1f))));
        assertThat(((TensorEvidence) d.evidence()).tensor()).isEqualTo("hidden");
        assertThat(j.counts().comparedCheckpoints()).isEqualTo(4);
        assertThat(j.counts().maxKvNmse()).isCloseTo(Math.pow(0.01f, 2), within(1e-12));
    }

    @Test
    void checkpointStateAndShapesComeBeforeNumbers() {
        int[] hs = {1, 1, 2};
        RowCheckpoint one = cp(1, null, null, t(hs, 1, 2));
        Judge j = judge(Tolerance.F32);
        Divergence d = j.checkpoint(0, "row 0", one, new RowCheckpoint(RowCheckpoint.SCHEMA, 1, 1, "id", null, null,
                t(hs, 1, 2)));
        assertThat(d.kind()).isEqualTo(Kind.CHECKPOINT_STATE);
        assertThat(d.message()).isEqualTo("row 0: P=1 draftOffset=1, the reference has P=1 draftOffset=0");
        d = j.checkpoint(0, "row 0", one, new RowCheckpoint(RowCheckpoint.SCHEMA, 1, 0, "other", null, null,
                t(hs, 1, 2)));
        assertThat(d.details()).containsEntry("field", "modelIdentity").containsEntry("actual", "other");
        d = j.checkpoint(0, "row 0", one, cp(1, null, null, t(new int[] {1, 1, 3}, 1, 2, 0)));
        assertThat(d.kind()).isEqualTo(Kind.CHECKPOINT_SHAPE);
        d = j.checkpoint(0, "row 0", one, cp(1, t(new int[] {1, 1, 0, 2}), null, t(hs, 1, 2)));
        assertThat(d.kind()).isEqualTo(Kind.CHECKPOINT_SHAPE);
        assertThat(d.message()).isEqualTo("row 0: keys present, the reference has it absent");
        assertThat(j.checkpoint(0, "row 0", one, null).kind()).isEqualTo(Kind.CONTRACT);
    }

    @Test
    void outcomesCompareSuccessFailureAndKind() {
        Judge j = judge(Tolerance.F32);
        MtpException bad = MtpException.invalidArgument("x: bad");
        assertThat(j.outcome(null, null, null)).isNull();
        assertThat(j.outcome("INVALID_ARGUMENT", "ref says", bad)).isNull();
        assertThat(j.outcome(null, null, bad).kind()).isEqualTo(Kind.UNEXPECTED_ERROR);
        Divergence d = j.outcome("ILLEGAL_STATE", "closed", null);
        assertThat(d.kind()).isEqualTo(Kind.MISSING_ERROR);
        assertThat(d.message()).isEqualTo("succeeded where the reference fails with ILLEGAL_STATE (closed)");
        d = j.outcome("ILLEGAL_STATE", "closed", bad);
        assertThat(d.kind()).isEqualTo(Kind.ERROR_KIND);
        assertThat(d.details()).containsEntry("expectedError", "ILLEGAL_STATE")
                .containsEntry("actualError", "INVALID_ARGUMENT");
        assertThat(j.outcome(null, null, new IllegalStateException("oops")).kind()).isEqualTo(Kind.CONTRACT);
        assertThat(j.outcome(null, null, new IllegalStateException("oops")).category())
                .isEqualTo(Divergence.Category.CONTRACT);
    }

    @Test
    void rowCountsDigestsAndDraftResults() {
        Judge j = judge(Tolerance.F32);
        assertThat(j.rowCount(3, 3)).isNull();
        assertThat(j.rowCount(3, 2).message()).isEqualTo("has 2 rows, the reference has 3");
        assertThat(j.digest(0, "row 0", "ab", "ab", "why")).isNull();
        assertThat(j.digest(0, "row 0", "ab", "cd", "why").kind()).isEqualTo(Kind.CHECKPOINT_DIGEST);
        assertThat(j.draftResult(new int[][] {{0, 3}, {1, 2}}, 2, 2)).isNull();
        assertThat(j.draftResult(new int[][] {{0, 4}, {1, 2}}, 2, 2).kind()).as("id 4 outside V = 4")
                .isEqualTo(Kind.CONTRACT);
        assertThat(j.draftResult(new int[][] {{0, 3}}, 2, 2)).isNotNull();
        assertThat(j.draftResult(null, 0, 0)).isNotNull();
    }

    @Test
    void digestOnlyStatesCompareTheDigestOnlyUnderAnExactProfile() {
        RowCheckpoint c = cp(1, null, null, t(new int[] {1, 1, 1}, 1));
        assertThat(judge(Tolerance.F32).digestOnly(0, "row 0", 1, 0, "aa", c, "bb")).isNull();
        assertThat(judge(Tolerance.EXACT).digestOnly(0, "row 0", 1, 0, "aa", c, "bb").kind())
                .isEqualTo(Kind.CHECKPOINT_DIGEST);
        assertThat(judge(Tolerance.F32).digestOnly(0, "row 0", 2, 1, "aa", c, "aa").kind())
                .isEqualTo(Kind.CHECKPOINT_STATE);
    }
}
