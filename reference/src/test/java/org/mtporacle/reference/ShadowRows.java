package org.mtporacle.reference;

import org.mtporacle.reference.block.MtpBlock;
import org.mtporacle.reference.block.TargetHead;
import org.mtporacle.reference.block.RowKv;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.RowCheckpoint;
import org.mtporacle.api.RowSampler;
import org.mtporacle.reference.sampling.DraftSampler;
import org.mtporacle.reference.kernels.Kernels;

import java.util.ArrayList;
import java.util.List;

/**
 * The row lifecycle written as its definition, for tests (spec §1.8, §5): every row is the list of
 * {@code (token, hidden)} pairs its drafter positions were built from, on top of the checkpoint it was restored from.
 * Expected KV is a fresh single-row forward of exactly those pairs; expected drafts come from a single-row replay.
 * Batching, rollback, chunking and restore never appear here, so agreement with the group proves them trace-free.
 */
final class ShadowRows {
    final MtpModel model;
    final MtpBlock block;
    final TargetHead head;
    final List<Shadow> rows = new ArrayList<>();

    static final class Shadow {
        float[] baseKeys;          // [nKV, base, D] from the restored checkpoint
        float[] baseValues;
        int base;
        final List<Integer> tokens = new ArrayList<>();
        final List<float[]> hiddens = new ArrayList<>();
        float[] hidden;            // retained true hidden, or null
        boolean prefilled;

        Shadow copy() {
            Shadow s = new Shadow();
            s.baseKeys = baseKeys;
            s.baseValues = baseValues;
            s.base = base;
            s.tokens.addAll(tokens);
            s.hiddens.addAll(hiddens);
            s.hidden = hidden;
            s.prefilled = prefilled;
            return s;
        }

        void add(int token, float[] h) {
            tokens.add(token);
            hiddens.add(h.clone());
        }
    }

    ShadowRows(MtpModel model, Kernels kernels) {
        this.model = model;
        this.block = new MtpBlock(model.config(), model.weights(), kernels);
        this.head = new TargetHead(model.weights(), kernels);
    }

    void appendCold() {
        rows.add(new Shadow());
    }

    void appendRestored(RowCheckpoint cp) {
        Shadow s = new Shadow();
        s.base = cp.processedTokens() - 1;
        s.baseKeys = cp.keys() == null ? new float[0] : cp.keys().toFloatArray();
        s.baseValues = cp.values() == null ? new float[0] : cp.values().toFloatArray();
        s.hidden = cp.hidden().toFloatArray();
        s.prefilled = true;
        rows.add(s);
    }

    void filter(int[] keep) {
        List<Shadow> kept = new ArrayList<>();
        for (int r : keep) {
            kept.add(rows.get(r));
        }
        rows.clear();
        rows.addAll(kept);
    }

    void prefill(int[][] tokens, float[] ctx, int len) {
        int h = model.config().hiddenSize();
        for (int r = 0; r < rows.size(); r++) {
            Shadow s = rows.get(r);
            if (s.prefilled) {
                s.add(tokens[r][0], s.hidden);
            }
            for (int p = 0; p + 1 < len; p++) {
                s.add(tokens[r][p + 1], slice(ctx, (r * len + p) * h, h));
            }
            s.hidden = slice(ctx, (r * len + len - 1) * h, h);
            s.prefilled = true;
        }
    }

    /**
     * Drafts of row {@code r} from a single-row replay, position {@code t} sampled at {@code step + t} with the row's
     * sampler; also returns the chained outputs in {@code outs}.
     */
    int[] draft(int r, int pending, int depth, RowSampler sampler, long step, List<float[]> outs) {
        Shadow s = rows.get(r);
        RowKv kv = replay(s);
        int id = pending;
        float[] hin = s.hidden;
        int[] drafts = new int[depth];
        for (int t = 0; t < depth; t++) {
            float[] y = block.forward(head.embed(new int[] {id}), hin, new RowKv[] {kv}, 1, null);
            float[] lp = head.logProbs(y, 1);
            int best = DraftSampler.sample(lp, 0, lp.length, sampler, step + t);
            drafts[t] = best;
            outs.add(y);
            id = best;
            hin = y;
        }
        return drafts;
    }

    /** Commits a round of {@code drafts} (with chained {@code outs}) keeping {@code accepted} proposals (spec §5.8). */
    void commit(int r, int pending, int[] drafts, List<float[]> outs, int accepted, float[] ctx, int width) {
        Shadow s = rows.get(r);
        int h = model.config().hiddenSize();
        int d = drafts.length;
        s.add(pending, s.hidden);
        for (int t = 0; t < Math.min(accepted, Math.max(d - 1, 0)); t++) {
            s.add(drafts[t], outs.get(t));
        }
        if (d > 0 && accepted == d) {
            s.add(drafts[d - 1], slice(ctx, (r * width + d - 1) * h, h));
        }
        s.hidden = slice(ctx, (r * width + accepted) * h, h);
    }

    /** The row's KV rebuilt from scratch: base checkpoint, then one forward over every pair. */
    RowKv replay(Shadow s) {
        int nKv = model.config().numKvHeads();
        int d = model.config().headDim();
        RowKv kv = s.base == 0 ? new RowKv(nKv, d) : RowKv.of(nKv, d, s.base, s.baseKeys, s.baseValues);
        int n = s.tokens.size();
        if (n > 0) {
            int h = model.config().hiddenSize();
            int[] ids = new int[n];
            float[] hin = new float[n * h];
            for (int i = 0; i < n; i++) {
                ids[i] = s.tokens.get(i);
                System.arraycopy(s.hiddens.get(i), 0, hin, i * h, h);
            }
            block.forward(head.embed(ids), hin, new RowKv[] {kv}, n, null);
        }
        return kv;
    }

    /** The checkpoint row {@code r} must capture as. */
    RowCheckpoint expectedCheckpoint(int r) {
        Shadow s = rows.get(r);
        RowKv kv = replay(s);
        int kept = kv.length();
        int nKv = model.config().numKvHeads();
        int d = model.config().headDim();
        return new RowCheckpoint(RowCheckpoint.SCHEMA, kept + 1, kept, model.identity(),
                kept == 0 ? null : HostTensor.ofFloats(kv.export(true), 1, nKv, kept, d),
                kept == 0 ? null : HostTensor.ofFloats(kv.export(false), 1, nKv, kept, d),
                HostTensor.ofFloats(s.hidden, 1, 1, model.config().hiddenSize()));
    }

    static float[] slice(float[] a, int off, int n) {
        float[] out = new float[n];
        System.arraycopy(a, off, out, 0, n);
        return out;
    }
}
