package org.mtporacle.mlx;

import org.mtporacle.api.MtpBackend;
import org.mtporacle.conformance.tck.BackendVerification;

import java.nio.file.Path;

/**
 * The MLX backend through the full TCK ({@code MlxNativeTinyVerificationTest}, {@code MlxF32TinyVerificationTest},
 * {@code MlxNativeSmallVerificationTest}, {@code MlxF32SmallVerificationTest}): both precision modes (native bf16
 * against the {@code bf16} profile, f32 against {@code f32}), tiny and small fixtures, dense and 4-bit. Skipped, with
 * the reason printed, when mlx-c is not found (set {@code MTP_MLX_LIBRARY}).
 */
abstract class MlxVerification extends BackendVerification {
    @Override
    protected MtpBackend createBackend() {
        return new MlxBackend();
    }

    @Override
    protected Path fixtureCache() {
        return MlxTestSupport.fixtureCache();
    }

    @Override
    protected int lockstepChains() {
        return 30;
    }
}
