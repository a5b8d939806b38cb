package org.mtporacle.reference;

import org.mtporacle.reference.block.RowKv;
import org.mtporacle.api.DraftRows;
import org.mtporacle.api.DraftSampling;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MtpConfig;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.RowCheckpoint;
import org.mtporacle.api.RowContract;
import org.mtporacle.reference.sampling.DraftSampler;

import java.util.ArrayList;
import java.util.List;

/**
 * The reference row group (spec §5 with the decisions of §11): each row owns an unpadded KV cache, its retained true
 * hidden and its prefilled flag. Every call validates first, then computes (only KV lengths move, and they are put
 * back if anything at all is thrown), and publishes with plain assignments that cannot fail, so a failed call leaves
 * every row unchanged. Should putting the KV lengths back fail, the group is poisoned and every later call says so.
 */
public final class ReferenceDraftRows implements DraftRows {
    /** Prefill forwards at most this many positions at once (spec §5.4). */
    public static final int PREFILL_CHUNK = 2048;

    private static final int[] NO_DRAFTS = new int[0];

    private final ReferenceDraftModel model;
    private final MtpConfig c;
    private final List<Row> rows = new ArrayList<>();
    private boolean roundOpen;
    private int depth;
    private boolean closed;
    private String poisonedBy;

    /**
     * Fault injection for tests (package-private, null in production): consulted at every internal step of the
     * mutating calls, and at the rollback of a failed call, so a test can make each step throw in turn and prove
     * that a failure leaves the group unchanged or poisoned, never silently different (spec §9.2, §11.1).
     */
    FaultPoints faultPoints;

    /** A test hook called at each internal step; it may throw anything to simulate a failure there. */
    @FunctionalInterface
    interface FaultPoints {
        void reached(String call, String step);
    }

    /** One request's drafter state. */
    private static final class Row {
        RowKv kv;
        float[] hidden;      // [H] the true hidden h_{P−1}, or null (cold row, or during a round)
        boolean prefilled;   // has target context (restored or prefilled)
        int[] drafts = NO_DRAFTS;
        int beforeRound;     // kv length when the open round began

        Row(RowKv kv, float[] hidden, boolean prefilled) {
            this.kv = kv;
            this.hidden = hidden;
            this.prefilled = prefilled;
        }
    }

    ReferenceDraftRows(ReferenceDraftModel model) {
        this.model = model;
        this.c = model.model().config();
    }

    @Override
    public int rowCount() {
        return rows.size();
    }

    @Override
    public void append(List<RowCheckpoint> checkpoints) {
        RowContract.checkUsable("append", closed, poisonedBy);
        RowContract.checkNoOpenRound("append", roundOpen);
        RowContract.checkpoints("append", checkpoints, model.model());
        List<Row> added = new ArrayList<>(checkpoints.size());
        for (RowCheckpoint cp : checkpoints) {
            fault("append", "build row");
            if (cp == null) {
                added.add(new Row(new RowKv(c.numKvHeads(), c.headDim()), null, false));
            } else {
                int kept = cp.processedTokens() - 1;
                RowKv kv = kept == 0 ? new RowKv(c.numKvHeads(), c.headDim())
                        : RowKv.of(c.numKvHeads(), c.headDim(), kept, cp.keys().toFloatArray(),
                        cp.values().toFloatArray());
                added.add(new Row(kv, cp.hidden().toFloatArray(), true));
            }
        }
        fault("append", "publish");
        rows.addAll(added);
    }

    @Override
    public void filterRows(int[] keep) {
        RowContract.checkUsable("filterRows", closed, poisonedBy);
        RowContract.checkNoOpenRound("filterRows", roundOpen);
        RowContract.keep(keep, rows.size());
        List<Row> kept = new ArrayList<>(keep.length);
        for (int r : keep) {
            fault("filterRows", "keep row");
            kept.add(rows.get(r));
        }
        fault("filterRows", "publish");
        rows.clear();
        rows.addAll(kept);
    }

