package org.mtporacle.reference.block;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** {@link Attention#weightedSum}: the vector form equals the plain loop bit for bit on ragged head sizes. */
class AttentionTest {
    private static final long SEED = 0xA77E_2025L;

    @Test
    void vectorWeightedSumEqualsThePlainLoopBitForBit() {
        SplittableRandom rnd = new SplittableRandom(SEED);
        for (int d : new int[] {1, 15, 16, 17, 63, 64, 65, 128, 256, 259}) {
            for (int visible : new int[] {1, 2, 7, 65}) {
                float[] p = floats(visible, rnd);
                float[] values = floats(visible * d, rnd);
                float[] start = floats(d + 3, rnd);
                float[] got = start.clone();
                float[] want = start.clone();
                Attention.weightedSum(got, 3, p, values, d, visible);
                Attention.weightedSumScalar(want, 3, p, values, 0, d, d, visible);
                assertThat(got).as("d=%d visible=%d seed %d", d, visible, SEED).isEqualTo(want);
            }
        }
    }

    private static float[] floats(int n, SplittableRandom rnd) {
        float[] v = new float[n];
        for (int i = 0; i < n; i++) {
            v[i] = (float) (rnd.nextDouble() * 2 - 1);
        }
        return v;
    }
}
