package org.mtporacle.conformance.target.lockstep;

import org.mtporacle.conformance.target.chain.TargetAction;
import org.mtporacle.conformance.target.chain.TargetChainGenerator;
import org.mtporacle.conformance.target.chain.TargetShrinker;
import org.mtporacle.conformance.target.trace.TargetChainTrace;
import org.mtporacle.conformance.target.trace.TargetTraceFiles;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Runs many target chains in lockstep and shrinks the first failure to a short chain written as a replayable trace.
 * Each chain's seed is derived from the campaign seed, the fixture's name and the chain's index, so different
 * fixtures run different chains.
 */
public final class TargetCampaign {
    private TargetCampaign() {
    }

    /**
     * @param fixture        the fixture's name (it also seeds the chains)
     * @param backend        the backend's name, for traces
     * @param backendOptions the options the backend was loaded with (a profile's), for traces
     * @param chains         how many chains at most
     * @param seed           the campaign seed
     * @param limits         the generator's limits
     * @param traces         where failure traces go, or null for none
     * @param shrinkAttempts the shrinker's budget
     */
    public record Settings(String fixture, String backend, Map<String, String> backendOptions, int chains, long seed,
                           TargetChainGenerator.Limits limits, Path traces, int shrinkAttempts) {
        public Settings {
            backendOptions = backendOptions == null ? Map.of() : Map.copyOf(backendOptions);
        }

        /** Settings for a backend loaded without options. */
        public Settings(String fixture, String backend, int chains, long seed, TargetChainGenerator.Limits limits,
                        Path traces, int shrinkAttempts) {
            this(fixture, backend, Map.of(), chains, seed, limits, traces, shrinkAttempts);
        }
    }

    /** A failure: the chain that showed it, shrunk, and its trace. */
    public record Failure(long seed, int chainsRun, int originalLength, List<TargetAction> shrunk,
                          TargetDivergence divergence, int shrinkAttempts, Path trace) {
    }

    /**
     * What a campaign found: chains run, the first failure (null when none) and what was compared, MoE router choices
     * included (spec §12.5).
     */
    public record Result(int chainsRun, Failure failure, TargetJudge.Counts counts, long badCalls,
                         long[] matchedAccepts, org.mtporacle.conformance.compare.RouterTally router) {
        /** A result without router comparisons. */
        public Result(int chainsRun, Failure failure, TargetJudge.Counts counts, long badCalls, long[] matchedAccepts) {
            this(chainsRun, failure, counts, badCalls, matchedAccepts, null);
        }

        public Result {
            router = router == null ? org.mtporacle.conformance.compare.RouterTally.NONE : router;
        }

        public boolean passed() {
            return failure == null;
        }
    }

    /** The seed of chain {@code index} of a campaign on {@code fixture}. */
    public static long chainSeed(long seed, String fixture, long index) {
        long h = 1125899906842597L;
        for (byte b : fixture.getBytes(StandardCharsets.UTF_8)) {
            h = 31 * h + b;
        }
        long z = seed ^ h * 0x9E3779B97F4A7C15L ^ (index + 1) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    /** Runs up to {@code s.chains()} chains, stopping at the first failure, which is shrunk and recorded. */
    public static Result run(Settings s, TargetLockstep lockstep) {
        TargetChainGenerator gen = new TargetChainGenerator(s.limits());
        TargetJudge.Counts counts = new TargetJudge.Counts(0, 0, 0, 0, 0);
        long bad = 0;
        long[] matched = new long[org.mtporacle.api.TargetContract.MAX_WIDTH];
        org.mtporacle.conformance.compare.RouterTally router = org.mtporacle.conformance.compare.RouterTally.NONE;
        for (int i = 0; i < s.chains(); i++) {
            long seed = chainSeed(s.seed(), s.fixture(), i);
            TargetChainOutcome out = lockstep.run(seed, gen.generate(seed));
            counts = counts.plus(out.counts());
            router = router.plus(out.router());
            bad += out.badCalls();
            for (int a = 0; a < matched.length; a++) {
                matched[a] += out.matchedAccepts()[a];
            }
            if (!out.passed()) {
                return new Result(i + 1, shrinkAndRecord(s, lockstep, out, i + 1), counts, bad, matched, router);
            }
        }
        return new Result(s.chains(), null, counts, bad, matched, router);
    }

    /** Shrinks a failed chain (same category), writes its trace when {@code s.traces()} is set. */
    public static Failure shrinkAndRecord(Settings s, TargetLockstep lockstep, TargetChainOutcome failed,
                                          int chainsRun) {
        TargetDivergence.Category category = failed.divergence().category();
        List<TargetAction> ran = failed.chain().subList(0, failed.executed());
        TargetShrinker shrinker = new TargetShrinker(c -> {
            TargetChainOutcome o = lockstep.run(failed.seed(), c);
            return !o.passed() && o.divergence().category() == category;
        }, s.shrinkAttempts());
        List<TargetAction> shrunk = shrinker.shrink(ran);
        TargetDivergence d = lockstep.run(failed.seed(), shrunk).divergence();
        Path trace = null;
        if (s.traces() != null) {
            trace = s.traces().resolve("target-chain-" + Long.toUnsignedString(failed.seed(), 16) + ".json");
            TargetTraceFiles.write(trace, new TargetChainTrace(s.fixture(), s.backend(), s.backendOptions(),
                    lockstep.tolerance().name(), "declared by the backend", failed.seed(), shrunk, d.kind().name(),
                    d.actionIndex(), d.row(), d.position(), d.message(), lockstep.oracle().model().identity()));
        }
        return new Failure(failed.seed(), chainsRun, failed.chain().size(), new ArrayList<>(shrunk), d,
                shrinker.attempts(), trace);
    }
}