    @Override
    public void prefill(HostTensor tokens, HostTensor context) {
        RowContract.checkUsable("prefill", closed, poisonedBy);
        RowContract.checkNoOpenRound("prefill", roundOpen);
        RowContract.checkHasRows("prefill", rows.size());
        int b = rows.size();
        int[][] ids = RowContract.tokens("prefill", tokens, b, model.head().vocabSize());
        int len = ids[0].length;
        int hSize = c.hiddenSize();
        RowContract.context("prefill", context, b, len, hSize, "the taps at the same L positions as tokens");
        float[] ctx = context.toFloatArray(); // [B, L, H]
        int[] saved = lengths();
        float[][] retained = new float[b][];
        boolean computed = false;
        try {
            // 1. bridge: each prefilled row pairs tokens[b, 0] with its retained hidden; cold rows keep nothing
            forwardOnePosition("prefill", "bridge forward", r -> rows.get(r).prefilled, r -> ids[r][0],
                    (r, hin, at) -> System.arraycopy(rows.get(r).hidden, 0, hin, at, hSize));
            // 2. shifted chunks: token p+1 pairs with hidden p, at most PREFILL_CHUNK positions per forward
            for (int pos = 0; pos + 1 < len; pos += PREFILL_CHUNK) {
                int end = Math.min(pos + PREFILL_CHUNK, len - 1);
                int s = end - pos;
                int[] chunkIds = new int[b * s];
                float[] hin = new float[b * s * hSize];
                for (int r = 0; r < b; r++) {
                    System.arraycopy(ids[r], pos + 1, chunkIds, r * s, s);
                    System.arraycopy(ctx, (r * len + pos) * hSize, hin, r * s * hSize, s * hSize);
                }
                fault("prefill", "chunk forward");
                model.block().forward(model.head().embed(chunkIds), hin, kvArray(), s, null);
            }
            // 3. the last tap of each row, retained below
            for (int r = 0; r < b; r++) {
                fault("prefill", "copy retained hidden");
                retained[r] = new float[hSize];
                System.arraycopy(ctx, (r * len + len - 1) * hSize, retained[r], 0, hSize);
            }
            fault("prefill", "publish");
            computed = true;
        } finally {
            if (!computed) {
                rollback("prefill", saved);
            }
        }
        // publish: assignments only; every row is now prefilled
        for (int r = 0; r < b; r++) {
            Row row = rows.get(r);
            row.hidden = retained[r];
            row.prefilled = true;
        }
    }

    @Override
    public int[][] draft(int[] pending, int depth, long[] steps, DraftSampling sampling) {
        return draft(pending, depth, steps, sampling, DraftChooser.SAMPLED);
    }

