package org.mtporacle.api;

import java.util.Map;

/**
 * One configuration of a backend that {@code mtp conform} runs by default: a label for reports, the load options,
 * and the name of the conformance tolerance profile it is held to ({@code exact}, {@code f32}, {@code bf16}).
 */
public record BackendProfile(String label, Map<String, String> options, String tolerance) {
    public BackendProfile {
        options = Map.copyOf(options);
    }
}
