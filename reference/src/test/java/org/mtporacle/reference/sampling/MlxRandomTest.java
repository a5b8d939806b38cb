package org.mtporacle.reference.sampling;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class MlxRandomTest {
    private static MlxRandom.Key key(long k0, long k1) {
        return new MlxRandom.Key((int) k0, (int) k1);
    }

    // Random123 tests/kat_vectors, "threefry2x32 20 ctr0 ctr1 key0 key1 out0 out1".
    @Test
    void threefryMatchesRandom123KnownAnswersForZeros() {
        MlxRandom.Words w = MlxRandom.threefry2x32(key(0, 0), 0, 0);
        assertThat(w).isEqualTo(new MlxRandom.Words(0x6b200159, 0x99ba4efe));
    }

    @Test
    void threefryMatchesRandom123KnownAnswersForAllOnes() {
        MlxRandom.Words w = MlxRandom.threefry2x32(key(0xffffffffL, 0xffffffffL), 0xffffffff, 0xffffffff);
        assertThat(w).isEqualTo(new MlxRandom.Words(0x1cb996fc, 0xbb002be7));
    }

    @Test
    void threefryMatchesRandom123KnownAnswersForPiDigits() {
        MlxRandom.Words w = MlxRandom.threefry2x32(key(0x13198a2eL, 0x03707344L), 0x243f6a88, 0x85a308d3);
        assertThat(w).isEqualTo(new MlxRandom.Words(0xc4923a9c, 0x483df7a0));
    }

    // The next four come from MLX's own tests/random_tests.cpp.
    @Test
    void keyPutsTheHighWordFirst() {
        assertThat(MlxRandom.key(1L)).isEqualTo(key(0, 1));
        assertThat(MlxRandom.key(1L << 32)).isEqualTo(key(1, 0));
        assertThat(MlxRandom.key((1L << 32) + 1)).isEqualTo(key(1, 1));
    }

    @Test
    void splitMatchesMlxTestVectors() {
        MlxRandom.Key[] pair = MlxRandom.split(MlxRandom.key(0));
        assertThat(pair).containsExactly(key(4146024105L, 967050713L), key(2718843009L, 1272950319L));
        assertThat(MlxRandom.split(MlxRandom.key(0), 3)).containsExactly(key(2467461003L, 428148500L),
                key(3186719485L, 3840466878L), key(2562233961L, 1946702221L));
    }

    @Test
    void oddCountBitsMatchMlxTestVector() {
        assertThat(MlxRandom.bits(MlxRandom.key(0), 3))
                .containsExactly((int) 4146024105L, (int) 1351547692L, (int) 2718843009L);
    }

    @Test
    void singleUniformMatchesMlxTestVectors() {
        assertThat(MlxRandom.uniform(MlxRandom.key(0), 1)[0]).isEqualTo(1797259609f / 4294967295f);
        assertThat(MlxRandom.uniform(MlxRandom.key(1), 1)[0]).isEqualTo(507451445f / 4294967295f);
    }

    @Test
    void bitsAreAPrefixFreeLayoutThatDependsOnTheCount() {
        MlxRandom.Key k = MlxRandom.key(42);
        int[] eight = MlxRandom.bits(k, 8);
        // Even count: words i and i + 4 come from one counter (i, i + 4).
        MlxRandom.Words w = MlxRandom.threefry2x32(k, 1, 5);
        assertThat(eight[1]).isEqualTo(w.first());
        assertThat(eight[5]).isEqualTo(w.second());
        // Odd count 7: word 3 is the first half of counter (3, 0).
        assertThat(MlxRandom.bits(k, 7)[3]).isEqualTo(MlxRandom.threefry2x32(k, 3, 0).first());
    }

    @Test
    void uniformStaysInHalfOpenUnitInterval() {
        assertThat(MlxRandom.uniformOf(0)).isEqualTo(0.0f);
        assertThat(MlxRandom.uniformOf(-1)).isEqualTo(Math.nextDown(1.0f)); // 2^32 − 1 rounds to 1, then clamps
        for (float u : MlxRandom.uniform(MlxRandom.key(7), 100_001)) {
            assertThat(u).isGreaterThanOrEqualTo(0.0f).isLessThan(1.0f);
        }
    }

    @Test
    void gumbelOfZeroBitsIsNegativeInfinity() {
        float u = MlxRandom.uniformOf(0);
        assertThat(-MlxCpuExpLog.log(-MlxCpuExpLog.log(u))).isEqualTo(Float.NEGATIVE_INFINITY);
    }

    @Test
    void categoricalPicksTheLowestIndexOnTies() {
        // Finite noise plus +inf ties at +inf, so the draw is decided by the tie rule alone.
        float[] logits = {1f, Float.POSITIVE_INFINITY, 0f, Float.POSITIVE_INFINITY};
        for (int s = 0; s < 20; s++) {
            assertThat(MlxRandom.categorical(logits, 0, 4, MlxRandom.key(s))).isEqualTo(1);
        }
    }

    @Test
    void inverseCdfNeverPicksAZeroWeightTokenInTheMiddle() {
        float[] logits = {0f, Float.NEGATIVE_INFINITY, 0f};
        for (int s = 0; s < 200; s++) {
            assertThat(MlxRandom.categoricalInverseCdf(logits, 0, 3, MlxRandom.key(s))).isIn(0, 2);
        }
    }

    @Test
    void mlxExpIsCloseToMathExp() {
        // x·log2(e) is rounded to float32 first: below 128 its half-ulp is 2^-17, a relative error of 2^-17·ln 2 ≈ 5.3e-6.
        final double relTolerance = 1e-5;
        for (float x = -87f; x < 88f; x += 0.37f) {
            double want = Math.exp(x);
            assertThat((double) MlxCpuExpLog.exp(x)).isCloseTo(want, org.assertj.core.data.Offset.offset(
                    Math.max(want * relTolerance, Float.MIN_NORMAL)));
        }
        assertThat(MlxCpuExpLog.exp(Float.NEGATIVE_INFINITY)).isEqualTo(0f);
        assertThat(MlxCpuExpLog.exp(100f)).isEqualTo(Float.POSITIVE_INFINITY);
        assertThat(MlxCpuExpLog.exp(0f)).isEqualTo(1f);
    }
}