    /**
     * {@link #draft(int[], int, long[], DraftSampling)} with a {@link DraftChooser} that sees every position's
     * log-probs and may replace the sampled token.
     */
    public int[][] draft(int[] pending, int depth, long[] steps, DraftSampling sampling, DraftChooser chooser) {
        RowContract.checkUsable("draft", closed, poisonedBy);
        RowContract.checkNoOpenRound("draft", roundOpen);
        RowContract.checkHasRows("draft", rows.size());
        int b = rows.size();
        int vocab = model.head().vocabSize();
        RowContract.draftArguments(pending, depth, steps, sampling, b, vocab);
        for (int r = 0; r < b; r++) {
            if (rows.get(r).hidden == null) {
                throw MtpException.illegalState("draft: row " + r + " has no retained hidden (a cold row must be "
                        + "prefilled first, spec §5.7)");
            }
        }
        int hSize = c.hiddenSize();
        int[] saved = lengths();
        int[][] out = new int[b][depth];
        int[][] drafts = new int[b][];
        boolean computed = false;
        try {
            int[] ids = pending.clone();
            float[] hin = new float[b * hSize];
            for (int r = 0; r < b; r++) {
                System.arraycopy(rows.get(r).hidden, 0, hin, r * hSize, hSize);
            }
            RowKv[] kvs = kvArray();
            if (depth == 0) {
                // the pending row only; no logits, no sampling (spec §5.7, §11.2)
                fault("draft", "pending forward");
                model.block().forward(model.head().embed(ids), hin, kvs, 1, null);
            }
            for (int t = 0; t < depth; t++) {
                fault("draft", "forward");
                float[] y = model.block().forward(model.head().embed(ids), hin, kvs, 1, null);
                float[] lp = model.head().logProbs(y, b);
                for (int r = 0; r < b; r++) {
                    fault("draft", "sample");
                    int sampled = DraftSampler.sample(lp, r * vocab, vocab, sampling.row(r), steps[r] + t);
                    int chosen = chooser.choose(r, t, lp, r * vocab, sampled);
                    if (chosen < 0 || chosen >= vocab) {
                        throw MtpException.invalidArgument("draft: chooser returned token " + chosen + " for row "
                                + r + " position " + t + ", outside [0, " + vocab + ")");
                    }
                    out[r][t] = chosen;
                    ids[r] = chosen;
                }
                hin = y;
            }
            for (int r = 0; r < b; r++) {
                drafts[r] = out[r].clone();
            }
            fault("draft", "publish");
            computed = true;
        } finally {
            if (!computed) {
                rollback("draft", saved);
            }
        }
        // publish: assignments only
        for (int r = 0; r < b; r++) {
            Row row = rows.get(r);
            row.beforeRound = saved[r];
            row.drafts = drafts[r];
            row.hidden = null;
        }
        this.depth = depth;
        this.roundOpen = true;
        return out;
    }

    @Override
    public void commit(int[] accepted, HostTensor context) {
        RowContract.checkUsable("commit", closed, poisonedBy);
        RowContract.checkRoundOpen("commit", roundOpen);
        int b = rows.size();
        RowContract.accepted(accepted, b, depth);
        int hSize = c.hiddenSize();
        int width = depth + 1;
        RowContract.context("commit", context, b, width, hSize, "width = depth + 1 = " + width + " verify taps");
        float[] ctx = context.toFloatArray(); // [B, depth+1, H]
        int[] saved = lengths();
        int appended = Math.max(1, depth);
        float[][] retained = new float[b][];
        boolean computed = false;
        try {
            // 1. keep the pending row plus the rows of accepted proposals
            for (int r = 0; r < b; r++) {
                Row row = rows.get(r);
                row.kv.setLength(row.beforeRound + Math.min(accepted[r] + 1, appended));
                fault("commit", "cut row");
            }
            // 2. full acceptance: build the last proposal's row from the true hidden preceding it
            int d = depth;
            forwardOnePosition("commit", "full-acceptance forward", r -> d > 0 && accepted[r] == d,
                    r -> rows.get(r).drafts[d - 1],
                    (r, hin, at) -> System.arraycopy(ctx, (r * width + d - 1) * hSize, hin, at, hSize));
            // 3. the true hidden at the last processed position, retained below
            for (int r = 0; r < b; r++) {
                fault("commit", "copy retained hidden");
                retained[r] = new float[hSize];
                System.arraycopy(ctx, (r * width + accepted[r]) * hSize, retained[r], 0, hSize);
            }
            fault("commit", "publish");
            computed = true;
        } finally {
            if (!computed) {
                rollback("commit", saved);
            }
        }
        // publish: assignments only
        for (int r = 0; r < b; r++) {
            Row row = rows.get(r);
            row.hidden = retained[r];
            row.drafts = NO_DRAFTS;
        }
        roundOpen = false;
        depth = 0;
    }

