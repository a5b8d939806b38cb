package org.mtporacle.conformance.target.mutants;

import org.mtporacle.api.HiddenTap;
import org.mtporacle.conformance.target.chain.TargetChainGenerator;
import org.mtporacle.conformance.target.lockstep.SpeculativeLoopCheck;
import org.mtporacle.conformance.target.lockstep.TargetCampaign;
import org.mtporacle.conformance.target.lockstep.TargetDivergence;
import org.mtporacle.conformance.target.lockstep.TargetFixture;
import org.mtporacle.conformance.target.lockstep.TargetLockstep;
import org.mtporacle.conformance.target.lockstep.TargetTolerance;
import org.mtporacle.reference.ReferenceDraftModel;
import org.mtporacle.reference.kernels.KernelMode;
import org.mtporacle.reference.kernels.Kernels;
import org.mtporacle.reference.target.ReferenceTarget;
import org.mtporacle.reference.target.SpeculativeDecoding.KvPolicy;
import org.mtporacle.reference.target.SpeculativeDecoding.Options;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Runs a target mutant until the kit catches it: the row mutants through a lockstep campaign (seed 7, chains as
 * {@code mtp conform} draws them for the fixture), the loop mutant through the speculative-loop check. Shared by
 * {@link TargetMutantsAreCaughtTest} and the {@link TargetMutantCounts} measurement.
 */
final class TargetMutantRuns implements AutoCloseable {
    static final long SEED = 7;
    static final Path CACHE = Path.of("target", "fixture-cache");

    private final Map<String, TargetFixture> fixtures = new HashMap<>();
    private final Map<String, ReferenceTarget> oracles = new HashMap<>();

    /** A row mutant's first failing chain, shrunk (null when none failed), and how long the run took. */
    record Row(TargetMutation mutation, String fixture, TargetTolerance tolerance, int chainsRun,
               TargetCampaign.Failure failure, TargetLockstep lockstep, long millis) {
    }

    /** The loop mutant: the loop runs until the check failed (null when none did). */
    record Loop(KvPolicy declared, TargetTolerance tolerance, int runs, TargetDivergence divergence, long millis) {
    }

    synchronized TargetFixture fixture(String name) {
        return fixtures.computeIfAbsent(name, n -> TargetFixture.load(n, CACHE));
    }

    synchronized ReferenceTarget oracle(String name) {
        return oracles.computeIfAbsent(name, n -> new ReferenceTarget(fixture(n).target(),
                new Kernels(KernelMode.VECTOR, 1)));
    }

    /** Runs {@code mutation} of {@link SimpleTarget} on {@code fixture} for up to {@code maxChains} chains. */
    Row row(TargetMutation mutation, String fixture, TargetTolerance tolerance, int maxChains) {
        Path traces;
        try {
            traces = Files.createTempDirectory("target-mutant-traces");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        long start = System.nanoTime();
        SimpleTarget mutant = new SimpleTarget(fixture(fixture).target(), mutation);
        TargetLockstep lockstep = new TargetLockstep(oracle(fixture), mutant, tolerance);
        TargetCampaign.Result r = TargetCampaign.run(new TargetCampaign.Settings(fixture,
                "simple-" + mutation.name().toLowerCase(), maxChains, SEED, TargetChainGenerator.Limits.defaults(),
                traces, 400), lockstep);
        return new Row(mutation, fixture, tolerance, r.chainsRun(), r.failure(), lockstep,
                (System.nanoTime() - start) / 1_000_000);
    }

    /** How many of {@code fixture}'s first {@code chains} chains {@code mutation} fails, each run whole. */
    int failing(TargetMutation mutation, String fixture, TargetTolerance tolerance, int chains) {
        TargetLockstep lockstep = new TargetLockstep(oracle(fixture), new SimpleTarget(fixture(fixture).target(),
                mutation), tolerance);
        TargetChainGenerator gen = new TargetChainGenerator(TargetChainGenerator.Limits.defaults());
        int failed = 0;
        for (int i = 0; i < chains; i++) {
            long seed = TargetCampaign.chainSeed(SEED, fixture, i);
            if (!lockstep.run(seed, gen.generate(seed)).passed()) {
                failed++;
            }
        }
        return failed;
    }

    /**
     * Keep vs rebuild mixed up (an engine declaring one drafter KV policy and running the other) on
     * {@code tiny-target}: up to {@code maxRuns} seeded loop runs; the reference's own loop must pass each exactly.
     */
    Loop loop(KvPolicy declared, TargetTolerance tolerance, int maxRuns) {
        long start = System.nanoTime();
        ReferenceTarget oracle = oracle("tiny-target");
        try (ReferenceDraftModel drafter = new ReferenceDraftModel(fixture("tiny-target").drafter(),
                new Kernels(KernelMode.VECTOR, 1))) {
            SpeculativeLoopCheck.Engine reference = SpeculativeLoopCheck.of(oracle, drafter);
            SpeculativeLoopCheck.Engine mixedUp = (requests, d, seen) -> reference.run(requests, new Options(
                    d.tap(), d.policy() == KvPolicy.KEEP ? KvPolicy.REBUILD : KvPolicy.KEEP, d.depth(),
                    d.restore()), seen);
            int vocab = oracle.model().config().shape().vocabSize();
            TargetDivergence d = null;
            int runs = 0;
            while (d == null && runs < maxRuns) {
                long seed = SEED + runs++;
                Options o = SpeculativeLoopCheck.options(seed, HiddenTap.POST_NORM, declared);
                var requests = SpeculativeLoopCheck.requests(seed, vocab);
                assertThat(SpeculativeLoopCheck.check(reference, oracle, reference, requests, o,
                        TargetTolerance.EXACT)).isNull();
                d = SpeculativeLoopCheck.check(mixedUp, oracle, reference, requests, o, tolerance);
            }
            return new Loop(declared, tolerance, runs, d, (System.nanoTime() - start) / 1_000_000);
        }
    }

    @Override
    public synchronized void close() {
        oracles.values().forEach(ReferenceTarget::close);
        oracles.clear();
    }
}
