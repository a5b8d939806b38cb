package org.mtporacle.mlx;

import java.util.Map;

/** The TCK on MLX, precision=native (bf16 profile), tiny and tiny-q4 fixtures. */
class MlxNativeTinyVerificationTest extends MlxVerification {
    @Override
    protected Map<String, String> backendOptions() {
        return Map.of("precision", "native", "device", "cpu");
    }
}
