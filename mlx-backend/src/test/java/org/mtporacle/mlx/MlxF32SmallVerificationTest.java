package org.mtporacle.mlx;

import java.util.Map;

/** The TCK on MLX, precision=f32 (f32 profile), small and small-q4 fixtures. */
class MlxF32SmallVerificationTest extends MlxVerification {
    @Override
    protected Map<String, String> backendOptions() {
        return Map.of("precision", "f32", "device", "cpu");
    }

    @Override
    protected String denseFixture() {
        return "small";
    }

    @Override
    protected String quantizedFixture() {
        return "small-q4";
    }

    @Override
    protected int lockstepChains() {
        return 15;
    }
}
