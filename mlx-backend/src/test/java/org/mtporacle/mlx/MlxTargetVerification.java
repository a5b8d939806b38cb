package org.mtporacle.mlx;

import org.mtporacle.api.LoadedTarget;
import org.mtporacle.api.TargetModel;
import org.mtporacle.conformance.target.tck.TargetBackendVerification;

import java.nio.file.Path;
import java.util.Map;

/**
 * The MLX target through the target TCK ({@code MlxF32TargetVerificationTest}, {@code MlxNativeTargetVerificationTest}):
 * precision=f32 against the {@code f32} profile, precision=native (bf16) against {@code bf16}, on MLX's CPU. Skipped,
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

    @Override
    protected int lockstepChains() {
        return 8;
    }
}
