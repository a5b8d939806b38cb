package org.mtporacle.mlx;

import java.util.Map;

/** The TCK on MLX, precision=native (bf16 profile), small and small-q4 fixtures. */
class MlxNativeSmallVerificationTest extends MlxVerification {
    @Override
    protected Map<String, String> backendOptions() {
        return Map.of("precision", "native", "device", "cpu");
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
