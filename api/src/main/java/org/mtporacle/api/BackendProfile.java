package org.mtporacle.api;

import java.util.Map;
import java.util.Objects;

/**
 * One configuration of a backend that {@code mtp conform} runs by default: a label for reports, the load options,
 * and the tolerance profile it is held to (a built-in one such as {@link Tolerance#F32}, or the backend's own, no
 * looser than {@link Tolerance#CEILING}; {@link Tolerance#checkDeclarable}).
 */
public record BackendProfile(String label, Map<String, String> options, Tolerance tolerance) {
    public BackendProfile {
        options = Map.copyOf(options);
        Objects.requireNonNull(tolerance, "tolerance");
        tolerance.checkDeclarable("backend profile " + label);
    }

    /**
     * The profile of {@code profiles} that describes a load with {@code options}: the one whose options all appear
     * in {@code options} with the same values, the most specific such one; the first profile (the backend's default
     * configuration) when none does.
     */
    public static BackendProfile matching(java.util.List<BackendProfile> profiles, Map<String, String> options) {
        BackendProfile best = null;
        for (BackendProfile p : profiles) {
            boolean fits = p.options().entrySet().stream().allMatch(e -> e.getValue().equals(options.get(e.getKey())));
            if (fits && (best == null || p.options().size() > best.options().size())) {
                best = p;
            }
        }
        return best != null ? best : profiles.getFirst();
    }
}
