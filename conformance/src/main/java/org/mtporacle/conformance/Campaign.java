package org.mtporacle.conformance;

import org.mtporacle.api.DraftModel;
import org.mtporacle.api.Tolerance;
import org.mtporacle.conformance.chain.Action;
import org.mtporacle.conformance.chain.ChainGenerator;
import org.mtporacle.conformance.chain.Shrinker;
import org.mtporacle.conformance.lockstep.ChainOutcome;
import org.mtporacle.conformance.compare.Divergence;
import org.mtporacle.conformance.lockstep.Lockstep;
import org.mtporacle.conformance.lockstep.TargetTaps;
import org.mtporacle.conformance.trace.ChainTrace;
import org.mtporacle.conformance.trace.TraceFiles;
import org.mtporacle.reference.ReferenceDraftModel;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/**
 * A lockstep campaign: {@code chains} seeded chains of one backend against the reference on one fixture, drawn from
 * the campaign's seed and the fixture's name ({@link #chainSeed(long, String, long)}). Failing
 * chains are shrunk to a minimal chain that fails the same way and written as replayable traces.
 */
public final class Campaign {

    /** What to run. {@code shardIndex}/{@code shardCount} select a disjoint range of the chain indices. */
    public record Settings(String fixture, String backend, Map<String, String> options, Tolerance tolerance,
                           int chains, long seed, int shardIndex, int shardCount, ChainGenerator.Limits limits,
                           Path traceDir, int shrinkAttempts) {
        public Settings {
            options = Map.copyOf(options);
            if (shardCount < 1 || shardIndex < 0 || shardIndex >= shardCount) {
                throw new IllegalArgumentException("shard " + (shardIndex + 1) + "/" + shardCount + " is not valid");
            }
        }

        /** The chain indices of this shard: a contiguous range of {@code [0, chains)}. */
        public long firstChain() {
            return (long) chains * shardIndex / shardCount;
        }

        public long endChain() {
            return (long) chains * (shardIndex + 1) / shardCount;
        }
    }

    /** A shrunk failure and where its trace was written. */
    public record Failure(long chainSeed, int originalLength, List<Action> shrunk, Divergence divergence,
                          Path trace) {
    }

    /** What a campaign found; {@code stopped} when it was asked to stop before its last chain. */
    public record Result(Settings settings, String modelIdentity, String numerics, long chainsRun, long passed,
                         List<Failure> failures, ChainOutcome.Stats stats, double seconds, boolean stopped) {
        public boolean ok() {
            return failures.isEmpty();
        }

        public double chainsPerSecond() {
            return seconds == 0 ? 0 : chainsRun / seconds;
        }
    }

    /** Called after every chain. */
    @FunctionalInterface
    public interface Progress {
        void chainDone(long done, long total, boolean passed);
    }

    private Campaign() {
    }

    /** The seed of chain {@code index} in a campaign seeded {@code seed}, the same on every fixture. */
    public static long chainSeed(long seed, long index) {
        return seed * 0x9E3779B97F4A7C15L + index * 0xBF58476D1CE4E5B9L + 0x94D049BB133111EBL;
    }

    /**
     * The seed of chain {@code index} of a campaign seeded {@code seed} on {@code fixture}: each fixture draws its own
     * chains, so a bug that few chains reach is not missed on every fixture at once by the same unlucky draw.
     */
    public static long chainSeed(long seed, String fixture, long index) {
        return chainSeed(seed ^ fixtureSalt(fixture), index);
    }

    /** A 64-bit hash of the fixture's name (FNV-1a over UTF-8, then a SplitMix64 finaliser). */
    static long fixtureSalt(String fixture) {
        long h = 0xCBF29CE484222325L;
        for (byte b : fixture.getBytes(java.nio.charset.StandardCharsets.UTF_8)) {
            h = (h ^ (b & 0xFF)) * 0x100000001B3L;
        }
        h = (h ^ (h >>> 30)) * 0xBF58476D1CE4E5B9L;
        h = (h ^ (h >>> 27)) * 0x94D049BB133111EBL;
        return h ^ (h >>> 31);
    }

    /** Runs the campaign on synthetic contexts. */
    public static Result run(Settings s, ReferenceDraftModel oracle, DraftModel subject, Progress progress) {
        return run(s, oracle, subject, null, progress);
    }

    /** Runs the campaign with {@code taps}' contexts (null: synthetic); traces record which. */
    public static Result run(Settings s, ReferenceDraftModel oracle, DraftModel subject, TargetTaps taps,
                             Progress progress) {
        return run(s, oracle, subject, taps, progress, null, () -> false);
    }

