package org.mtporacle.mlx;

import java.util.Map;

/** The TCK on MLX, precision=f32 (f32 profile), on the MoE fixtures tiny-moe and tiny-moe-q4 (spec §12). */
class MlxF32TinyMoeVerificationTest extends MlxVerification {
    @Override
    protected Map<String, String> backendOptions() {
        return Map.of("precision", "f32", "device", "cpu");
    }

    @Override
    protected String denseFixture() {
        return "tiny-moe";
    }

    @Override
    protected String quantizedFixture() {
        return "tiny-moe-q4";
    }
}
