package org.mtporacle.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/** Shape arithmetic is overflow-checked: a config whose products wrap in int is refused up front. */
class MtpConfigBoundsTest {
    @Test
    void aHeadCountNearTwoToTheThirtyIsRefusedAsAnIncompatibleModel() {
        // 2 · 2^30 · 2 = 2^32 wraps to 0 in int: q_proj [0, H] would have "matched" an empty tensor
        assertThatThrownBy(() -> new MtpConfig(64, 1 << 30, 1 << 30, 2, 2, 1e4, 1e-6, 32, 32))
                .isInstanceOfSatisfying(MtpException.class, e -> {
                    assertThat(e.kind()).isEqualTo(MtpException.Kind.INCOMPATIBLE_MODEL);
                    assertThat(e.getMessage()).contains("num_attention_heads × head_dim × 2", "4294967296");
                });
        assertThatThrownBy(() -> new MtpConfig(Integer.MAX_VALUE, 1, 1, 8, 8, 1e4, 1e-6, 32, 32))
                .isInstanceOf(MtpException.class).hasMessageContaining("hidden_size × 2");
        assertThatThrownBy(() -> new MtpConfig(64, 4, 2, 16, 16, 1e4, 1e-6, (1 << 24) + 1, 32))
                .isInstanceOf(MtpException.class).hasMessageContaining("vocab_size");
    }

    @Test
    void realModelShapesAreWellInside() {
        // Qwen3.5-style: H 5120, 40 × 256 heads, V 248320, I 17408
        MtpConfig c = new MtpConfig(5120, 40, 8, 256, 64, 1e7, 1e-6, 248320, 17408);
        assertThat(2L * c.numHeads() * c.headDim()).isLessThan(MtpConfig.MAX_WIDTH);
    }
}
