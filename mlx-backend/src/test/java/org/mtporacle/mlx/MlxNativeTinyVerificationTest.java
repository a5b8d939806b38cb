package org.mtporacle.mlx;

import org.mtporacle.conformance.lockstep.Tolerance;

import java.util.Map;

/** The TCK on MLX, precision=native (bf16 profile), tiny and tiny-q4 fixtures. */
class MlxNativeTinyVerificationTest extends MlxVerification {
    @Override
    protected Map<String, String> backendOptions() {
        return Map.of("precision", "native", "device", "cpu");
    }

    @Override
    protected Tolerance tolerance() {
        return Tolerance.BF16;
    }
}
