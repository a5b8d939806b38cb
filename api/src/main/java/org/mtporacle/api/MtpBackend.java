package org.mtporacle.api;

import java.util.Map;

/**
 * A runtime that implements the row contract, discovered with {@link java.util.ServiceLoader} and selected by
 * {@link #name()} (the backend switch: {@code --backend NAME}, {@code -Dmtp.backend=NAME}). Implementations need a
 * public no-argument constructor that does no native work; {@link #availability()} probes.
 */
public interface MtpBackend {

    /** The short name users type ({@code "reference"}, {@code "mlx"}). */
    String name();

    /** One line for listings. */
    String description();

    /** Whether the backend can run here; when not, the reason names what to install or set. */
    Availability availability();

    /**
     * Loads {@code model} into this backend.
     *
     * @param options backend-specific settings ({@code precision=native|f32}, {@code device=cpu|gpu}, ...); unknown
     *                keys fail with INVALID_ARGUMENT
     * @throws MtpException UNAVAILABLE when {@link #availability()} says no
     */
    DraftModel load(MtpModel model, Map<String, String> options);

    /**
     * The configurations conformance runs by default, each with its tolerance profile, the default configuration
     * first. A backend with several precision modes lists one profile per mode; the default is one profile with no
     * options held to {@link Tolerance#F32}.
     */
    default java.util.List<BackendProfile> profiles() {
        return java.util.List.of(new BackendProfile(name(), Map.of(), Tolerance.F32));
    }

    /** What conformance may generate for this backend (seeded sampling, rows, depth); default: everything. */
    default BackendCapabilities capabilities() {
        return BackendCapabilities.ALL;
    }
}
