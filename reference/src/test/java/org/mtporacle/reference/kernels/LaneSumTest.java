package org.mtporacle.reference.kernels;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.SplittableRandom;
import jdk.incubator.vector.FloatVector;
import org.junit.jupiter.api.Test;

/** {@link LaneSum}: the side-by-side tree of {@link LaneSum#sum16} is the same arithmetic as {@link LaneSum#sum}. */
class LaneSumTest {
    private static final long SEED = 0x1A4E_5005L;

    @Test
    void sum16IsBitIdenticalToSumOfEachRowOverVariedMagnitudes() {
        SplittableRandom rnd = new SplittableRandom(SEED);
        float[] acc = new float[16 * LaneSum.L];
        float[] res = new float[19];
        for (int trial = 0; trial < 200; trial++) {
            for (int i = 0; i < acc.length; i++) {
                acc[i] = (float) (rnd.nextDouble(-1, 1) * Math.scalb(1.0, rnd.nextInt(-30, 30)));
            }
            LaneSum.sum16(res, 3, acc);
            for (int k = 0; k < 16; k++) {
                float one = LaneSum.sum(FloatVector.fromArray(LaneSum.F, acc, k * LaneSum.L));
                assertThat(Float.floatToRawIntBits(res[3 + k])).as("row %d trial %d seed %d", k, trial, SEED)
                        .isEqualTo(Float.floatToRawIntBits(one));
            }
        }
    }
}
