package org.mtporacle.conformance.loop.lockstep;

import org.mtporacle.api.TargetContract;
import org.mtporacle.conformance.chain.ChainShrinker;
import org.mtporacle.conformance.loop.chain.LoopAction;
import org.mtporacle.conformance.loop.chain.LoopChainGenerator;
import org.mtporacle.conformance.loop.chain.LoopShrinker;
import org.mtporacle.conformance.loop.trace.LoopChainTrace;
import org.mtporacle.conformance.loop.trace.LoopTraceFiles;
import org.mtporacle.conformance.target.lockstep.TargetCampaign;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.ObjIntConsumer;

/**
 * Runs many loop chains in lockstep and shrinks the first failure to a short chain written as a replayable trace.
 * Chain seeds are the target campaign's ({@link TargetCampaign#chainSeed}): from the campaign seed, the fixture and
 * the chain's index, so different fixtures run different chains.
 */
public final class LoopCampaign {
    private LoopCampaign() {
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
                           LoopChainGenerator.Limits limits, Path traces, int shrinkAttempts) {
        public Settings {
            backendOptions = backendOptions == null ? Map.of() : Map.copyOf(backendOptions);
        }

        /** Settings for a backend loaded without options. */
        public Settings(String fixture, String backend, int chains, long seed, LoopChainGenerator.Limits limits,
                        Path traces, int shrinkAttempts) {
            this(fixture, backend, Map.of(), chains, seed, limits, traces, shrinkAttempts);
        }
    }

    /** A failure: the chain that showed it, shrunk, and its trace. */
    public record Failure(long seed, int chainsRun, int originalLength, List<LoopAction> shrunk,
                          LoopDivergence divergence, int shrinkAttempts, Path trace) {
    }

    /** What a campaign found: chains run, the first failure (null when none), what was compared, accepts by count. */
    public record Result(int chainsRun, Failure failure, LoopChainOutcome.Stats stats, long[] accepts) {
        public boolean passed() {
            return failure == null;
        }
    }

    /** Runs up to {@code s.chains()} chains, stopping at the first failure, which is shrunk and recorded. */
    public static Result run(Settings s, LoopLockstep lockstep) {
        return run(s, lockstep, (passed, done) -> { });
    }

    /** As {@link #run(Settings, LoopLockstep)}; {@code chainDone} hears whether each chain passed and the count. */
    public static Result run(Settings s, LoopLockstep lockstep, ObjIntConsumer<Boolean> chainDone) {
        LoopChainGenerator gen = new LoopChainGenerator(s.limits());
        LoopChainOutcome.Stats stats = LoopChainOutcome.Stats.NONE;
        long[] accepts = new long[TargetContract.MAX_WIDTH];
        for (int i = 0; i < s.chains(); i++) {
            long seed = TargetCampaign.chainSeed(s.seed(), s.fixture(), i);
            LoopChainOutcome out = lockstep.run(seed, gen.generate(seed));
            stats = stats.plus(out.stats());
            for (int a = 0; a < accepts.length; a++) {
                accepts[a] += out.accepts()[a];
            }
            chainDone.accept(out.passed(), i + 1);
            if (!out.passed()) {
                return new Result(i + 1, shrinkAndRecord(s, lockstep, out, i + 1), stats, accepts);
            }
        }
        return new Result(s.chains(), null, stats, accepts);
    }

    /** Shrinks a failed chain (same group and category), writes its trace when {@code s.traces()} is set. */
    public static Failure shrinkAndRecord(Settings s, LoopLockstep lockstep, LoopChainOutcome failed, int chainsRun) {
        String key = failed.divergence().shrinkKey();
        List<LoopAction> ran = failed.chain().subList(0, failed.executed());
        ChainShrinker<LoopAction> shrinker = LoopShrinker.of(c -> {
            LoopChainOutcome o = lockstep.run(failed.seed(), c);
            return !o.passed() && o.divergence().shrinkKey().equals(key);
        }, s.shrinkAttempts());
        List<LoopAction> shrunk = shrinker.shrink(ran);
        LoopDivergence d = lockstep.run(failed.seed(), shrunk).divergence();
        Path trace = null;
        if (s.traces() != null) {
            trace = s.traces().resolve("loop-chain-" + Long.toUnsignedString(failed.seed(), 16) + ".json");
            LoopTraceFiles.write(trace, new LoopChainTrace(s.fixture(), s.backend(), s.backendOptions(),
                    lockstep.tolerance().name(), lockstep.tap().label(), lockstep.policy().label(), failed.seed(),
                    shrunk, d.group(), d.kind(), d.actionIndex(), d.row(), d.position(), d.message(),
                    lockstep.oracle().model().identity()));
        }
        return new Failure(failed.seed(), chainsRun, failed.chain().size(), new ArrayList<>(shrunk), d,
                shrinker.attempts(), trace);
    }
}