    /**
     * As {@link #run(Settings, ReferenceDraftModel, DraftModel, TargetTaps, Progress)}; {@code fresh} loads the
     * backend anew (a fresh engine process) to check whether a failure reproduces without the history of the
     * running one (null: not checked), and the campaign stops after the chain during which {@code stop} turned true
     * (a Ctrl-C), its result saying so.
     */
    public static Result run(Settings s, ReferenceDraftModel oracle, DraftModel subject, TargetTaps taps,
                             Progress progress, Supplier<DraftModel> fresh, BooleanSupplier stop) {
        Lockstep lockstep = new Lockstep(oracle, subject, s.tolerance(), taps);
        ChainGenerator gen = new ChainGenerator(s.limits());
        long start = System.nanoTime();
        List<Failure> failures = new ArrayList<>();
        ChainOutcome.Stats stats = ChainOutcome.Stats.NONE;
        long total = s.endChain() - s.firstChain();
        long passed = 0;
        long run = 0;
        for (long i = s.firstChain(); i < s.endChain() && !stop.getAsBoolean(); i++) {
            long seed = chainSeed(s.seed(), s.fixture(), i);
            List<Action> chain = gen.generate(seed);
            ChainOutcome out = lockstep.run(seed, chain);
            stats = stats.plus(out.stats());
            if (out.passed()) {
                passed++;
            } else {
                failures.add(shrinkAndRecord(s, lockstep, oracle, out,
                        failures.size() < FRESH_CHECKS ? fresh : null, taps, stop));
            }
            run++;
            progress.chainDone(i - s.firstChain() + 1, total, out.passed());
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        return new Result(s, oracle.model().identity(), subject.numerics(), run, passed, failures, stats, seconds,
                run < total);
    }

    /** How many failures of a campaign are re-run in a fresh process (each costs an engine start). */
    static final int FRESH_CHECKS = 3;

    /**
     * How an {@code exec:} engine's failure says it did not reply in time (WIRE.md §6, "no reply within … (the
     * per-call timeout"): such a chain is not shrunk, since every attempt that reaches the hang waits that long again.
     */
    public static final String TIMEOUT_MARK = "(the per-call timeout";

    /** "" when {@code chain} fails again on a freshly loaded backend, else a note saying it did not. */
    private static String freshCheck(Settings s, ReferenceDraftModel oracle, Supplier<DraftModel> fresh,
                                     TargetTaps taps, long seed, List<Action> chain) {
        try (DraftModel subject = fresh.get()) {
            ChainOutcome o = new Lockstep(oracle, subject, s.tolerance(), taps).run(seed, chain);
            return o.passed() ? "; it did not fail when replayed in a fresh process (the fault depends on the "
                    + "process's history: calls of earlier chains)" : "";
        } catch (org.mtporacle.api.MtpException e) {
            return "; it could not be replayed in a fresh process (" + e.getMessage() + ")";
        }
    }

    /** {@code name} usable in a file name: {@code exec:python3 x.py} → {@code exec_python3_x.py} (at most 48 chars). */
    static String fileSafe(String name) {
        String s = name.replaceAll("[^A-Za-z0-9._-]+", "_");
        return s.length() <= 48 ? s : s.substring(0, 40) + "_" + Integer.toHexString(name.hashCode());
    }

    /** Shrinks a failing outcome (same divergence category) and writes its trace. */
    public static Failure shrinkAndRecord(Settings s, Lockstep lockstep, ReferenceDraftModel oracle,
                                          ChainOutcome failed) {
        return shrinkAndRecord(s, lockstep, oracle, failed, null, null, () -> false);
    }

    /**
     * Shrinks a failing outcome (same divergence category) and writes its trace, which always replays: the chain
     * written is the one whose divergence is written. A chain that timed out is not shrunk ({@link #TIMEOUT_MARK}); a
     * shrunk chain that passes when run again (a fault that depends on the engine's history) is given up for the
     * unshrunk one; with {@code fresh}, the chain written is run once more on a freshly loaded backend, and the
     * divergence says when it did not fail there. A {@code stop} ends the shrinking early.
     */
    static Failure shrinkAndRecord(Settings s, Lockstep lockstep, ReferenceDraftModel oracle, ChainOutcome failed,
                                   Supplier<DraftModel> fresh, TargetTaps taps, BooleanSupplier stop) {
        Divergence.Category category = failed.divergence().category();
        List<Action> failing = failed.chain().subList(0, failed.executed());
        Divergence d = failed.divergence();
        List<Action> shrunk = failing;
        String note = "";
        if (d.message() != null && d.message().contains(TIMEOUT_MARK)) {
            note = "; not shrunk: the engine did not reply in time, and every shrink attempt would wait as long";
        } else {
            Shrinker shrinker = new Shrinker(c -> {
                if (stop.getAsBoolean()) {
                    return false;
                }
                ChainOutcome o = lockstep.run(failed.seed(), c);
                return !o.passed() && o.divergence().category() == category;
            }, s.shrinkAttempts());
            List<Action> candidate = shrinker.shrink(failing);
            if (candidate.size() < failing.size()) {
                ChainOutcome again = lockstep.run(failed.seed(), candidate);
                if (!again.passed()) {
                    shrunk = candidate;
                    d = again.divergence();
                } else {
                    note = "; the shrunk chain passed when run again, so the chain is recorded unshrunk (the fault "
                            + "depends on what the engine ran before)";
                }
            }
        }
        if (fresh != null && !note.startsWith("; not shrunk")) { // a hang would wait out the timeout again
            note += freshCheck(s, oracle, fresh, taps, failed.seed(), shrunk);
        }
        if (!note.isEmpty()) {
            d = new Divergence(d.kind(), d.actionIndex(), d.side(), d.row(), d.position(), d.evidence(),
                    d.message() + note);
        }
        Path trace = null;
        if (s.traceDir() != null) {
            trace = s.traceDir().resolve("chain-" + fileSafe(s.backend()) + "-" + fileSafe(s.fixture()) + "-"
                    + Long.toHexString(failed.seed()) + ".json");
            try {
                TraceFiles.write(new ChainTrace(ChainTrace.FORMAT, s.fixture(), oracle.model().identity(),
                        s.backend(), s.options(), s.tolerance(), lockstep.contexts(), failed.seed(), shrunk, d,
                        failed.chain().size(), s.backend().startsWith("exec:")
                        ? Path.of("").toAbsolutePath().toString() : null), trace); // where the engine's command ran
            } catch (IOException e) {
                throw new UncheckedIOException("conform: cannot write trace " + trace, e);
            }
        }
        return new Failure(failed.seed(), failed.chain().size(), shrunk, d, trace);
    }
}
