package org.mtporacle.conformance.trace;

import org.mtporacle.api.Tolerance;
import org.mtporacle.conformance.chain.Action;
import org.mtporacle.conformance.compare.Divergence;

import java.util.List;
import java.util.Map;

/**
 * A replayable record of one chain (format {@value #FORMAT}): the fixture recipe, the backend and its options, the
 * tolerance profile (name and thresholds), the seed and the actions, plus the divergence it produced when it was
 * written. {@code mtp replay} re-runs the actions exactly, without the generator.
 */
public record ChainTrace(String format, String fixture, String modelIdentity, String backend,
                         Map<String, String> backendOptions, Tolerance tolerance, long seed, List<Action> actions,
                         Divergence divergence, int originalLength) {
    public static final String FORMAT = "mtp-oracle-chain/1";

    public ChainTrace {
        backendOptions = Map.copyOf(backendOptions);
        actions = List.copyOf(actions);
    }
}
