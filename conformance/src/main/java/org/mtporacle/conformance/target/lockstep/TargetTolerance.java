package org.mtporacle.conformance.target.lockstep;

import org.mtporacle.api.Tolerance;

import java.util.Map;

/**
 * How closely a backend's target must follow the reference target (spec §13): the drafter's profile ({@link
 * Tolerance}) read for the target's observables. A verify's or prefill's greedy token at every position is compared
 * tie-aware with the profile's token gap, in the reference's logits (a logit difference is a log-prob difference);
 * logits and taps by NMSE per row; every row's state (conv windows, recurrent states, K/V) by NMSE per tensor.
 *
 * <p>{@code exact}: every threshold 0 (the reference against itself). {@code f32}: the drafter's f32 K/V bound,
 * 1e-9, for every target tensor, and its token gap; a plain f32 target with another accumulation order lands near
 * 1e-13. {@code bf16}: derived from measured bf16 target distributions (conformance/SPEC.md "Deriving the target's bf16
 * bounds"): a token gap of 4 logits (the largest differing gap seen on fresh seeds was 3.23, past every fitted shape's
 * extrapolation), logits/taps NMSE 0.25 and state NMSE 0.1 (the fitted log-NMSE tails of MLX precision=native on the
 * dense target fixtures, CPU and H200, for 1e-3 expected false failures in a 10,000-chain campaign).
 *
 * <p>A second, chain-level bound, {@code typicalNmse}: per kind of compared tensor ({@link TargetJudge#KINDS}), a
 * bound on a chain's typical NMSE, the median of the chain's comparisons of that kind, judged at the end of a chain
 * that compared at least {@link #TYPICAL_MIN_COMPARISONS} of them (conformance/SPEC.md "A chain's typical NMSE"). A
 * per-comparison bound at a conforming engine's rarest comparison leaves room for a bug that moves every comparison by
 * two decades; a chain's median does not. Only {@code bf16} has one: logits/taps 2e-3, state tensors 1e-3, at least 4×
 * the bound the per-chain medians of MLX native and transformers bf16 imply for the same 10,000-chain campaign.
 *
 * <p>A MoE target's router choices (when the backend reports them, spec §12.5) pass as router near-ties within
 * {@code routerGap}, in probability units as the drafter's ({@link Tolerance#routerGap()}): {@code exact} 0 (no
 * near-tie, not even an exact tie), {@code f32} the drafter's 2.5e-5, {@code bf16} 0.15, the target's own: MLX
 * precision=native flips a router choice at about 0.43 % of choices on the MoE target fixtures, and the flip gaps have
 * a heavy tail: at most 0.0243 over 2,000 chains on MLX's CPU, but 0.054, 0.060 and 0.093 in about 2,100 chains on
 * an H200 (0.054 and 0.093 at position 1 of a fresh row, gone in f32; the first shared by transformers in bfloat16),
 * conformance/SPEC.md "MoE under bf16: router choices"; 0.15 is 1.6× the largest. The drafter's single MoE block keeps
 * its own, 0.0375.
 *
 * @param name        the drafter profile's name
 * @param tokenGap    near-tie bound for a greedy token, in logit units
 * @param outputNmse  bound on the NMSE of a row's logits and of its taps
 * @param stateNmse   bound on the NMSE of each state tensor of a row
 * @param routerGap   near-tie bound for a MoE layer's expert set, in router probability units
 * @param typicalNmse bound on a chain's median NMSE, by kind; a kind without one (every kind when empty) is not judged
 */
public record TargetTolerance(String name, double tokenGap, double outputNmse, double stateNmse, double routerGap,
                              Map<String, Double> typicalNmse) {
    /**
     * The fewest comparisons of a kind whose median a chain is judged by: with fewer, one comparison's spread decides
     * (conformance/SPEC.md "A chain's typical NMSE").
     */
    public static final int TYPICAL_MIN_COMPARISONS = 8;
    private static final double BF16_TOKEN_GAP = 4.0;
    private static final double BF16_OUTPUT_NMSE = 0.25;
    private static final double BF16_STATE_NMSE = 0.1;
    private static final double BF16_ROUTER_GAP = 0.15;
    /** The bf16 bounds on a chain's median NMSE, derived from measured per-chain medians (conformance/SPEC.md). */
    private static final Map<String, Double> BF16_TYPICAL = Map.of("logits", 2e-3, "taps", 2e-3,
            "convWindows", 1e-3, "recurrentStates", 1e-3, "keys", 1e-3, "values", 1e-3);
    public static final TargetTolerance EXACT = of(Tolerance.EXACT);
    public static final TargetTolerance F32 = of(Tolerance.F32);
    /** The target's {@code bf16} reading, derived from measured data (conformance/SPEC.md). */
    public static final TargetTolerance BF16 = new TargetTolerance("bf16", BF16_TOKEN_GAP, BF16_OUTPUT_NMSE,
            BF16_STATE_NMSE, BF16_ROUTER_GAP, BF16_TYPICAL);

    public TargetTolerance {
        typicalNmse = Map.copyOf(typicalNmse);
    }

    /** Per-comparison bounds only (no bound on a chain's typical NMSE). */
    public TargetTolerance(String name, double tokenGap, double outputNmse, double stateNmse, double routerGap) {
        this(name, tokenGap, outputNmse, stateNmse, routerGap, Map.of());
    }

    /** The target's reading of a drafter profile: the derived {@link #BF16} for {@code bf16}, else its own bounds. */
    public static TargetTolerance of(Tolerance t) {
        if (t.equals(Tolerance.BF16)) {
            return BF16;
        }
        return new TargetTolerance(t.name(), t.tokenGap(), t.kvNmse(), t.kvNmse(), t.routerGap());
    }

    /** The target's reading of the drafter profile called {@code name} ({@link Tolerance#named}). */
    public static TargetTolerance named(String name) {
        return of(Tolerance.named(name));
    }

    /**
     * No numeric threshold at all (every bound the largest double), for a calibration run ({@code mtp conform --target
     * --calibrate}) that wants the distributions of a whole campaign, not its first failure.
     */
    public static TargetTolerance calibration() {
        return new TargetTolerance("calibration", Double.MAX_VALUE, Double.MAX_VALUE, Double.MAX_VALUE,
                Double.MAX_VALUE);
    }

    /** These bounds as a report's {@link Tolerance}: kv NMSE = state NMSE, hidden NMSE = logits/taps NMSE. */
    public Tolerance asTolerance() {
        return new Tolerance(name, tokenGap, stateNmse, outputNmse);
    }

    public boolean exact() {
        return tokenGap == 0 && outputNmse == 0 && stateNmse == 0 && routerGap == 0;
    }

    /** The name and thresholds, for reports. */
    public String describe() {
        return name + " (" + thresholds() + ")";
    }

    /** Every threshold, e.g. {@code token gap 1.0E-4, logits/taps NMSE 1.0E-9, state NMSE 1.0E-9, router gap …}. */
    public String thresholds() {
        return "token gap " + tokenGap + ", logits/taps NMSE " + outputNmse + ", state NMSE " + stateNmse
                + ", router gap " + routerGap + (typicalNmse.isEmpty() ? "" : ", a chain's median NMSE "
                + new java.util.TreeMap<>(typicalNmse) + " over at least " + TYPICAL_MIN_COMPARISONS + " comparisons");
    }
}
