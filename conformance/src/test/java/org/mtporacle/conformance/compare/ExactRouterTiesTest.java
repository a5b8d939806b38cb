package org.mtporacle.conformance.compare;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.mtporacle.api.DraftModel;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.LinearWeight;
import org.mtporacle.api.MlpWeights;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.Tolerance;
import org.mtporacle.conformance.Campaign;
import org.mtporacle.conformance.FixtureRecipe;
import org.mtporacle.conformance.chain.ChainGenerator;
import org.mtporacle.conformance.mutants.HigherIndexTies;
import org.mtporacle.reference.ReferenceBackend;
import org.mtporacle.reference.ReferenceDraftModel;
import org.mtporacle.reference.kernels.KernelMode;

import java.nio.file.Path;
import java.util.Arrays;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Exact router ties (spec §12.3 step 3: on equal probabilities the lower expert index wins) on the fixture built for
 * them, {@code tiny-moe-ties}: a backend held to the reference's bits ({@code exact}) that breaks them toward the
 * higher index is a divergence, where a profile with a router allowance accepts it as a near-tie of gap 0.
 */
class ExactRouterTiesTest {
    private static MtpModel ties;

    @BeforeAll
    static void load() {
        ties = FixtureRecipe.named("tiny-moe-ties").load(Path.of("target", "fixture-cache"));
    }

    @Test
    void theFixtureHasNormTopKProbFalseAndTwinRouterRows() {
        MlpWeights.Moe moe = (MlpWeights.Moe) ties.weights().mlp();
        assertThat(moe.normTopK()).as("norm_topk_prob, Qwen3-Next's flag").isFalse();
        assertThat(moe.numExperts()).isEqualTo(8);
        assertThat(moe.topK()).isEqualTo(3);
        HostTensor router = ((LinearWeight.Dense) moe.router()).weight();
        float[] r = router.toFloatArray();
        int h = router.dim(1);
        for (int e = 0; e < 4; e++) {
            assertThat(Arrays.copyOfRange(r, (e + 4) * h, (e + 5) * h)).as("router row %d = row %d", e + 4, e)
                    .isEqualTo(Arrays.copyOfRange(r, e * h, (e + 1) * h));
            assertThat(Arrays.copyOfRange(r, e * h, (e + 1) * h)).as("row %d is drawn, not zero", e)
                    .isNotEqualTo(new float[h]);
        }
        assertThat(Arrays.copyOfRange(r, 0, h)).isNotEqualTo(Arrays.copyOfRange(r, h, 2 * h));
    }

    @Test
    void anExactTieBrokenTowardTheHigherIndexIsADivergenceUnderExactAndANearTieUnderF32() {
        float[] p = {0.4f, 0.2f, 0.2f, 0.2f};
        int[] ours = {0, 1};
        int[] higher = {0, 3};
        Divergence d = new Judge(Tolerance.EXACT, 8, "the reference").routerChoice(2, 7, p, ours, higher,
                "backend chose");
        assertThat(d).isNotNull();
        assertThat(d.kind()).isEqualTo(Divergence.Kind.ROUTER_CHOICE);
        assertThat(d.message()).contains("row 2 position 7: backend chose experts [0, 3], reference [0, 1]",
                "gap 0.00 and exact allows no router near-tie", "an exact tie broken toward the higher expert "
                        + "index", "the lower index wins");
        Judge f32 = new Judge(Tolerance.F32, 8, "the reference");
        assertThat(f32.routerChoice(2, 7, p, ours, higher, "backend chose")).isNull();
        assertThat(f32.routerTally().nearTies()).isEqualTo(1);
        assertThat(new Judge(Tolerance.EXACT, 8, "the reference").routerChoice(2, 7, p, ours, new int[] {1, 0},
                "backend chose")).as("the same set in another order").isNull();
    }

    private static Campaign.Result run(Tolerance tolerance, DraftModel subject) {
        try (ReferenceDraftModel oracle = ReferenceBackend.load(ties, KernelMode.VECTOR, 1)) {
            Campaign.Settings s = new Campaign.Settings("tiny-moe-ties", "reference-higher-ties", Map.of(),
                    tolerance, 6, 3, 0, 1, ChainGenerator.Limits.defaults(), null, 400);
            return Campaign.run(s, oracle, subject, (d, t, p) -> { });
        }
    }

    @Test
    void underExactAReferenceBreakingTiesTowardTheHigherIndexIsCaughtAndUnderF32ItPassesAsGapZeroNearTies() {
        try (HigherIndexTies subject = new HigherIndexTies(ReferenceBackend.load(ties, KernelMode.VECTOR, 1))) {
            Campaign.Result exact = run(Tolerance.EXACT, subject);
            assertThat(exact.failures()).as("every chain that forwards a row meets a tie").isNotEmpty();
            Campaign.Failure f = exact.failures().getFirst();
            assertThat(f.divergence().kind()).isEqualTo(Divergence.Kind.ROUTER_CHOICE);
            assertThat(f.divergence().message()).contains("an exact tie broken toward the higher expert index");
            assertThat(f.shrunk().size()).isLessThanOrEqualTo(3);

            Campaign.Result f32 = run(Tolerance.F32, subject);
            assertThat(f32.failures()).as("%s", f32.failures()).isEmpty();
            assertThat(f32.stats().router().nearTies()).isPositive();
            assertThat(f32.stats().router().maxGap()).isZero();
        }
        try (ReferenceDraftModel plain = ReferenceBackend.load(ties, KernelMode.VECTOR, 1)) {
            Campaign.Result r = run(Tolerance.EXACT, plain);
            assertThat(r.failures()).as("the reference follows the rule: %s", r.failures()).isEmpty();
            assertThat(r.stats().router().compared()).isPositive();
            assertThat(r.stats().router().nearTies()).isZero();
        }
    }
}
