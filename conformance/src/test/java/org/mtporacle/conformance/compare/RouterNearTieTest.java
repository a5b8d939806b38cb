package org.mtporacle.conformance.compare;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import org.mtporacle.api.DraftModel;
import org.mtporacle.api.DraftRows;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.LinearWeight;
import org.mtporacle.api.MlpWeights;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.MtpWeights;
import org.mtporacle.api.RowCheckpoint;
import org.mtporacle.api.Tolerance;
import org.mtporacle.conformance.Campaign;
import org.mtporacle.conformance.FixtureRecipe;
import org.mtporacle.conformance.chain.ChainGenerator;
import org.mtporacle.conformance.mutants.Mutation;
import org.mtporacle.conformance.mutants.SimpleBackend;
import org.mtporacle.reference.ReferenceBackend;
import org.mtporacle.reference.ReferenceDraftModel;
import org.mtporacle.reference.kernels.KernelMode;

/**
 * Router near-ties (spec §12.5, conformance/SPEC.md "Router choices"): the gap against hand-worked cases and its
 * defining property, the judge's allowance, and a lockstep run in which a backend breaking exact router ties the other
 * way passes only because the reference continues on the backend's experts.
 */
class RouterNearTieTest {
    private static MtpModel tied;

    @Test
    void theGapIsTheLargestDroppedMinusTheSmallestAddedProbability() {
        float[] p = {0.4f, 0.3f, 0.2f, 0.1f};
        assertThat(RouterNearTie.gap(p, new int[] {0, 1}, new int[] {1, 0})).isZero();
        assertThat(RouterNearTie.gap(p, new int[] {0, 1}, new int[] {0, 2})).isCloseTo(0.1, within(1e-7));
        assertThat(RouterNearTie.gap(p, new int[] {0, 1}, new int[] {2, 3})).isCloseTo(0.3, within(1e-7));
        // an exact tie at the boundary: either choice is the top-k, gap 0
        float[] tie = {0.3f, 0.3f, 0.4f};
        assertThat(RouterNearTie.gap(tie, new int[] {2, 0}, new int[] {2, 1})).isZero();
        assertThatThrownBy(() -> RouterNearTie.gap(p, new int[] {0, 1}, new int[] {2, 2}))
                .hasMessageContaining("expected 2 distinct experts in [0, 4)");
        assertThatThrownBy(() -> RouterNearTie.gap(p, new int[] {0, 1}, new int[] {0, 4}))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void theBackendsSetIsTheTopKOfProbabilitiesMovedByHalfTheGapAndOfNoneMovedLess() {
        long seed = 1205L;
        System.out.println("seed " + seed);
        SplittableRandom rnd = new SplittableRandom(seed);
        for (int trial = 0; trial < 500; trial++) {
            int e = 3 + rnd.nextInt(14);
            int k = 1 + rnd.nextInt(e - 1);
            float[] p = new float[e];
            for (int i = 0; i < e; i++) {
                p[i] = (float) rnd.nextDouble();
            }
            int[] order = java.util.stream.IntStream.range(0, e).boxed()
                    .sorted((a, b) -> p[a] != p[b] ? Float.compare(p[b], p[a]) : Integer.compare(a, b))
                    .mapToInt(Integer::intValue).toArray();
            int[] ours = java.util.Arrays.copyOf(order, k);
            int[] theirs = rnd.ints(0, e).distinct().limit(k).toArray();
            double g = RouterNearTie.gap(p, ours, theirs);
            if (RouterNearTie.sameSet(ours, theirs)) {
                assertThat(g).isZero();
                continue;
            }
            // move the backend's experts up and every other down by g/2: the backend's set now ranks at or above all
            double[] moved = new double[e];
            for (int i = 0; i < e; i++) {
                moved[i] = p[i] + (contains(theirs, i) ? g / 2 : -g / 2);
            }
            double minTheirs = java.util.Arrays.stream(theirs).mapToDouble(i -> moved[i]).min().orElseThrow();
            for (int i = 0; i < e; i++) {
                if (!contains(theirs, i)) {
                    assertThat(moved[i]).as("trial %d expert %d", trial, i).isLessThanOrEqualTo(minTheirs + 1e-12);
                }
            }
            // and no smaller move suffices: some dropped expert still beats some added one by g − 2·(0.99·g/2) > 0
            double maxDropped = java.util.Arrays.stream(ours).filter(i -> !contains(theirs, i))
                    .mapToDouble(i -> p[i]).max().orElseThrow();
            double minAdded = java.util.Arrays.stream(theirs).filter(i -> !contains(ours, i))
                    .mapToDouble(i -> p[i]).min().orElseThrow();
            assertThat((maxDropped - 0.99 * g / 2) - (minAdded + 0.99 * g / 2)).isPositive();
        }
    }

    private static boolean contains(int[] a, int x) {
        return java.util.stream.IntStream.of(a).anyMatch(v -> v == x);
    }

    private static org.assertj.core.data.Offset<Double> within(double d) {
        return org.assertj.core.data.Offset.offset(d);
    }

    @Test
    void theJudgeCountsNearTiesWithinTheRouterAllowanceAndReportsTheRest() {
        Judge judge = new Judge(Tolerance.BF16, 8, "the reference");
        assertThat(Tolerance.BF16.routerGap()).isEqualTo(Tolerance.BF16.tokenGap() / 4);
        assertThat(Tolerance.F32.routerGap()).isEqualTo(2.5e-5);
        float[] p = {0.30f, 0.27f, 0.26f, 0.17f};
        assertThat(judge.routerChoice(0, 3, p, new int[] {0, 1}, new int[] {1, 0}, "backend chose")).isNull();
        assertThat(judge.routerChoice(0, 4, p, new int[] {0, 1}, new int[] {0, 2}, "backend chose")).isNull();
        Divergence d = judge.routerChoice(1, 5, p, new int[] {0, 1}, new int[] {0, 3}, "backend chose");
        assertThat(d.kind()).isEqualTo(Divergence.Kind.ROUTER_CHOICE);
        assertThat(d.message()).contains("row 1 position 5: backend chose experts [0, 3], reference [0, 1]",
                "gap 0.100 > 0.0375 bf16");
        assertThat(judge.routerTally().compared()).isEqualTo(3);
        assertThat(judge.routerTally().nearTies()).isEqualTo(1);
        assertThat(judge.routerTally().maxGap()).isCloseTo(0.01, within(1e-6));
    }

    /** tiny-moe with router row 5 a copy of row 2: experts 2 and 5 tie exactly on every token. */
    @BeforeAll
    static void tiedModel() {
        MtpModel m = FixtureRecipe.named("tiny-moe").load(Path.of("target", "fixture-cache"));
        MtpWeights w = m.weights();
        MlpWeights.Moe moe = (MlpWeights.Moe) w.mlp();
        HostTensor router = ((LinearWeight.Dense) moe.router()).weight();
        float[] r = router.toFloatArray();
        int h = router.dim(1);
        System.arraycopy(r, 2 * h, r, 5 * h, h);
        MlpWeights.Moe tiedMoe = new MlpWeights.Moe(new LinearWeight.Dense(HostTensor.ofFloats(r, router.shape())
                .convert(router.dtype())), moe.experts(), moe.sharedExpert(), moe.sharedExpertGate(), moe.topK(),
                moe.normTopK());
        tied = new MtpModel(m.config(), new MtpWeights(w.fc(), w.preFcNormEmbedding(), w.preFcNormHidden(),
                w.inputNorm(), w.qProj(), w.kProj(), w.vProj(), w.oProj(), w.qNorm(), w.kNorm(), w.postAttentionNorm(),
                tiedMoe, w.finalNorm(), w.embedding(), w.head()), m.identity() + "-tied-router", "tiny-moe, router "
                + "row 5 = row 2", m.layout(), List.of());
    }

    private static Campaign.Result run(DraftModel subject) {
        try (ReferenceDraftModel oracle = ReferenceBackend.load(tied, KernelMode.VECTOR, 1)) {
            Campaign.Settings s = new Campaign.Settings("tiny-moe-tied", "simple", Map.of(), Tolerance.F32, 12, 3, 0,
                    1, ChainGenerator.Limits.defaults(), null, 400);
            return Campaign.run(s, oracle, subject, (d, t, p) -> { });
        }
    }

    @Test
    void aBackendBreakingExactRouterTiesTheOtherWayPassesAsRouterNearTiesOfGapZero() {
        try (SimpleBackend highTies = new SimpleBackend(tied, Mutation.NONE, true)) {
            Campaign.Result r = run(highTies);
            assertThat(r.failures()).as("%s", r.failures()).isEmpty();
            assertThat(r.stats().router().nearTies()).as("ties at the top-k boundary happened").isPositive();
            assertThat(r.stats().router().maxGap()).isZero();
            assertThat(r.stats().router().compared()).isGreaterThan(r.stats().router().nearTies());
        }
    }

    @Test
    void withoutItsRouterChoicesTheSameBackendDivergesBecauseTheReferenceCannotFollow() {
        try (SimpleBackend highTies = new SimpleBackend(tied, Mutation.NONE, true)) {
            Campaign.Result r = run(new Hiding(highTies));
            assertThat(r.failures()).as("experts 2 and 5 differ, so a silent swap changes outputs").isNotEmpty();
            assertThat(r.stats().router().compared()).isZero();
        }
    }

    /** The same backend, its rows stripped of the {@code RouterChoices} capability. */
    private record Hiding(DraftModel inner) implements DraftModel {
        @Override
        public MtpModel model() {
            return inner.model();
        }

        @Override
        public String numerics() {
            return inner.numerics();
        }

        @Override
        public DraftRows openRows(List<RowCheckpoint> checkpoints) {
            DraftRows rows = inner.openRows(checkpoints);
            return (DraftRows) java.lang.reflect.Proxy.newProxyInstance(DraftRows.class.getClassLoader(),
                    new Class<?>[] {DraftRows.class}, (proxy, method, args) -> {
                        try {
                            return method.invoke(rows, args);
                        } catch (java.lang.reflect.InvocationTargetException e) {
                            throw e.getCause();
                        }
                    });
        }

        @Override
        public void close() {
            inner.close();
        }
    }
}
