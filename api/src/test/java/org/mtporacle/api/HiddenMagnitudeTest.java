package org.mtporacle.api;

import org.junit.jupiter.api.Test;

import java.util.Collections;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

/**
 * Spec §11.14: hidden states whose f32 sum of squares could overflow are refused where non-finite ones are. The
 * danger and the bound are shown with plain f32 arithmetic (the RMSNorm's order: squares summed in f32), then the
 * refusal through the shared skeleton.
 */
class HiddenMagnitudeTest {
    private static float sumOfSquares(float x, int n) {
        float ss = 0f;
        for (int i = 0; i < n; i++) {
            ss += x * x;
        }
        return ss;
    }

    @Test
    void theBoundKeepsTheSumOfSquaresFiniteForTheWidestHiddenAndAboutOneE19DoesNot() {
        assertThat(sumOfSquares(1e19f, 64)).as("H = 64 values of 1e19").isInfinite();
        assertThat(sumOfSquares(2e19f, 1)).as("one value of 2e19").isInfinite();
        // the widest hidden a config may have (2·H ≤ 2^24), every value at the bound: finite, with room to spare
        float widest = sumOfSquares(RowContract.MAX_HIDDEN, 1 << 23);
        assertThat(widest).isFinite().isLessThanOrEqualTo(Float.MAX_VALUE / 4);
    }

    @Test
    void aContextOrACheckpointHiddenPastTheBoundIsRefusedNamingRowAndPosition() {
        try (MaximumContextTest.CountingRows g = new MaximumContextTest.CountingRows(
                MaximumContextTest.model(MaximumContextTest.SMALL))) {
            g.append(Collections.nCopies(2, null));
            float[] ctx = new float[2 * 3 * 2];
            ctx[(1 * 3 + 2) * 2 + 1] = 1e19f; // row 1, position 2, feature 1
            MtpException e = catchThrowableOfType(MtpException.class,
                    () -> g.prefill(HostTensor.ofInts(new int[6], 2, 3), HostTensor.ofFloats(ctx, 2, 3, 2)));
            assertThat(e.kind()).isEqualTo(MtpException.Kind.INVALID_ARGUMENT);
            assertThat(e.getMessage()).contains("context[1, 2, 1]", "row 1, position 2", "1.0E19", "§11.14");
            assertThat(g.drafterLengths()).containsExactly(0, 0);

            ctx[(1 * 3 + 2) * 2 + 1] = -RowContract.MAX_HIDDEN; // the bound itself is accepted
            g.prefill(HostTensor.ofInts(new int[6], 2, 3), HostTensor.ofFloats(ctx, 2, 3, 2).convert(DType.BF16));
            assertThat(g.drafterLengths()).containsExactly(2, 2);

            RowCheckpoint huge = RowCheckpoint.sealed(RowCheckpoint.SCHEMA, 1, 0, "max-context-test", null, null,
                    HostTensor.ofFloats(new float[] {0f, 3e19f}, 1, 1, 2));
            MtpException c = catchThrowableOfType(MtpException.class, () -> g.append(List.of(huge)));
            assertThat(c.kind()).isEqualTo(MtpException.Kind.INCOMPATIBLE_CHECKPOINT);
            assertThat(c.getMessage()).contains("hidden element 1", "§11.14");
            assertThat(g.rowCount()).isEqualTo(2);
        }
    }
}
