package org.example.mtp;

import java.util.Arrays;
import java.util.List;
import org.mtporacle.api.AbstractDraftRows;
import org.mtporacle.api.DraftSampling;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MtpConfig;
import org.mtporacle.api.RowCheckpoint;
import org.mtporacle.reference.block.RowKv;
import org.mtporacle.reference.sampling.DraftSampler;

/**
 * A row group: the storage of every row and the arithmetic over it. {@link AbstractDraftRows} owns the rest of the
 * row contract (spec §5): argument checks and their messages, the round's bookkeeping, prefill chunking, publishing
 * atomically, the threading rules. The arithmetic here is the reference's block, head and sampler; an engine puts
 * its own calls in their place.
 */
final class ExampleDraftRows extends AbstractDraftRows<ExampleDraftRows.Rows> {
    private final ExampleDraftModel model;
    private final MtpConfig c;

    /**
     * Every row's state, replaced (never changed) by each call except for cache positions past the committed
     * lengths, which nothing reads.
     *
     * @param kv     [B] each row's KV cache (its length is only a write cursor)
     * @param hidden [B][H] each row's retained hidden, null for a cold row
     */
    record Rows(RowKv[] kv, float[][] hidden) {
    }

    ExampleDraftRows(ExampleDraftModel model) {
        super(model.model(), new Rows(new RowKv[0], new float[0][]));
        this.model = model;
        this.c = model.model().config();
    }

    @Override
    protected boolean modelClosed() {
        return model.isClosed();
    }

    @Override
    protected Rows appendRows(Rows s, List<RowCheckpoint> checkpoints) {
        int b = s.kv().length;
        RowKv[] kv = Arrays.copyOf(s.kv(), b + checkpoints.size());
        float[][] hidden = Arrays.copyOf(s.hidden(), kv.length);
        for (int i = 0; i < checkpoints.size(); i++) {
            RowCheckpoint cp = checkpoints.get(i);
            int kept = cp == null ? 0 : cp.processedTokens() - 1;
            kv[b + i] = kept == 0 ? new RowKv(c.numKvHeads(), c.headDim())
                    : RowKv.of(c.numKvHeads(), c.headDim(), kept, cp.keys().toFloatArray(), cp.values().toFloatArray());
            hidden[b + i] = cp == null ? null : cp.hidden().toFloatArray();
        }
        return new Rows(kv, hidden);
    }

    @Override
    protected Rows keepRows(Rows s, int[] keep, int[] lengths) {
        RowKv[] kv = new RowKv[keep.length];
        float[][] hidden = new float[keep.length][];
        for (int i = 0; i < keep.length; i++) {
            kv[i] = s.kv()[keep[i]];
            hidden[i] = s.hidden()[keep[i]];
        }
        return new Rows(kv, hidden);
    }

    @Override
    protected Rows forward(Rows s, int[] at, boolean[] which, int[] ids, float[] hin, int n) {
        int h = c.hiddenSize();
        int count = 0;
        for (int r = 0; r < at.length; r++) {
            count += which == null || which[r] ? 1 : 0;
        }
        int[] subIds = new int[count * n];
        float[] subHin = new float[count * n * h];
        RowKv[] kvs = new RowKv[count];
        for (int r = 0, i = 0; r < at.length; r++) {
            if (which == null || which[r]) {
                System.arraycopy(ids, r * n, subIds, i * n, n);
                System.arraycopy(hin == null ? s.hidden()[r] : hin, hin == null ? 0 : r * n * h, subHin, i * n * h,
                        n * h);
                kvs[i] = s.kv()[r];
                kvs[i++].setLength(at[r]);
            }
        }
        model.block().forward(model.head().embed(subIds), subHin, kvs, n, null);
        return s;
    }

    @Override
    protected Rows retain(Rows s, float[] hidden) {
        int h = c.hiddenSize();
        float[][] kept = new float[s.kv().length][];
        for (int r = 0; r < kept.length; r++) {
            kept[r] = Arrays.copyOfRange(hidden, r * h, (r + 1) * h);
        }
        return new Rows(s.kv(), kept);
    }

    @Override
    protected Drafted<Rows> draftChain(Rows s, int[] at, int[] pending, int depth, long[] steps,
                                       DraftSampling sampling) {
        int b = at.length;
        int h = c.hiddenSize();
        int vocab = c.vocabSize();
        int[] ids = pending.clone();
        float[] hin = new float[b * h];
        RowKv[] kvs = s.kv().clone();
        for (int r = 0; r < b; r++) {
            System.arraycopy(s.hidden()[r], 0, hin, r * h, h);
            kvs[r].setLength(at[r]);
        }
        int[][] out = new int[b][depth];
        for (int t = 0; t < depth; t++) {
            float[] y = model.block().forward(model.head().embed(ids), hin, kvs, 1, null);
            float[] lp = model.head().logProbs(y, b);
            for (int r = 0; r < b; r++) {
                out[r][t] = DraftSampler.sample(lp, r * vocab, vocab, sampling.row(r), steps[r] + t);
                ids[r] = out[r][t];
            }
            hin = y;
        }
        return new Drafted<>(out, s);
    }

    @Override
    protected RowTensors export(Rows s, int row, int kept) {
        RowKv kv = s.kv()[row];
        int nKv = c.numKvHeads();
        int d = c.headDim();
        return new RowTensors(kept == 0 ? null : HostTensor.ofFloats(kv.export(true, kept), 1, nKv, kept, d),
                kept == 0 ? null : HostTensor.ofFloats(kv.export(false, kept), 1, nKv, kept, d),
                HostTensor.ofFloats(s.hidden()[row], 1, 1, c.hiddenSize()));
    }

    @Override
    protected void release(Rows s) {
        // heap arrays only; an engine frees its device buffers here
    }
}
