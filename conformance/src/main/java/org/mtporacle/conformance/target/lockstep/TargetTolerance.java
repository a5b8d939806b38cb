package org.mtporacle.conformance.target.lockstep;

import org.mtporacle.api.Tolerance;

/**
 * How closely a backend's target must follow the reference target (spec §13): the drafter's profile ({@link
 * Tolerance}) read for the target's observables. A verify's or prefill's greedy token at every position is compared
 * tie-aware with the profile's token gap, in the reference's logits (a logit difference is a log-prob difference);
 * logits and taps by NMSE per row; every row's state (conv windows, recurrent states, K/V) by NMSE per tensor.
 *
 * <p>{@code exact}: every threshold 0 (the reference against itself). {@code f32}: the drafter's f32 K/V bound,
 * 1e-9, for every target tensor, and its token gap; a plain f32 target with another accumulation order lands near
 * 1e-13. {@code bf16}: provisional, the drafter's bf16 K/V bound for every tensor; a target-state bound derived from
 * measured bf16 distributions, as the token allowance was, is still to come.
 *
 * @param name       the drafter profile's name
 * @param tokenGap   near-tie bound for a greedy token, in logit units
 * @param outputNmse bound on the NMSE of a row's logits and of its taps
 * @param stateNmse  bound on the NMSE of each state tensor of a row
 */
public record TargetTolerance(String name, double tokenGap, double outputNmse, double stateNmse) {
    public static final TargetTolerance EXACT = of(Tolerance.EXACT);
    public static final TargetTolerance F32 = of(Tolerance.F32);

    /** The target's reading of a drafter profile. */
    public static TargetTolerance of(Tolerance t) {
        return new TargetTolerance(t.name(), t.tokenGap(), t.kvNmse(), t.kvNmse());
    }

    /** The target's reading of the drafter profile called {@code name} ({@link Tolerance#named}). */
    public static TargetTolerance named(String name) {
        return of(Tolerance.named(name));
    }

    public boolean exact() {
        return tokenGap == 0 && outputNmse == 0 && stateNmse == 0;
    }

    /** The name and thresholds, for reports. */
    public String describe() {
        return name + " (token gap " + tokenGap + ", logits/taps NMSE " + outputNmse + ", state NMSE " + stateNmse
                + ")";
    }
}
