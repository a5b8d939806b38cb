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
     * Whether {@link #loadTarget} is implemented: the backend runs the hybrid target (spec §13) as well as the drafter.
     * Default: no.
     */
    default boolean supportsTarget() {
        return false;
    }

    /**
     * Loads a hybrid target (spec §13) into this backend, with the same options as {@link #load}.
     *
     * @throws MtpException UNAVAILABLE when the backend has no target ({@link #supportsTarget()} is false) or when
     *                      {@link #availability()} says no; INVALID_ARGUMENT for unknown options
     */
    default LoadedTarget loadTarget(TargetModel model, Map<String, String> options) {
        throw new MtpException(MtpException.Kind.UNAVAILABLE, name() + ": this backend runs the drafter only (no "
                + "hybrid target)");
    }

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
