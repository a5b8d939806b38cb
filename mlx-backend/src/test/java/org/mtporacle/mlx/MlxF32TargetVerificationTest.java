package org.mtporacle.mlx;

import org.mtporacle.conformance.target.lockstep.TargetTolerance;

import java.util.Map;

/** The target TCK on MLX (CPU unless MTP_MLX_DEVICE=gpu), precision=f32, held to the {@code f32} profile. */
class MlxF32TargetVerificationTest extends MlxTargetVerification {
    @Override
    protected Map<String, String> options() {
        return Map.of("precision", "f32", "device", device());
    }

    @Override
    protected TargetTolerance tolerance() {
        return TargetTolerance.F32;
    }
}
