package org.mtporacle.conformance.lockstep;

/**
 * How closely a backend must follow the reference (DESIGN "Numerics policy"). Tensors compare by NMSE
 * {@code Σ(a−b)²/Σb²}; a differing draft token passes only as a near-tie: its {@link NearTie} gap is at most
 * {@code tokenGap} (greedy rows: the reference's log-prob gap between its own choice and the backend's; seeded rows:
 * twice the smallest per-token log-prob perturbation under which the reference's draw picks the backend's token).
 *
 * @param name     the profile's name, printed in reports
 * @param tokenGap near-tie bound, in log-prob units
 * @param kvNmse   bound on NMSE of checkpoint keys and values
 * @param hiddenNmse bound on NMSE of checkpoint hiddens
 */
public record Tolerance(String name, double tokenGap, double kvNmse, double hiddenNmse) {

    /** Reference against reference: bit-identical. */
    public static final Tolerance EXACT = new Tolerance("exact", 0, 0, 0);

    /** A backend computing in f32 from the same weights (a different accumulation order only). */
    public static final Tolerance F32 = new Tolerance("f32", 1e-4, 1e-9, 0);

    /**
     * A backend computing activations in bf16 (MLX "native" precision on bf16 weights, spec §10.2.11): bf16 keeps 8
     * significant bits, so per-element errors near 2^-9 relative give NMSE around 1e-5 after a few layers; log-probs
     * move by a few hundredths.
     */
    public static final Tolerance BF16 = new Tolerance("bf16", 0.08, 2e-3, 1e-5);

    /** The profile called {@code name}. */
    public static Tolerance named(String name) {
        return switch (name) {
            case "exact" -> EXACT;
            case "f32" -> F32;
            case "bf16" -> BF16;
            default -> throw new IllegalArgumentException("tolerance: unknown profile '" + name
                    + "' (known: exact, f32, bf16)");
        };
    }
}
