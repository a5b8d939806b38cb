package org.mtporacle.api;

import org.junit.jupiter.api.Test;

import java.util.Collections;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

/**
 * The maximum context of spec §11.13, through the shared skeleton over a backend that computes nothing (so a row can
 * reach 2^20 positions in milliseconds, with a block of H = 2), and the per-forward bound computed directly for
 * shapes too large to build. Expected values are the spec's numbers.
 */
class MaximumContextTest {
    /** H = 2, one head of D = 2: a row's cache is 2 values per position, so the row bound is 2^20 itself. */
    static final MtpConfig SMALL = new MtpConfig(2, 1, 1, 2, 2, 1e4, 1e-6, 8, 2);

    /** Storage is only the number of forwards run: the skeleton's bookkeeping is what is under test. */
    static final class CountingRows extends AbstractDraftRows<Integer> {
        CountingRows(MtpModel model) {
            super(model, 0);
        }

        @Override
        protected boolean modelClosed() {
            return false;
        }

        @Override
        protected Integer appendRows(Integer s, List<RowCheckpoint> checkpoints) {
            return s;
        }

        @Override
        protected Integer keepRows(Integer s, int[] keep, int[] lengths) {
            return s;
        }

        @Override
        protected Integer forward(Integer s, int[] at, boolean[] rows, int[] ids, float[] hin, int n) {
            return s + 1;
        }

        @Override
        protected Integer retain(Integer s, float[] hidden) {
            return s;
        }

        @Override
        protected Drafted<Integer> draftChain(Integer s, int[] at, int[] pending, int depth, long[] steps,
                                              DraftSampling sampling) {
            return new Drafted<>(new int[pending.length][depth], s + depth);
        }

        @Override
        protected RowTensors export(Integer s, int row, int length) {
            throw new UnsupportedOperationException();
        }

        @Override
        protected void release(Integer s) {
        }
    }

    static MtpModel model(MtpConfig c) {
        return new MtpModel(c, null, "max-context-test", "test", "companion", List.of());
    }

    static HostTensor tokens(int len) {
        return HostTensor.ofInts(new int[len], 1, len);
    }

    private static HostTensor context(int len) {
        return HostTensor.ofFloats(new float[2 * len], 1, len, 2);
    }

    @Test
    void aRowIsRefusedPastTwoToTheTwentyPositionsAndNothingChanges() {
        assertThat(RowContract.maxPositions(SMALL)).isEqualTo(1 << 20);
        try (CountingRows g = new CountingRows(model(SMALL))) {
            g.append(Collections.singletonList(null));
            MtpException tooLong = catchThrowableOfType(MtpException.class,
                    () -> g.prefill(tokens((1 << 20) + 2), context(1)));
            assertThat(tooLong.kind()).isEqualTo(MtpException.Kind.INVALID_ARGUMENT);
            assertThat(tooLong.getMessage()).contains("L = 1048578", "§11.13");

            g.prefill(tokens(1 << 20), context(1 << 20)); // a cold row keeps L − 1 positions
            assertThat(g.drafterLengths()).containsExactly((1 << 20) - 1);
            int forwards = g.storage();

            MtpException more = catchThrowableOfType(MtpException.class, () -> g.prefill(tokens(2), context(2)));
            assertThat(more.kind()).isEqualTo(MtpException.Kind.INVALID_ARGUMENT);
            assertThat(more.getMessage()).contains("row 0 holds 1048575", "1048577", "1048576");
            MtpException round = catchThrowableOfType(MtpException.class,
                    () -> g.draft(new int[1], 1, new long[1], DraftSampling.greedy(1)));
            assertThat(round.kind()).isEqualTo(MtpException.Kind.INVALID_ARGUMENT);
            assertThat(round.getMessage()).startsWith("draft: row 0 holds 1048575");
            assertThat(g.drafterLengths()).as("unchanged").containsExactly((1 << 20) - 1);
            assertThat(g.storage()).as("no forward ran").isEqualTo(forwards);

            g.draft(new int[1], 0, new long[1], DraftSampling.greedy(1)); // depth 0 adds the pending row only
            assertThat(g.drafterLengths()).containsExactly(1 << 20);
        }
    }

    @Test
    void aWideCacheLowersTheRowBoundAndAWideForwardIsRefusedBeforeAllocating() {
        // nKV·D = 2^14: 2^30 / 2^14 = 2^16 positions per row
        MtpConfig wide = new MtpConfig(64, 64, 64, 256, 64, 1e4, 1e-6, 1 << 18, 1 << 14);
        assertThat(RowContract.maxPositions(wide)).isEqualTo(1 << 16);
        // widest per-token vector 2·nH·D = 32768: 32 rows × 1024 positions × 2^15 = 2^30 fits, one more row does not
        assertThat(RowContract.widestPerToken(model(wide), false)).isEqualTo(1 << 15);
        RowContract.forwardSize("prefill", 32, 1024, model(wide), false, "");
        MtpException e = catchThrowableOfType(MtpException.class,
                () -> RowContract.forwardSize("prefill", 33, 1024, model(wide), false, "split it"));
        assertThat(e.kind()).isEqualTo(MtpException.Kind.INVALID_ARGUMENT);
        assertThat(e.getMessage()).contains("33 rows × 1024 positions × 32768", "§11.13", "split it");
        // with the logits (V = 2^18), 4096 rows of one draft step fit and 4097 do not
        RowContract.forwardSize("draft", 4096, 1, model(wide), true, "");
        assertThat(catchThrowableOfType(MtpException.class,
                () -> RowContract.forwardSize("draft", 4097, 1, model(wide), true, "")).kind())
                .isEqualTo(MtpException.Kind.INVALID_ARGUMENT);
    }
}
