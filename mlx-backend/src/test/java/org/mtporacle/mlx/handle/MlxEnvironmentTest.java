package org.mtporacle.mlx.handle;

import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/** Which MLX settings the backend makes, and that a user's own setting is left alone and reported as such. */
class MlxEnvironmentTest {
    // every variable already set, so apply() calls no setenv and the test leaves the process environment alone
    private static final Map<String, String> USER = Map.of("MLX_USE_CUDA_GRAPHS", "1", "MLX_ENABLE_TF32", "1",
            "MLX_CUDA_SDPA_CACHE_SIZE", "1", "MLX_CUDA_USE_CUDNN_SDPA", "1");

    @Test
    void cudnnAttentionIsTurnedOffOnlyWhenMlxCIsNotInTheGlobalNamespace() {
        List<String> global = MlxEnvironment.apply(USER, true).stream().map(MlxEnvironment.Setting::name).toList();
        List<String> local = MlxEnvironment.apply(USER, false).stream().map(MlxEnvironment.Setting::name).toList();
        assertThat(global).containsExactly("MLX_USE_CUDA_GRAPHS", "MLX_ENABLE_TF32", "MLX_CUDA_SDPA_CACHE_SIZE");
        assertThat(local).containsExactly("MLX_USE_CUDA_GRAPHS", "MLX_ENABLE_TF32", "MLX_CUDA_SDPA_CACHE_SIZE",
                "MLX_CUDA_USE_CUDNN_SDPA");
        assertThat(MlxEnvironment.REQUIRED.get("MLX_CUDA_SDPA_CACHE_SIZE")[0]).isEqualTo("65536");
        assertThat(MlxEnvironment.REQUIRED.get("MLX_CUDA_USE_CUDNN_SDPA")[0]).isEqualTo("0");
    }

    @Test
    void aUsersOwnValueIsKeptAndSaidToComeFromTheEnvironment() {
        for (MlxEnvironment.Setting s : MlxEnvironment.apply(USER, false)) {
            assertThat(s.value()).isEqualTo("1");
            assertThat(s.setByBackend()).isFalse();
            assertThat(s.describe()).isEqualTo(s.name() + "=1 (from the environment)");
        }
    }
}
