package org.mtporacle.reference;

import org.mtporacle.api.Availability;
import org.mtporacle.api.MtpBackend;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.TargetModel;
import org.mtporacle.reference.kernels.KernelMode;
import org.mtporacle.reference.kernels.Kernels;
import org.mtporacle.reference.target.ReferenceTarget;

import java.util.Map;
import java.util.Set;

/**
 * The oracle as a backend ({@code reference}): pure Java, f32 arithmetic, always available.
 *
 * <p>Options: {@code mode=vector|scalar} (default {@code vector}, or {@code scalar} when the system property
 * {@code mtp.reference.vector} is {@code false}) and {@code threads=N} (default: available processors, or the
 * property {@code mtp.reference.threads}). Properties are read here, once, at the edge.
 */
public final class ReferenceBackend implements MtpBackend {
    public static final String NAME = "reference";
    private static final Set<String> OPTIONS = Set.of("mode", "threads");

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public String description() {
        return "pure-Java reference interpreter (the oracle), f32 arithmetic";
    }

    @Override
    public Availability availability() {
        return Availability.yes("pure Java, always available");
    }

    @Override
    public ReferenceDraftModel load(MtpModel model, Map<String, String> options) {
        return new ReferenceDraftModel(model, kernels(options));
    }

    @Override
    public boolean supportsTarget() {
        return true;
    }

    /** The hybrid target on the reference kernels (recurrent prefill, the normative form). */
    @Override
    public ReferenceTarget loadTarget(TargetModel model, Map<String, String> options) {
        return new ReferenceTarget(model, kernels(options));
    }

    private static Kernels kernels(Map<String, String> options) {
        for (String key : options.keySet()) {
            if (!OPTIONS.contains(key)) {
                throw MtpException.invalidArgument("reference: unknown option '" + key + "' (known: mode, threads)");
            }
        }
        String defaultMode = configuredMode() == KernelMode.VECTOR ? "vector" : "scalar";
        KernelMode mode = switch (options.getOrDefault("mode", defaultMode)) {
            case "vector" -> KernelMode.VECTOR;
            case "scalar" -> KernelMode.SCALAR;
            default -> throw MtpException.invalidArgument("reference: mode = '" + options.get("mode")
                    + "', expected vector or scalar");
        };
        String threadsText = options.getOrDefault("threads", System.getProperty("mtp.reference.threads",
                String.valueOf(Runtime.getRuntime().availableProcessors())));
        int threads;
        try {
            threads = Integer.parseInt(threadsText);
        } catch (NumberFormatException e) {
            threads = -1;
        }
        if (threads < 1 || threads > 1024) {
            throw MtpException.invalidArgument("reference: threads = '" + threadsText + "', expected 1…1024");
        }
        return new Kernels(mode, threads);
    }

    /** Reference against reference must be bit-identical. */
    @Override
    public java.util.List<org.mtporacle.api.BackendProfile> profiles() {
        return java.util.List.of(new org.mtporacle.api.BackendProfile(NAME, Map.of(),
                org.mtporacle.api.Tolerance.EXACT));
    }

    /**
     * The kernel mode the system property {@code mtp.reference.vector} selects: {@code VECTOR} unless it is
     * {@code false}. Read here, at the edge, by every caller that builds a reference (oracles included), so
     * {@code -Dmtp.reference.vector=false} runs the scalar definition everywhere.
     */
    public static KernelMode configuredMode() {
        return Boolean.parseBoolean(System.getProperty("mtp.reference.vector", "true")) ? KernelMode.VECTOR
                : KernelMode.SCALAR;
    }

    /** A reference model with explicit mode and threads (tests and benchmarks). */
    public static ReferenceDraftModel load(MtpModel model, KernelMode mode, int threads) {
        return new ReferenceDraftModel(model, new Kernels(mode, threads));
    }
}
