package org.mtporacle.reference.sampling;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/**
 * Values printed by MLX 0.31.1 itself (CPU, libmlx C++ API, a small check program outside the repository) for
 * {@code key(stepKey(seed, step))}; see conformance/SPEC.md, "Cross-check against MLX".
 */
class MlxCrossCheckVectorsTest {
    private static final float[] LOGITS8 = SpecVectorPrinter.LOGITS8;

    private static void checkAgainstMlx(long seed, long step, int k0, int k1, int[] bits8, int[] uniformBits8,
            int[] split, int cat8, int cat1000) {
        MlxRandom.Key key = MlxRandom.key(DraftSampler.stepKey(seed, step));
        assertThat(key).isEqualTo(new MlxRandom.Key(k0, k1));
        assertThat(MlxRandom.bits(key, 8)).containsExactly(bits8);
        float[] u = MlxRandom.uniform(key, 8);
        for (int i = 0; i < 8; i++) {
            assertThat(Float.floatToRawIntBits(u[i])).as("uniform[%d]", i).isEqualTo(uniformBits8[i]);
        }
        MlxRandom.Key[] halves = MlxRandom.split(key);
        assertThat(halves).containsExactly(new MlxRandom.Key(split[0], split[1]),
                new MlxRandom.Key(split[2], split[3]));
        assertThat(MlxRandom.categorical(LOGITS8, 0, 8, key)).isEqualTo(cat8);
        float[] wide = SpecVectorPrinter.wideLogits(seed, step);
        assertThat(MlxRandom.categorical(wide, 0, wide.length, key)).isEqualTo(cat1000);
    }

    @Test
    void seed42Step7MatchesMlx() {
        checkAgainstMlx(42, 7, 0xf1bbcdcb, 0xfa53e082,
                new int[] {0x9773ec01, 0x37f10abb, 0x5d12f437, 0xd22b8dff, 0xbbf00de6, 0x17811241, 0x0cdbe904,
                    0x622a1766},
                new int[] {0x3f1773ec, 0x3e5fc42b, 0x3eba25e8, 0x3f522b8e, 0x3f3bf00e, 0x3dbc0892, 0x3d4dbe90,
                    0x3ec4542f},
                new int[] {0x2ef45589, 0xdfab9270, 0xdf61fff8, 0x0b453ee2}, 4, 178);
    }

    @Test
    void seedTwoToThe63Plus5Step1MatchesMlx() {
        checkAgainstMlx(Long.MIN_VALUE + 5, 1, 0xbc6ef372, 0xfe94f82f,
                new int[] {0xf7add0eb, 0x95d463ab, 0x78dc6e9a, 0x8b8c6727, 0x550fcfe9, 0x940fa706, 0x5a2c036f,
                    0xc2d80915},
                new int[] {0x3f77add1, 0x3f15d464, 0x3ef1b8dd, 0x3f0b8c67, 0x3eaa1fa0, 0x3f140fa7, 0x3eb45807,
                    0x3f42d809},
                new int[] {0x2f075478, 0x8e924805, 0x49c4c56e, 0x47f540b7}, 0, 26);
    }

    @Test
    void mlxExpMatchesMlxOnASampledArgument() {
        // From the same run: MLX's exp(−43.125) (argument bits 0xc22c8000) printed as 0x205c5e61.
        assertThat(Float.floatToRawIntBits(MlxCpuExpLog.exp(Float.intBitsToFloat(0xc22c8000)))).isEqualTo(0x205c5e61);
    }
}
