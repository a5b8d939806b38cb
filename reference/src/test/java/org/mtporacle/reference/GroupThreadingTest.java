package org.mtporacle.reference;

import org.junit.jupiter.api.Test;
import org.mtporacle.api.DType;
import org.mtporacle.api.DraftSampling;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.RowCheckpoint;
import org.mtporacle.reference.block.BlockForward;
import org.mtporacle.reference.block.ForwardTrace;
import org.mtporacle.reference.block.RowKv;
import org.mtporacle.reference.kernels.KernelMode;
import org.mtporacle.reference.kernels.Kernels;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The threading and lifetime contract (spec §11.11): a call that overlaps another call on the same group, from
 * another thread or from inside it, fails with ILLEGAL_STATE and changes nothing; a group whose model was closed
 * refuses every call. Overlap is made certain by a block that waits inside its forward until the test lets it go.
 */
class GroupThreadingTest {
    private static final MtpModel MODEL = TestModels.random(TestModels.tinyConfig(), 7, DType.F32);
    private static final int H = MODEL.config().hiddenSize();

    /** Forwards with the real block; the first forward after {@link #arm()} waits for {@link #release()}. */
    private static final class GateBlock implements BlockForward {
        private final BlockForward inner;
        private volatile CountDownLatch entered;
        private volatile CountDownLatch gate;

        GateBlock(BlockForward inner) {
            this.inner = inner;
        }

        void arm() {
            entered = new CountDownLatch(1);
            gate = new CountDownLatch(1);
        }

        void awaitEntered() throws InterruptedException {
            assertThat(entered.await(10, TimeUnit.SECONDS)).as("the call reached its forward").isTrue();
        }

        void release() {
            gate.countDown();
        }

        @Override
        public float[] forward(float[] e, float[] hin, RowKv[] kvs, int s, ForwardTrace trace) {
            CountDownLatch g = gate;
            if (g != null && entered.getCount() > 0) {
                entered.countDown();
                try {
                    g.await(10, TimeUnit.SECONDS);
                } catch (InterruptedException ex) {
                    Thread.currentThread().interrupt();
                }
            }
            return inner.forward(e, hin, kvs, s, trace);
        }
    }

    private static HostTensor tokens(long seed, int b, int l) {
        return TestModels.tokens(new SplittableRandom(seed), b, l, MODEL.config().vocabSize());
    }

    private static HostTensor hiddens(long seed, int b, int l) {
        return TestModels.hiddens(new SplittableRandom(seed), b, l, H);
    }

    @Test
    void aCallFromAnotherThreadDuringACallIsRefusedAndChangesNothing() throws Exception {
        try (Kernels k = new Kernels(KernelMode.SCALAR, 1);
             ReferenceDraftModel real = ReferenceBackend.load(MODEL, KernelMode.SCALAR, 1)) {
            GateBlock gate = new GateBlock(real.block());
            ReferenceDraftModel dm = new ReferenceDraftModel(MODEL, k, gate);
            ReferenceDraftRows g = dm.openReferenceRows(Arrays.asList(null, null));
            g.prefill(tokens(1, 2, 4), hiddens(2, 2, 4));

            gate.arm();
            CompletableFuture<int[][]> drafting = CompletableFuture.supplyAsync(
                    () -> g.draft(new int[] {3, 4}, 2, new long[2], DraftSampling.greedy(2)));
            gate.awaitEntered();
            List<Runnable> overlapping = List.of(
                    () -> g.prefill(tokens(3, 2, 2), hiddens(4, 2, 2)),
                    () -> g.append(Arrays.asList((RowCheckpoint) null)),
                    () -> g.filterRows(new int[] {1}),
                    () -> g.draft(new int[] {1, 1}, 1, new long[2], DraftSampling.greedy(2)),
                    () -> g.commit(new int[2], hiddens(5, 2, 3)),
                    () -> g.capture(0));
            for (Runnable call : overlapping) {
                assertThatThrownBy(call::run).isInstanceOfSatisfying(MtpException.class, e -> {
                    assertThat(e.kind()).isEqualTo(MtpException.Kind.ILLEGAL_STATE);
                    assertThat(e.getMessage()).contains("draft is in progress on this group on another thread")
                            .contains("§11.11");
                });
            }
            gate.release();
            int[][] proposals = drafting.get(10, TimeUnit.SECONDS);
            assertThat(g.roundOpen()).isTrue();
            assertThat(g.rowCount()).isEqualTo(2);

            // the refused calls left nothing behind: the round commits exactly as on a group that saw none of them
            g.commit(new int[] {0, 2}, hiddens(6, 2, 3));
            ReferenceDraftRows same = real.openReferenceRows(Arrays.asList(null, null));
            same.prefill(tokens(1, 2, 4), hiddens(2, 2, 4));
            assertThat(same.draft(new int[] {3, 4}, 2, new long[2], DraftSampling.greedy(2))).isEqualTo(proposals);
            same.commit(new int[] {0, 2}, hiddens(6, 2, 3));
            for (int r = 0; r < 2; r++) {
                assertThat(g.capture(r).contentEquals(same.capture(r))).as("row %d", r).isTrue();
            }
        }
    }

