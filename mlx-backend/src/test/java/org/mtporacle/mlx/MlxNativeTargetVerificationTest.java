package org.mtporacle.mlx;

import org.mtporacle.api.Tolerance;
import org.mtporacle.conformance.target.lockstep.TargetTolerance;

import java.util.Map;

/** The target TCK on MLX CPU, precision=native (bf16 weights and activations), held to the {@code bf16} profile. */
class MlxNativeTargetVerificationTest extends MlxTargetVerification {
    @Override
    protected Map<String, String> options() {
        return Map.of("precision", "native", "device", "cpu");
    }

    @Override
    protected TargetTolerance tolerance() {
        return TargetTolerance.of(Tolerance.BF16);
    }
}
