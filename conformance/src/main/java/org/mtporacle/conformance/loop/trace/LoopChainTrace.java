package org.mtporacle.conformance.loop.trace;

import org.mtporacle.conformance.loop.chain.LoopAction;

import java.util.List;
import java.util.Map;

/**
 * A replayable record of one loop chain (format {@value LoopTraceFiles#FORMAT} version {@value
 * LoopTraceFiles#VERSION}): the fixture and backend it ran on, the backend's load options (a profile's, such as
 * {@code precision=f32}; empty when none or not recorded), the profile, the declared hidden tap and drafter KV policy
 * ({@code keep} or {@code rebuild}), the chain's seed, its actions, the divergence it showed (group, kind, action,
 * row, position, message) or none, and the target's identity ({@code ""} when not recorded), which {@code mtp
 * replay} checks.
 */
public record LoopChainTrace(String fixture, String backend, Map<String, String> backendOptions, String tolerance,
                             String tap, String kv, long seed, List<LoopAction> actions, String divergenceGroup,
                             String divergenceKind, int divergenceAction, int divergenceRow, int divergencePosition,
                             String divergenceMessage, String modelIdentity) {
    public LoopChainTrace {
        backendOptions = backendOptions == null ? Map.of() : Map.copyOf(backendOptions);
        actions = List.copyOf(actions);
        kv = kv == null ? "keep" : kv;
        modelIdentity = modelIdentity == null ? "" : modelIdentity;
    }

    /** A trace without backend options. */
    public LoopChainTrace(String fixture, String backend, String tolerance, String tap, String kv, long seed,
                          List<LoopAction> actions, String divergenceGroup, String divergenceKind,
                          int divergenceAction, int divergenceRow, int divergencePosition, String divergenceMessage,
                          String modelIdentity) {
        this(fixture, backend, Map.of(), tolerance, tap, kv, seed, actions, divergenceGroup, divergenceKind,
                divergenceAction, divergenceRow, divergencePosition, divergenceMessage, modelIdentity);
    }

    /** A trace without backend options, under the {@code keep} drafter KV policy. */
    public LoopChainTrace(String fixture, String backend, String tolerance, String tap, long seed,
                          List<LoopAction> actions, String divergenceGroup, String divergenceKind,
                          int divergenceAction, int divergenceRow, int divergencePosition, String divergenceMessage,
                          String modelIdentity) {
        this(fixture, backend, tolerance, tap, "keep", seed, actions, divergenceGroup, divergenceKind,
                divergenceAction, divergenceRow, divergencePosition, divergenceMessage, modelIdentity);
    }
}
