package org.mtporacle.conformance.target.trace;

import org.mtporacle.conformance.target.chain.TargetAction;

import java.util.List;
import java.util.Map;

/**
 * A replayable record of one target chain (format {@value TargetTraceFiles#FORMAT} version {@value
 * TargetTraceFiles#VERSION}): the fixture and backend it ran on, the backend's load options (a profile's, such as
 * {@code precision=f32}; empty when none or not recorded), the profile and declared state layout, the chain's seed,
 * its actions, and the divergence it showed (kind, action, row, position, message), or none; and, optionally, the
 * identity of the target it ran on ({@code ""} when not recorded), which {@code mtp replay} checks.
 */
public record TargetChainTrace(String fixture, String backend, Map<String, String> backendOptions, String tolerance,
                               String stateLayout, long seed, List<TargetAction> actions, String divergenceKind,
                               int divergenceAction, int divergenceRow, int divergencePosition,
                               String divergenceMessage, String modelIdentity) {
    public TargetChainTrace {
        backendOptions = backendOptions == null ? Map.of() : Map.copyOf(backendOptions);
        actions = List.copyOf(actions);
        modelIdentity = modelIdentity == null ? "" : modelIdentity;
    }

    /** A trace without backend options. */
    public TargetChainTrace(String fixture, String backend, String tolerance, String stateLayout, long seed,
                            List<TargetAction> actions, String divergenceKind, int divergenceAction,
                            int divergenceRow, int divergencePosition, String divergenceMessage,
                            String modelIdentity) {
        this(fixture, backend, Map.of(), tolerance, stateLayout, seed, actions, divergenceKind, divergenceAction,
                divergenceRow, divergencePosition, divergenceMessage, modelIdentity);
    }

    /** A trace without backend options or the target's identity. */
    public TargetChainTrace(String fixture, String backend, String tolerance, String stateLayout, long seed,
                            List<TargetAction> actions, String divergenceKind, int divergenceAction,
                            int divergenceRow, int divergencePosition, String divergenceMessage) {
        this(fixture, backend, tolerance, stateLayout, seed, actions, divergenceKind, divergenceAction, divergenceRow,
                divergencePosition, divergenceMessage, "");
    }
}
