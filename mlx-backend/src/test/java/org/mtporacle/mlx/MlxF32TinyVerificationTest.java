package org.mtporacle.mlx;

import java.util.Map;

/** The TCK on MLX, precision=f32 (f32 profile), tiny and tiny-q4 fixtures. */
class MlxF32TinyVerificationTest extends MlxVerification {
    @Override
    protected Map<String, String> backendOptions() {
        return Map.of("precision", "f32", "device", "cpu");
    }
}
