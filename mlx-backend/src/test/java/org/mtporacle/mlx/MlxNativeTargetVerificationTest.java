package org.mtporacle.mlx;

import org.mtporacle.conformance.target.lockstep.TargetTolerance;

import java.util.Map;

/** The target TCK on MLX (CPU unless MTP_MLX_DEVICE=gpu), precision=native (bf16 weights and activations), held to {@link MlxTargetTolerances#NATIVE}. */
class MlxNativeTargetVerificationTest extends MlxTargetVerification {
    @Override
    protected Map<String, String> options() {
        return Map.of("precision", "native", "device", device());
    }

    @Override
    protected TargetTolerance tolerance() {
        return MlxTargetTolerances.NATIVE;
    }
}
