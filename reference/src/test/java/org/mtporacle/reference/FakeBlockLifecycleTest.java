package org.mtporacle.reference;

import org.mtporacle.reference.block.BlockForward;
import org.mtporacle.reference.block.ForwardTrace;
import org.mtporacle.reference.block.RowKv;
import org.junit.jupiter.api.Test;
import org.mtporacle.api.DType;
import org.mtporacle.api.DraftSampling;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.RowCheckpoint;
import org.mtporacle.reference.kernels.KernelMode;
import org.mtporacle.reference.kernels.Kernels;

import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Lifecycle bookkeeping over a fake block whose K row is the embedding and V row the hidden (spec §1.9), so every
 * KV row can be read back as the {@code (token, hidden)} pair it was built from (spec §1.8).
 */
class FakeBlockLifecycleTest {
    /** K = first nKV·D features of the embedding, V = first nKV·D features of Hin, Y = Hin + E. */
    static final class FakeBlock implements BlockForward {
        private final int nKv;
        private final int d;
        private final int h;

        FakeBlock(MtpModel m) {
            nKv = m.config().numKvHeads();
            d = m.config().headDim();
            h = m.config().hiddenSize();
        }

        @Override
        public float[] forward(float[] e, float[] hin, RowKv[] kvs, int s, ForwardTrace trace) {
            float[] y = new float[e.length];
            for (int b = 0; b < kvs.length; b++) {
                RowKv kv = kvs[b];
                kv.reserve(s);
                for (int t = 0; t < s; t++) {
                    int row = (b * s + t) * h;
                    for (int g = 0; g < nKv; g++) {
                        kv.put(g, kv.length() + t, e, row + g * d, hin, row + g * d);
                    }
                }
                kv.setLength(kv.length() + s);
            }
            for (int i = 0; i < y.length; i++) {
                y[i] = e[i] + hin[i];
            }
            return y;
        }
    }

    private final MtpModel model = TestModels.random(TestModels.tinyConfig(), 11, DType.F32);
    private final int h = model.config().hiddenSize();

    @Test
    void coldPrefillBuildsRowPFromTokenPPlusOneAndHiddenP() {
        try (Kernels k = new Kernels(KernelMode.SCALAR, 1)) {
            ReferenceDraftModel dm = new ReferenceDraftModel(model, k, new FakeBlock(model));
            ReferenceDraftRows rows = dm.openReferenceRows(Arrays.asList((RowCheckpoint) null));
            int[] prompt = {5, 9, 2, 7};
            HostTensor ctx = TestModels.hiddens(new SplittableRandom(1), 1, 4, h);
            rows.prefill(HostTensor.ofInts(prompt, 1, 4), ctx);
            RowCheckpoint cp = rows.capture(0);
            assertThat(cp.processedTokens()).isEqualTo(4);
            float[] keys = cp.keys().toFloatArray();   // [1, nKV, 3, D]
            float[] vals = cp.values().toFloatArray();
            float[] c = ctx.toFloatArray();
            for (int p = 0; p < 3; p++) {
                float[] emb = dm.head().embed(new int[] {prompt[p + 1]});
                assertThat(keys[p * 16]).as("K row %d is embed(x_%d)", p, p + 1).isEqualTo(emb[0]);
                assertThat(vals[p * 16]).as("V row %d is h_%d", p, p).isEqualTo(c[p * h]);
            }
            assertThat(cp.hidden().toFloatArray()).containsExactly(Arrays.copyOfRange(c, 3 * h, 4 * h));
        }
    }

    @Test
    void oneTokenColdPrefixKeepsZeroRowsAndItsHidden() {
        try (Kernels k = new Kernels(KernelMode.SCALAR, 1)) {
            ReferenceDraftModel dm = new ReferenceDraftModel(model, k, new FakeBlock(model));
            ReferenceDraftRows rows = dm.openReferenceRows(Arrays.asList((RowCheckpoint) null));
            HostTensor ctx = TestModels.hiddens(new SplittableRandom(2), 1, 1, h);
            rows.prefill(HostTensor.ofInts(new int[] {3}, 1, 1), ctx);
            RowCheckpoint cp = rows.capture(0);
            assertThat(cp.processedTokens()).isEqualTo(1);
            assertThat(cp.keys()).isNull();
            assertThat(cp.hidden().toFloatArray()).containsExactly(ctx.toFloatArray());
        }
    }