    @Test
    void aCallFromInsideACallIsRefused() {
        try (ReferenceDraftModel dm = ReferenceBackend.load(MODEL, KernelMode.SCALAR, 1)) {
            ReferenceDraftRows g = dm.openReferenceRows(Arrays.asList(null, null));
            g.prefill(tokens(1, 2, 3), hiddens(2, 2, 3));
            List<MtpException> inside = new ArrayList<>();
            g.draft(new int[] {1, 2}, 1, new long[2], DraftSampling.greedy(2), (row, pos, lp, off, sampled) -> {
                try {
                    g.filterRows(new int[] {0});
                } catch (MtpException e) {
                    inside.add(e);
                }
                try {
                    g.close();
                } catch (MtpException e) {
                    inside.add(e);
                }
                return sampled;
            });
            assertThat(inside).hasSize(4).allSatisfy(e -> assertThat(e.kind())
                    .isEqualTo(MtpException.Kind.ILLEGAL_STATE));
            assertThat(inside.get(0).getMessage()).startsWith("filterRows: draft is in progress on this group (this "
                    + "call comes from inside it)");
            assertThat(inside.get(1).getMessage()).startsWith("close: called from inside draft");
            assertThat(g.rowCount()).isEqualTo(2);
            assertThat(g.isClosed()).isFalse();
        }
    }

    @Test
    void aGroupWhoseModelWasClosedRefusesEveryCallAndStillCloses() {
        ReferenceDraftModel dm = ReferenceBackend.load(MODEL, KernelMode.VECTOR, 2);
        ReferenceDraftRows g = dm.openReferenceRows(Arrays.asList(null, null));
        g.prefill(tokens(1, 2, 3), hiddens(2, 2, 3));
        RowCheckpoint cp = g.capture(0);
        dm.close();
        List<Runnable> calls = List.of(
                () -> g.append(List.of(cp)),
                () -> g.filterRows(new int[] {0}),
                () -> g.prefill(tokens(3, 2, 2), hiddens(4, 2, 2)),
                () -> g.draft(new int[] {1, 2}, 1, new long[2], DraftSampling.greedy(2)),
                () -> g.capture(0));
        for (Runnable call : calls) {
            assertThatThrownBy(call::run).isInstanceOfSatisfying(MtpException.class, e -> {
                assertThat(e.kind()).isEqualTo(MtpException.Kind.ILLEGAL_STATE);
                assertThat(e.getMessage()).matches("^(append|filterRows|prefill|draft|capture): the model this "
                        + "group was opened from is closed.*");
            });
        }
        assertThat(g.rowCount()).isEqualTo(2);
        g.close();
        assertThat(g.isClosed()).isTrue();
    }
}
