package org.mtporacle.mlx;

import org.mtporacle.api.LoadedTarget;
import org.mtporacle.api.TargetModel;
import org.mtporacle.conformance.target.tck.TargetBackendVerification;

import java.nio.file.Path;
import java.util.Map;

/**
 * The MLX target through the target TCK ({@code MlxF32TargetVerificationTest}, {@code MlxNativeTargetVerificationTest}):
 * precision=f32 against the {@code f32} profile, precision=native (bf16) against {@code bf16}, on MLX's CPU (the GPU with {@code MTP_MLX_DEVICE=gpu}). Skipped,
 * with the reason printed, when mlx-c is not found (set {@code MTP_MLX_LIBRARY}).
 */
abstract class MlxTargetVerification extends TargetBackendVerification {
    /** The load options of this profile. */
    protected abstract Map<String, String> options();

    @Override
    protected LoadedTarget createTarget(TargetModel model) {
        return MlxTestSupport.requireMlx().loadTarget(model, options());
    }

    @Override
    protected Path fixtureCache() {
        return MlxTestSupport.fixtureCache();
    }

    /** Random chains of the TCK's lockstep rule: 5, or {@code -Dmtp.mlx.targetTckChains}. */
    @Override
    protected int lockstepChains() {
        return Integer.getInteger("mtp.mlx.targetTckChains", 5);
    }

    /** The device the checks run on: cpu, or gpu when {@code MTP_MLX_DEVICE=gpu} (scripts/mlx-gpu-check). */
    static String device() {
        return "gpu".equals(System.getenv("MTP_MLX_DEVICE")) ? "gpu" : "cpu";
    }
}