    @Override
    public RowCheckpoint capture(int row) {
        RowContract.checkUsable("capture", closed, poisonedBy);
        RowContract.checkNoOpenRound("capture", roundOpen);
        RowContract.row("capture", row, rows.size());
        Row r = rows.get(row);
        if (r.hidden == null) {
            throw MtpException.illegalState("capture: row " + row + " has consumed no target token yet (a cold row "
                    + "must be prefilled first, spec §11.1)");
        }
        int kept = r.kv.length();
        int nKv = c.numKvHeads();
        int d = c.headDim();
        HostTensor keys = kept == 0 ? null : HostTensor.ofFloats(r.kv.export(true), 1, nKv, kept, d);
        HostTensor values = kept == 0 ? null : HostTensor.ofFloats(r.kv.export(false), 1, nKv, kept, d);
        HostTensor hidden = HostTensor.ofFloats(r.hidden, 1, 1, c.hiddenSize());
        return new RowCheckpoint(RowCheckpoint.SCHEMA, kept + 1, kept, model.model().identity(), keys, values,
                hidden);
    }

    /** The drafter positions each row holds (for tests and reports). */
    public int[] drafterLengths() {
        return lengths();
    }

    /** True while a draft round is open. */
    public boolean roundOpen() {
        return roundOpen;
    }

    @Override
    public boolean isClosed() {
        return closed;
    }

    @Override
    public void close() {
        closed = true;
        rows.clear();
        roundOpen = false;
    }

    /** Copies row {@code r}'s input hidden into {@code hin} at {@code at}. */
    @FunctionalInterface
    private interface HiddenOf {
        void copy(int r, float[] hin, int at);
    }

    /** One forward of one position for the rows {@code which} selects (all others untouched). */
    private void forwardOnePosition(String call, String step, java.util.function.IntPredicate which,
                                    java.util.function.IntUnaryOperator tokenOf, HiddenOf hiddenOf) {
        List<Integer> selected = new ArrayList<>();
        for (int r = 0; r < rows.size(); r++) {
            if (which.test(r)) {
                selected.add(r);
            }
        }
        if (selected.isEmpty()) {
            return;
        }
        int hSize = c.hiddenSize();
        int[] ids = new int[selected.size()];
        float[] hin = new float[selected.size() * hSize];
        RowKv[] kvs = new RowKv[selected.size()];
        for (int i = 0; i < ids.length; i++) {
            int r = selected.get(i);
            ids[i] = tokenOf.applyAsInt(r);
            hiddenOf.copy(r, hin, i * hSize);
            kvs[i] = rows.get(r).kv;
        }
        fault(call, step);
        model.block().forward(model.head().embed(ids), hin, kvs, 1, null);
    }

    private RowKv[] kvArray() {
        RowKv[] kvs = new RowKv[rows.size()];
        for (int r = 0; r < kvs.length; r++) {
            kvs[r] = rows.get(r).kv;
        }
        return kvs;
    }

    private int[] lengths() {
        int[] out = new int[rows.size()];
        for (int r = 0; r < out.length; r++) {
            out[r] = rows.get(r).kv.length();
        }
        return out;
    }

    /** A test hook: calls {@link #faultPoints} when one is set. */
    private void fault(String call, String step) {
        if (faultPoints != null) {
            faultPoints.reached(call, step);
        }
    }

    /**
     * Puts the KV lengths of a failed call back (called from {@code finally} while its exception propagates); if
     * that fails too the rows can no longer be trusted: the group is poisoned and the rollback's failure propagates.
     */
    private void rollback(String call, int[] saved) {
        boolean restored = false;
        try {
            fault(call, "rollback");
            restoreLengths(saved);
            restored = true;
        } finally {
            if (!restored) {
                poisonedBy = "a failed " + call + " whose rollback failed";
            }
        }
    }

    private void restoreLengths(int[] saved) {
        for (int r = 0; r < saved.length; r++) {
            rows.get(r).kv.setLength(saved[r]);
        }
    }
}
