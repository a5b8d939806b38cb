package org.mtporacle.mlx;

import org.junit.jupiter.api.Test;
import org.mtporacle.mlx.handle.MlxDiscovery;
import org.mtporacle.mlx.handle.MlxLibrary;
import org.mtporacle.mlx.handle.MlxOps;
import org.mtporacle.mlx.handle.MlxScope;
import org.mtporacle.mlx.handle.MlxStream;

import static org.assertj.core.api.Assertions.assertThat;

class MlxSelfCheckTest {

    @Test
    void theCpuDevicePassesEveryOpOfTheSelfCheck() {
        MlxTestSupport.requireMlx();
        MlxLibrary lib = MlxLibrary.load(MlxDiscovery.fromEnvironment());
        try (MlxStream stream = MlxStream.open(lib, false)) {
            String failure = lib.thread().call(() -> {
                try (MlxScope scope = new MlxScope(lib)) {
                    return MlxSelfCheck.firstFailure(new MlxOps(stream, scope));
                }
            });
            assertThat(failure).as("self-check on MLX's CPU device").isNull();
        }
    }

    @Test
    void theBackendReportsTheSettingsItPutIntoTheEnvironment() {
        MlxBackend backend = MlxTestSupport.requireMlx();
        String reason = backend.availability().reason();
        String[][] settings = {{"MLX_USE_CUDA_GRAPHS", "0"}, {"MLX_ENABLE_TF32", "0"},
                {"MLX_CUDA_SDPA_CACHE_SIZE", "65536"}};
        for (String[] s : settings) {
            assertThat(reason).contains(s[0] + "=");
            if (System.getenv(s[0]) == null) {
                assertThat(reason).contains(s[0] + "=" + s[1] + " (set by mtp");
            }
        }
    }

    @Test
    void anErrorOfAFewUlpsPassesAndTf32SizedErrorsFail() {
        double[] want = {1.0, -0.5, 0.25, 2.0};
        float[] close = {1.0f + 1e-7f, -0.5f, 0.25f, 2.0f - 2e-7f};
        assertThat(MlxSelfCheck.compare("op", close, want)).isNull();
        // TF32 keeps 10 mantissa bits: an error near 2^-11 relative
        float[] tf32 = {1.0f, -0.5f + 4.9e-4f, 0.25f, 2.0f};
        assertThat(MlxSelfCheck.compare("matmul", tf32, want))
                .contains("matmul differs from its f64 definition: element 1").contains("relative error 0.000245 > 1e-05");
    }

    @Test
    void aNanOrAMissingElementFails() {
        double[] want = {1.0, 2.0};
        assertThat(MlxSelfCheck.compare("rms", new float[] {Float.NaN, 2.0f}, want)).contains("element 0 is NaN");
        assertThat(MlxSelfCheck.compare("rms", new float[] {1.0f}, want)).isEqualTo("rms: 1 values, expected 2");
    }

    @Test
    void aBadDefaultDeviceFromTheEnvironmentIsNamedAsSuch() {
        MlxTestSupport.requireMlx();
        MlxBackend backend = new MlxBackend(MlxDiscovery.fromEnvironment(), "tpu");
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> backend.load(null, java.util.Map.of()))
                .hasMessage("mlx: device = 'tpu' (from MTP_MLX_DEVICE), expected auto, cpu or gpu");
    }

    @Test
    void mlxCGoesIntoTheGlobalNamespaceWhereCudnnLooksUpItsOwnSymbols() throws Throwable {
        MlxTestSupport.requireMlx();
        MlxLibrary lib = MlxLibrary.load(MlxDiscovery.fromEnvironment());
        org.junit.jupiter.api.Assumptions.assumeTrue(System.getProperty("os.name").toLowerCase().contains("linux"),
                "RTLD_GLOBAL loading is for Linux");
        assertThat(lib.loadedGlobally()).isTrue();
        // dlsym(RTLD_DEFAULT, ...) sees only the global namespace: mlx-c's symbols are there
        var linker = java.lang.foreign.Linker.nativeLinker();
        var dlsym = linker.downcallHandle(linker.defaultLookup().find("dlsym").orElseThrow(),
                java.lang.foreign.FunctionDescriptor.of(java.lang.foreign.ValueLayout.ADDRESS,
                        java.lang.foreign.ValueLayout.ADDRESS, java.lang.foreign.ValueLayout.ADDRESS));
        try (var arena = java.lang.foreign.Arena.ofConfined()) {
            var found = (java.lang.foreign.MemorySegment) dlsym.invokeExact(java.lang.foreign.MemorySegment.NULL,
                    arena.allocateFrom("mlx_version"));
            assertThat(found).isNotEqualTo(java.lang.foreign.MemorySegment.NULL);
        }
        // and so cuDNN's fused attention stays as MLX ships it
        assertThat(lib.environment()).noneMatch(x -> x.name().equals("MLX_CUDA_USE_CUDNN_SDPA") && x.setByBackend());
    }
}
