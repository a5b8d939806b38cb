package org.mtporacle.mlx;

import org.junit.jupiter.api.Nested;
import org.mtporacle.api.MtpBackend;
import org.mtporacle.conformance.lockstep.Tolerance;
import org.mtporacle.conformance.tck.BackendVerification;

import java.nio.file.Path;
import java.util.Map;

/**
 * The MLX backend through the full TCK: both precision modes (native bf16 against the {@code bf16} profile, f32
 * against {@code f32}), on the tiny and small fixtures, dense and 4-bit. Skipped, with the reason printed, when
 * mlx-c is not found (set {@code MTP_MLX_LIBRARY}).
 */
class MlxVerificationTest {

    /** Shared settings of the MLX runs. */
    abstract static class Mlx extends BackendVerification {
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

    @Nested
    class NativeTiny extends Mlx {
        @Override
        protected Map<String, String> backendOptions() {
            return Map.of("precision", "native", "device", "cpu");
        }

        @Override
        protected Tolerance tolerance() {
            return Tolerance.BF16;
        }
    }

    @Nested
    class F32Tiny extends Mlx {
        @Override
        protected Map<String, String> backendOptions() {
            return Map.of("precision", "f32", "device", "cpu");
        }
    }

    @Nested
    class NativeSmall extends Mlx {
        @Override
        protected Map<String, String> backendOptions() {
            return Map.of("precision", "native", "device", "cpu");
        }

        @Override
        protected Tolerance tolerance() {
            return Tolerance.BF16;
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

    @Nested
    class F32Small extends Mlx {
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
}
