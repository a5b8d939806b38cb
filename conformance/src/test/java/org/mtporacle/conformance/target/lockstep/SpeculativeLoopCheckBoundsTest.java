package org.mtporacle.conformance.target.lockstep;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;
import org.mtporacle.api.Tolerance;

/** The loop check holds the drafter's K/V to the drafter profile's own K/V bound, never looser than the state's. */
class SpeculativeLoopCheckBoundsTest {
    @Test
    void theDrafterKvBoundIsTheDrafterProfilesForBuiltInProfiles() {
        assertThat(SpeculativeLoopCheck.drafterKvNmse(TargetTolerance.BF16)).isEqualTo(Tolerance.BF16.kvNmse())
                .isEqualTo(2e-3);
        assertThat(SpeculativeLoopCheck.drafterKvNmse(TargetTolerance.F32)).isEqualTo(1e-9);
        assertThat(SpeculativeLoopCheck.drafterKvNmse(TargetTolerance.EXACT)).isZero();
    }

    @Test
    void anotherProfileKeepsItsStateBound() {
        assertThat(SpeculativeLoopCheck.drafterKvNmse(TargetTolerance.calibration())).isEqualTo(Double.MAX_VALUE);
        assertThat(SpeculativeLoopCheck.drafterKvNmse(new TargetTolerance("mine", 1, 0.5, 0.05, 0))).isEqualTo(0.05);
        assertThat(SpeculativeLoopCheck.drafterKvNmse(new TargetTolerance("bf16", 4, 0.25, 1e-4, 0.0375)))
                .as("never looser than the state bound").isEqualTo(1e-4);
    }
}