    @Test
    void fullAcceptanceBuildsTheLastProposalRowFromTheTrueHiddenBeforeIt() {
        try (Kernels k = new Kernels(KernelMode.SCALAR, 1)) {
            ReferenceDraftModel dm = new ReferenceDraftModel(model, k, new FakeBlock(model));
            ReferenceDraftRows rows = dm.openReferenceRows(Arrays.asList((RowCheckpoint) null));
            SplittableRandom rnd = new SplittableRandom(3);
            HostTensor prompt = TestModels.hiddens(rnd, 1, 3, h);
            rows.prefill(HostTensor.ofInts(new int[] {1, 2, 3}, 1, 3), prompt);
            int[][] d = rows.draft(new int[] {4}, 3, new long[] {1}, DraftSampling.greedy(1));
            HostTensor verify = TestModels.hiddens(rnd, 1, 4, h);
            rows.commit(new int[] {3}, verify);
            RowCheckpoint cp = rows.capture(0);
            // P = 3 + 3 accepted + 1 = 7: rows 0,1 prompt; 2 (pending, h_2); 3,4 (d0, out0), (d1, out1); 5 (d2, ctx[2])
            assertThat(cp.processedTokens()).isEqualTo(7);
            float[] vals = cp.values().toFloatArray();
            float[] keys = cp.keys().toFloatArray();
            float[] v = verify.toFloatArray();
            assertThat(vals[5 * 16]).as("V of the last row is context[d−1]").isEqualTo(v[2 * h]);
            assertThat(keys[5 * 16]).as("K of the last row is embed(d_{d−1})")
                    .isEqualTo(dm.head().embed(new int[] {d[0][2]})[0]);
            assertThat(vals[2 * 16]).as("V of the pending row is h_{P−1}").isEqualTo(prompt.toFloatArray()[2 * h]);
            assertThat(cp.hidden().toFloatArray()).containsExactly(Arrays.copyOfRange(v, 3 * h, 4 * h));
        }
    }

    @Test
    void prefillAcrossTheChunkBoundaryEqualsOneRowAtATime() {
        try (Kernels k = new Kernels(KernelMode.SCALAR, 1)) {
            ReferenceDraftModel dm = new ReferenceDraftModel(model, k, new FakeBlock(model));
            int len = ReferenceDraftRows.PREFILL_CHUNK + 3;
            SplittableRandom rnd = new SplittableRandom(4);
            HostTensor tokens = TestModels.tokens(rnd, 1, len, model.config().vocabSize());
            HostTensor ctx = TestModels.hiddens(rnd, 1, len, h);
            ReferenceDraftRows whole = dm.openReferenceRows(Arrays.asList((RowCheckpoint) null));
            whole.prefill(tokens, ctx);
            ReferenceDraftRows split = dm.openReferenceRows(Arrays.asList((RowCheckpoint) null));
            int cut = 1000;
            split.prefill(tokens.reshape(len).slice0(0, cut).reshape(1, cut), ctx.reshape(len, h).slice0(0, cut)
                    .reshape(1, cut, h));
            split.prefill(tokens.reshape(len).slice0(cut, len).reshape(1, len - cut),
                    ctx.reshape(len, h).slice0(cut, len).reshape(1, len - cut, h));
            assertThat(whole.capture(0).processedTokens()).isEqualTo(len);
            assertThat(split.capture(0).contentEquals(whole.capture(0))).isTrue();
            RowCheckpoint restored = whole.capture(0);
            ReferenceDraftRows again = dm.openReferenceRows(List.of(restored));
            assertThat(again.capture(0).contentEquals(restored)).as("capture → restore → capture").isTrue();
        }
    }
}
