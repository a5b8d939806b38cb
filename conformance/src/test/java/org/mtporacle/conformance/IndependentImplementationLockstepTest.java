package org.mtporacle.conformance;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.Tolerance;
import org.mtporacle.conformance.chain.ChainGenerator;
import org.mtporacle.conformance.mutants.Mutation;
import org.mtporacle.conformance.mutants.SimpleBackend;
import org.mtporacle.conformance.target.chain.TargetChainGenerator;
import org.mtporacle.conformance.target.lockstep.TargetCampaign;
import org.mtporacle.conformance.target.lockstep.TargetLockstep;
import org.mtporacle.conformance.target.lockstep.TargetTolerance;
import org.mtporacle.conformance.target.mutants.SimpleTarget;
import org.mtporacle.conformance.target.mutants.TargetMutation;
import org.mtporacle.reference.ReferenceBackend;
import org.mtporacle.reference.ReferenceDraftModel;
import org.mtporacle.reference.kernels.KernelMode;
import org.mtporacle.reference.kernels.Kernels;
import org.mtporacle.reference.target.ReferenceTarget;

import java.nio.file.Path;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The oracle shares its skeletons ({@code AbstractDraftRows}, {@code AbstractTargetRows}) with every backend built on
 * them, so a bug in a skeleton passes lockstep between two of them (DESIGN: "an implementation that shares no code
 * with the skeleton"). Here the standalone implementations, which share no code with either skeleton, follow the
 * reference on every fixture {@code mtp conform} runs by default (the drafter: {@link SimpleBackend}) and on the
 * target fixtures, dense and MoE (the target: {@link SimpleTarget}; {@code tiny-target} is {@code TargetLockstepTest}'s,
 * both rollback designs), each fixture on its own chains, as {@code mtp conform} draws them. A skeleton bug that any of
 * these chains reaches fails here.
 */
class IndependentImplementationLockstepTest {
    private static final Path CACHE = Path.of("target", "fixture-cache");
    private static final long SEED = 1;
    /** Chains per fixture: most on the two tiny ones, a few on the slower (scalar, dequantising) others. */
    private static final Map<String, Integer> CHAINS = Map.ofEntries(Map.entry("tiny", 20), Map.entry("tiny-moe", 20),
            Map.entry("tiny-q4", 6), Map.entry("tiny-moe-q4", 6), Map.entry("small", 4), Map.entry("small-moe", 3),
            Map.entry("small-q4", 3), Map.entry("small-moe-q4", 3), Map.entry("small-target", 2),
            Map.entry("tiny-moe-target", 8), Map.entry("tiny-moe-next-target", 4));

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"tiny", "tiny-q4", "small", "small-q4", "tiny-moe", "tiny-moe-q4", "small-moe",
            "small-moe-q4"})
    void theStandaloneDrafterFollowsTheReferenceOnEveryBundledFixture(String fixture) {
        assertThat(FixtureRecipe.BUNDLED.stream().map(FixtureRecipe::name)).contains(fixture);
        MtpModel model = FixtureRecipe.named(fixture).load(CACHE);
        int chains = CHAINS.get(fixture);
        try (ReferenceDraftModel oracle = ReferenceBackend.load(model, KernelMode.VECTOR, 1);
             SimpleBackend simple = new SimpleBackend(model, Mutation.NONE)) {
            Campaign.Settings s = new Campaign.Settings(fixture, "simple", Map.of(), Tolerance.F32, chains, SEED, 0,
                    1, ChainGenerator.Limits.defaults(), null, 400);
            Campaign.Result r = Campaign.run(s, oracle, simple, (d, t, p) -> { });
            System.out.printf("simple drafter vs reference on %s: %d chains, %d tokens, %d checkpoints, %d bad calls,"
                    + " max KV NMSE %.3g, %.1f s%n", fixture, r.chainsRun(), r.stats().comparedTokens(),
                    r.stats().comparedCheckpoints(), r.stats().badCalls(), r.stats().maxKvNmse(), r.seconds());
            assertThat(r.failures()).as("%s", r.failures()).isEmpty();
            assertThat(r.stats().comparedTokens()).isPositive();
            assertThat(r.stats().comparedCheckpoints()).isPositive();
        }
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"small-target", "tiny-moe-target", "tiny-moe-next-target"})
    void theStandaloneTargetFollowsTheReferenceOnTheTargetFixtures(String fixture) {
        FixtureRecipe fx = FixtureRecipe.named(fixture);
        int chains = CHAINS.get(fixture);
        try (ReferenceTarget oracle = new ReferenceTarget(fx.loadTarget(CACHE), new Kernels(KernelMode.VECTOR, 1));
             SimpleTarget simple = new SimpleTarget(fx.loadTarget(CACHE), TargetMutation.NONE)) {
            TargetCampaign.Result r = TargetCampaign.run(new TargetCampaign.Settings(fixture, "simple", chains, SEED,
                    TargetChainGenerator.Limits.defaults(), null, 300), new TargetLockstep(oracle, simple,
                    TargetTolerance.F32));
            System.out.printf("simple target vs reference on %s: %d chains, %d tokens, %d row states, max state NMSE"
                    + " %.3g%n", fixture, r.chainsRun(), r.counts().comparedTokens(), r.counts().comparedStates(),
                    r.counts().maxStateNmse());
            assertThat(r.failure()).as("%s", r.failure()).isNull();
            assertThat(r.counts().comparedStates()).isPositive();
        }
    }
}
