package org.mtporacle.conformance.golden;

import org.mtporacle.api.DraftSampling;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.RowCheckpoint;
import org.mtporacle.api.RowSampler;
import org.mtporacle.conformance.golden.GoldenTrace.Expect;
import org.mtporacle.conformance.golden.GoldenTrace.RowState;
import org.mtporacle.conformance.golden.GoldenTrace.Source;
import org.mtporacle.conformance.golden.GoldenTrace.Step;
import org.mtporacle.reference.ReferenceDraftModel;
import org.mtporacle.reference.ReferenceDraftRows;
import org.mtporacle.reference.sampling.DraftSampler;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Records a golden trace from the reference: each call runs on a reference row group and is written down with its
 * concrete inputs and the observables it produced (draft tokens with their log-probs and top-2 gaps read through a
 * {@link org.mtporacle.reference.DraftChooser}, every row's checkpoint digest after each state change, captured
 * checkpoints in full). A call the reference refuses is recorded with its error kind; each call says whether it
 * succeeded, so a scenario can keep other state (a target's rows) in step with the rows.
 */
public final class GoldenRecorder implements AutoCloseable {
    /** Checkpoints up to this many bytes are stored in full after every state change, not only as digests. */
    public static final long FULL_CHECKPOINT_BYTES = 16 * 1024;

    private final ReferenceDraftModel model;
    private final ReferenceDraftRows rows;
    private final List<Step> steps = new ArrayList<>();
    private final Map<String, HostTensor> tensors = new LinkedHashMap<>();
    private final Map<String, RowCheckpoint> captured = new LinkedHashMap<>();
    private boolean seeded;
    private boolean greedy;

    public GoldenRecorder(ReferenceDraftModel model) {
        this.model = model;
        this.rows = model.openReferenceRows(List.of());
    }

    /** The recorded steps and tensors. */
    public record Recording(List<Step> steps, Map<String, HostTensor> tensors, String sampling) {
    }

    public int rowCount() {
        return rows.rowCount();
    }

    /** Appends the rows {@code sources} name; true when the reference accepted the call. */
    public boolean append(Source... sources) {
        List<RowCheckpoint> cps = new ArrayList<>();
        for (Source s : sources) {
            cps.add(s.checkpoint() == null ? null : checkpoint(s.checkpoint()));
        }
        int i = steps.size();
        String err = attempt(() -> rows.append(cps));
        steps.add(new GoldenTrace.Append(List.of(sources), state(i, err)));
        return err == null;
    }

    public boolean filter(int... keep) {
        int i = steps.size();
        String err = attempt(() -> rows.filterRows(keep));
        steps.add(new GoldenTrace.Filter(keep.clone(), state(i, err)));
        return err == null;
    }

    public boolean prefill(int[][] tokens, HostTensor context) {
        int i = steps.size();
        String name = "steps." + i + ".context";
        tensors.put(name, context);
        String err = attempt(() -> rows.prefill(HostTensor.ofIntRows(tokens), context));
        int[][][] experts = experts(err);
        steps.add(new GoldenTrace.Prefill(tokens, name, state(i, err).withExperts(experts)));
        return err == null;
    }

    /** Drafts; the tokens drafted, or null when the reference refused the call. */
    public int[][] draft(int[] pending, int depth, long[] stepsIn, List<RowSampler> samplers) {
        int b = pending.length;
        int[][] tokens = new int[b][depth];
        float[][] lps = new float[b][depth];
        float[][] gaps = new float[b][depth];
        String err = attempt(() -> rows.draft(pending, depth, stepsIn, new DraftSampling(samplers),
                (row, pos, lp, off, sampled) -> {
                    tokens[row][pos] = sampled;
                    lps[row][pos] = lp[off + sampled];
                    gaps[row][pos] = DraftSampler.top2Gap(lp, off, model.model().config().vocabSize());
                    return sampled;
                }));
        for (RowSampler s : samplers) {
            seeded |= !s.isGreedy();
            greedy |= s.isGreedy();
        }
        Expect e = err != null ? Expect.failure(err, rows.rowCount())
                : new Expect(null, rows.rowCount(), tokens, lps, gaps, null, null, experts(err));
        steps.add(new GoldenTrace.Draft(pending.clone(), depth, stepsIn.clone(), samplers, e));
        return err == null ? tokens : null;
    }

    public boolean commit(int[] accepted, HostTensor context) {
        int i = steps.size();
        String name = "steps." + i + ".context";
        tensors.put(name, context);
        String err = attempt(() -> rows.commit(accepted, context));
        int[][][] experts = experts(err);
        steps.add(new GoldenTrace.Commit(accepted.clone(), name, state(i, err).withExperts(experts)));
        return err == null;
    }

    public boolean capture(int row, String id) {
        int i = steps.size();
        RowCheckpoint[] cp = new RowCheckpoint[1];
        String err = attempt(() -> cp[0] = rows.capture(row));
        Expect e;
        if (err != null) {
            e = Expect.failure(err, rows.rowCount());
        } else {
            captured.put(id, cp[0]);
            e = new Expect(null, rows.rowCount(), null, null, null, null, rowState(cp[0], "steps." + i
                    + ".checkpoint", true));
        }
        steps.add(new GoldenTrace.Capture(row, id, e));
        return err == null;
    }

    public Recording finish() {
        return new Recording(steps, tensors, seeded && greedy ? "mixed" : seeded ? "seeded" : "greedy");
    }

    @Override
    public void close() {
        rows.close();
    }

    private RowCheckpoint checkpoint(String id) {
        RowCheckpoint cp = captured.get(id);
        if (cp == null) {
            throw new IllegalArgumentException("golden scenario: no checkpoint captured as '" + id + "'");
        }
        return cp;
    }

    /**
     * The router choices of the call that just succeeded, on a MoE model (read before any capture, which starts a
     * new call): per row, {@code [position, e_0, …, e_{K−1}]} in position order; null on a dense model or a refusal.
     */
    private int[][][] experts(String err) {
        if (err != null || !model.model().weights().isMoe()) {
            return null;
        }
        return GoldenTrace.expertsByRow(rows.lastRouterChoices(), rows.rowCount());
    }

    /** Every row's state after a successful state change, or the error. */
    private Expect state(int step, String err) {
        if (err != null) {
            return Expect.failure(err, rows.rowCount());
        }
        List<RowState> out = new ArrayList<>();
        for (int r = 0; r < rows.rowCount(); r++) {
            RowCheckpoint cp = null;
            try {
                cp = rows.capture(r);
            } catch (MtpException e) {
                // a cold row: nothing retained yet
            }
            out.add(cp == null ? null : rowState(cp, "steps." + step + ".rows." + r, false));
        }
        return new Expect(null, rows.rowCount(), null, null, null, out, null);
    }

    private RowState rowState(RowCheckpoint cp, String prefix, boolean always) {
        long bytes = cp.hidden().byteSize() + (cp.keys() == null ? 0 : cp.keys().byteSize() * 2);
        boolean full = always || bytes <= FULL_CHECKPOINT_BYTES;
        if (full) {
            if (cp.keys() != null) {
                tensors.put(prefix + ".keys", cp.keys());
                tensors.put(prefix + ".values", cp.values());
            }
            tensors.put(prefix + ".hidden", cp.hidden());
        }
        return new RowState(cp.processedTokens(), cp.draftOffset(), CheckpointDigest.of(cp), full ? prefix : null);
    }

    private static String attempt(Runnable r) {
        try {
            r.run();
            return null;
        } catch (MtpException e) {
            return e.kind().name();
        }
    }
}
