package org.mtporacle.reference;

import org.mtporacle.api.AbstractDraftRows;
import org.mtporacle.api.DraftSampling;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MtpConfig;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.RowCheckpoint;
import org.mtporacle.api.RouterChoices;
import org.mtporacle.reference.block.RouterHook;
import org.mtporacle.reference.block.RowKv;
import org.mtporacle.reference.sampling.DraftSampler;

import java.util.List;

/**
 * The reference row group (spec §5 with the decisions of §11) on the shared {@link AbstractDraftRows} skeleton, which
 * owns the checks, the round's bookkeeping and the publish. Each row owns an unpadded KV cache (spec §11.10) and its
 * retained true hidden. A cache's own length is only a write cursor: every computation first sets it to the row's
 * committed length, so a call that fails leaves only stale positions past that length, which nothing reads.
 */
public final class ReferenceDraftRows extends AbstractDraftRows<ReferenceDraftRows.Rows> implements RouterChoices {
    private final ReferenceDraftModel model;
    private final MtpConfig c;
    /** MoE router choices of the last computing call, and the chooser armed for the next one (spec §12.5). */
    private final java.util.ArrayList<RouterChoices.Choice> routed = new java.util.ArrayList<>();
    private ExpertChooser nextChooser;
    private ExpertChooser chooser;

    /**
     * Fault injection for tests (package-private, null in production): consulted at every internal step of the
     * mutating calls, so a test can make each step throw in turn and prove that a failure leaves the group unchanged
     * (spec §9.2, §11.1).
     */
    FaultPoints faultPoints;

    /** A test hook called at each internal step; it may throw anything to simulate a failure there. */
    @FunctionalInterface
    interface FaultPoints {
        void reached(String call, String step);
    }

    /**
     * Every row's drafter state, replaced (never changed) by each call except for cache positions past the committed
     * lengths.
     *
     * @param kv     [B] each row's cache
     * @param hidden [B][H] each row's retained true hidden {@code h_{P−1}}, null for a cold row
     */
    record Rows(RowKv[] kv, float[][] hidden) {
    }

    ReferenceDraftRows(ReferenceDraftModel model) {
        super(model.model(), new Rows(new RowKv[0], new float[0][]));
        this.model = model;
        this.c = model.model().config();
    }

    /**
     * {@link #draft(int[], int, long[], DraftSampling)} with a {@link DraftChooser} that sees every position's
     * log-probs and may replace the sampled token.
     */
    public int[][] draft(int[] pending, int depth, long[] steps, DraftSampling sampling, DraftChooser chooser) {
        return draftRound(pending, depth, steps, sampling,
                (s, at, ids, d, st, sm) -> chain(s, at, ids, d, st, sm, chooser));
    }

    /** Picks a MoE forward row's experts (spec §12.5): usually {@code chosen}, the reference's own top-k. */
    @FunctionalInterface
    public interface ExpertChooser {
        /** @return {@code K} distinct experts in {@code [0, E)} */
        int[] choose(int row, int position, float[] probs, int[] chosen);
    }

    @Override
    public List<RouterChoices.Choice> lastRouterChoices() {
        return List.copyOf(routed);
    }

    /**
     * For the next computing call ({@code prefill}, {@code draft}, {@code commit}) only: every MoE forward row's
     * experts come from {@code next} (the kit continues on a backend's choices, spec §12.5).
     */
    public void chooseExpertsNextCall(ExpertChooser next) {
        this.nextChooser = next;
    }

    @Override
    protected <T> T onBackend(String call, java.util.function.Supplier<T> work) {
        routed.clear();
        chooser = nextChooser;
        nextChooser = null;
        try {
            return model.compute(call, work);
        } finally {
            chooser = null;
        }
    }

    /** Records each MoE forward row's experts by contract row (its index in {@code s}) and applies the chooser. */
    private RouterHook routing(Rows s) {
        ExpertChooser c = chooser;
        return (kv, position, probs, chosen) -> {
            int row = 0;
            while (row < s.kv().length && s.kv()[row] != kv) {
                row++;
            }
            int[] used = c == null ? chosen : c.choose(row, position, probs, chosen);
            int r = row;
            routed.removeIf(x -> x.row() == r && x.position() == position);
            routed.add(new RouterChoices.Choice(row, position, used));
            return used;
        };
    }

    @Override
    protected boolean modelClosed() {
        return model.isClosed();
    }

    @Override
    protected Rows appendRows(Rows s, List<RowCheckpoint> checkpoints) {
        int b = s.kv().length;
        RowKv[] kv = java.util.Arrays.copyOf(s.kv(), b + checkpoints.size());
        float[][] hidden = java.util.Arrays.copyOf(s.hidden(), kv.length);
        for (int i = 0; i < checkpoints.size(); i++) {
            RowCheckpoint cp = checkpoints.get(i);
            fault("append", "build row");
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
            fault("filterRows", "keep row");
            kv[i] = s.kv()[keep[i]];
            hidden[i] = s.hidden()[keep[i]];
        }
        return new Rows(kv, hidden);
    }

