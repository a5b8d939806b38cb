package org.mtporacle.conformance.trace;

import org.mtporacle.api.Tolerance;
import org.mtporacle.conformance.chain.Action;
import org.mtporacle.conformance.chain.ContextSource;
import org.mtporacle.conformance.compare.Divergence;

import java.util.List;
import java.util.Map;

/**
 * A replayable record of one chain (format {@value #FORMAT}): the fixture recipe, the backend and its options, the
 * tolerance profile (name and thresholds), where the contexts came from, the seed and the actions, plus the
 * divergence it produced when it was written. {@code mtp replay} re-runs the actions exactly, without the generator.
 * Traces of format {@value #FORMAT_1} (no contexts field) are still read: their contexts were synthetic.
 * {@code workingDirectory} is the absolute folder an {@code exec:} backend's command ran in (null otherwise), so that
 * its relative paths resolve the same when the trace is replayed from another folder.
 */
public record ChainTrace(String format, String fixture, String modelIdentity, String backend,
                         Map<String, String> backendOptions, Tolerance tolerance, ContextSource contexts, long seed,
                         List<Action> actions, Divergence divergence, int originalLength, String workingDirectory) {
    /** The format this version writes: {@value #FORMAT_1} and the contexts. */
    public static final String FORMAT = "mtp-oracle-chain/2";
    /** The first format, read as synthetic contexts. */
    public static final String FORMAT_1 = "mtp-oracle-chain/1";

    public ChainTrace {
        backendOptions = Map.copyOf(backendOptions);
        actions = List.copyOf(actions);
        contexts = contexts == null ? ContextSource.SYNTHETIC : contexts;
    }

    /** A trace with no working directory (an in-process backend). */
    public ChainTrace(String format, String fixture, String modelIdentity, String backend,
                      Map<String, String> backendOptions, Tolerance tolerance, ContextSource contexts, long seed,
                      List<Action> actions, Divergence divergence, int originalLength) {
        this(format, fixture, modelIdentity, backend, backendOptions, tolerance, contexts, seed, actions, divergence,
                originalLength, null);
    }

    /** A trace of a run on synthetic contexts. */
    public ChainTrace(String format, String fixture, String modelIdentity, String backend,
                      Map<String, String> backendOptions, Tolerance tolerance, long seed, List<Action> actions,
                      Divergence divergence, int originalLength) {
        this(format, fixture, modelIdentity, backend, backendOptions, tolerance, ContextSource.SYNTHETIC, seed,
                actions, divergence, originalLength);
    }
}