    @Override
    protected Rows forward(Rows s, int[] at, boolean[] which, int[] ids, float[] hin, int n) {
        int h = c.hiddenSize();
        int b = at.length;
        int count = 0;
        for (int r = 0; r < b; r++) {
            count += which == null || which[r] ? 1 : 0;
        }
        if (count == b && hin != null) {
            model.block().forward(model.head().embed(ids), hin, cursors(s, at), n, null, routing(s));
            return s;
        }
        // a subset of the rows, or their retained hiddens: gather them (one position each when hin is null)
        int[] subIds = new int[count * n];
        float[] subHin = new float[count * n * h];
        RowKv[] kvs = new RowKv[count];
        for (int r = 0, i = 0; r < b; r++) {
            if (which == null || which[r]) {
                System.arraycopy(ids, r * n, subIds, i * n, n);
                System.arraycopy(hin == null ? s.hidden()[r] : hin, hin == null ? 0 : r * n * h, subHin, i * n * h,
                        n * h);
                kvs[i] = s.kv()[r];
                kvs[i++].setLength(at[r]);
            }
        }
        model.block().forward(model.head().embed(subIds), subHin, kvs, n, null, routing(s));
        return s;
    }

    @Override
    protected Rows retain(Rows s, float[] hidden) {
        int h = c.hiddenSize();
        float[][] kept = new float[s.kv().length][];
        for (int r = 0; r < kept.length; r++) {
            kept[r] = java.util.Arrays.copyOfRange(hidden, r * h, (r + 1) * h);
        }
        return new Rows(s.kv(), kept);
    }

    @Override
    protected Drafted<Rows> draftChain(Rows s, int[] at, int[] pending, int depth, long[] steps,
                                       DraftSampling sampling) {
        return chain(s, at, pending, depth, steps, sampling, DraftChooser.SAMPLED);
    }

    /** A draft round (spec §5.7): each position's log-probs sampled on the host, then offered to {@code chooser}. */
    private Drafted<Rows> chain(Rows s, int[] at, int[] pending, int depth, long[] steps, DraftSampling sampling,
                                DraftChooser chooser) {
        int b = at.length;
        int h = c.hiddenSize();
        int vocab = model.head().vocabSize();
        int[] ids = pending.clone();
        float[] hin = new float[b * h];
        for (int r = 0; r < b; r++) {
            System.arraycopy(s.hidden()[r], 0, hin, r * h, h);
        }
        RowKv[] kvs = cursors(s, at);
        int[][] out = new int[b][depth];
        for (int t = 0; t < depth; t++) {
            fault("draft", "forward");
            float[] y = model.block().forward(model.head().embed(ids), hin, kvs, 1, null, routing(s));
            float[] lp = model.head().logProbs(y, b);
            for (int r = 0; r < b; r++) {
                fault("draft", "sample");
                int sampled = DraftSampler.sample(lp, r * vocab, vocab, sampling.row(r), steps[r] + t);
                int chosen = chooser.choose(r, t, lp, r * vocab, sampled);
                if (chosen < 0 || chosen >= vocab) {
                    throw MtpException.invalidArgument("draft: chooser returned token " + chosen + " for row " + r
                            + " position " + t + ", outside [0, " + vocab + ")");
                }
                out[r][t] = chosen;
                ids[r] = chosen;
            }
            hin = y;
        }
        return new Drafted<>(out, s);
    }

    @Override
    protected RowTensors export(Rows s, int row, int kept) {
        int nKv = c.numKvHeads();
        int d = c.headDim();
        RowKv kv = s.kv()[row];
        HostTensor keys = kept == 0 ? null : HostTensor.ofFloats(kv.export(true, kept), 1, nKv, kept, d);
        HostTensor values = kept == 0 ? null : HostTensor.ofFloats(kv.export(false, kept), 1, nKv, kept, d);
        return new RowTensors(keys, values, HostTensor.ofFloats(s.hidden()[row], 1, 1, c.hiddenSize()));
    }

    @Override
    protected void release(Rows s) {
        // heap arrays only
    }

    @Override
    protected void reached(String call, String step) {
        fault(call, step);
    }

    /** Every row's cache with its write cursor at {@code at}. */
    private static RowKv[] cursors(Rows s, int[] at) {
        RowKv[] kvs = s.kv().clone();
        for (int r = 0; r < kvs.length; r++) {
            kvs[r].setLength(at[r]);
        }
        return kvs;
    }

    /** A test hook: calls {@link #faultPoints} when one is set. */
    private void fault(String call, String step) {
        if (faultPoints != null) {
            faultPoints.reached(call, step);
        }
    }
}
