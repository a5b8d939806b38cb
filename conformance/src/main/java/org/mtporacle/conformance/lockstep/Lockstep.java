package org.mtporacle.conformance.lockstep;

import org.mtporacle.api.DraftModel;
import org.mtporacle.api.DraftRows;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.RowCheckpoint;
import org.mtporacle.api.Tolerance;
import org.mtporacle.conformance.chain.Action;
import org.mtporacle.conformance.chain.ChainData;
import org.mtporacle.conformance.chain.GroupShape;
import org.mtporacle.conformance.chain.ShapeRules;
import org.mtporacle.conformance.lockstep.Divergence.Category;
import org.mtporacle.reference.ReferenceDraftModel;
import org.mtporacle.reference.ReferenceDraftRows;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Drives a backend (the subject) and the reference (the oracle) through the same chain, action by action, and stops
 * at the first divergence (DESIGN "Conformance method"): draft tokens compared tie-aware (both sides continue on the
 * subject's token), every capturable row's checkpoint compared after every state change, and errors compared by kind
 * with the state of both sides unchanged.
 */
public final class Lockstep {
    private final ReferenceDraftModel oracle;
    private final DraftModel subject;
    private final Tolerance tolerance;
    private final MtpModel model;

    public Lockstep(ReferenceDraftModel oracle, DraftModel subject, Tolerance tolerance) {
        this.oracle = oracle;
        this.subject = subject;
        this.tolerance = tolerance;
        this.model = oracle.model();
    }

    public Tolerance tolerance() {
        return tolerance;
    }

    /** Runs {@code chain}; {@code seed} is only recorded in the outcome. */
    public ChainOutcome run(long seed, List<Action> chain) {
        Run r = new Run();
        try (ReferenceDraftRows o = oracle.openReferenceRows(List.of()); DraftRows s = subject.openRows(List.of())) {
            r.oracle = o;
            r.subject = s;
            for (int i = 0; i < chain.size(); i++) {
                r.index = i;
                r.step(chain.get(i));
                r.executed = i + 1;
                if (r.divergence != null) {
                    break;
                }
            }
        }
        return new ChainOutcome(seed, chain, r.executed, r.divergence, r.stats());
    }

    private final class Run {
        ReferenceDraftRows oracle;
        DraftRows subject;
        GroupShape shape = GroupShape.empty();
        final List<RowCheckpoint[]> pool = new ArrayList<>(); // {oracle's, subject's}
        Divergence divergence;
        int index;
        int executed;
        int comparedTokens;
        int nearTies;
        int comparedCheckpoints;
        double maxKv;
        double maxHidden;
        int badCalls;
        int skippedBad;
        double maxGap;

        ChainOutcome.Stats stats() {
            return new ChainOutcome.Stats(comparedTokens, nearTies, comparedCheckpoints, maxKv, maxHidden, badCalls,
                    skippedBad, maxGap);
        }

        void step(Action action) {
            GroupShape before = shape;
            boolean ok = switch (action) {
                case Action.Append a -> append(a);
                case Action.Filter f -> both(g -> g.filterRows(ChainData.keep(f.seed(), before.rows(), f.keepAll())));
                case Action.Prefill p -> {
                    ChainData.PrefillArgs args = ChainData.prefill(p.seed(), before.rows(), p.length(),
                            model.config().vocabSize(), model.config().hiddenSize());
                    yield both(g -> g.prefill(args.tokens(), args.context()));
                }
                case Action.Draft d -> draft(d);
                case Action.Commit c -> {
                    ChainData.CommitArgs args = ChainData.commit(c.seed(), c.acceptance(), before.rows(),
                            before.depth(), model.config().hiddenSize());
                    yield both(g -> g.commit(args.accepted(), args.context()));
                }
                case Action.Capture c -> capture(c);
                case Action.Bad b -> bad(b);
            };
            if (divergence == null && ok) {
                shape = ShapeRules.next(before, action);
                if (!(action instanceof Action.Capture)) {
                    compareRows();
                }
            }
        }

        /** Runs {@code call} on both sides; true when both succeeded, false when both failed alike. */
        boolean both(java.util.function.Consumer<DraftRows> call) {
            List<RowCheckpoint> oBefore = captureAll(oracle);
            List<RowCheckpoint> sBefore = captureAll(subject);
            RuntimeException oe = attempt(() -> call.accept(oracle));
            RuntimeException se = attempt(() -> call.accept(subject));
            return compareOutcome(oe, se, oBefore, sBefore);
        }

        boolean compareOutcome(RuntimeException oe, RuntimeException se, List<RowCheckpoint> oBefore,
                               List<RowCheckpoint> sBefore) {
            if (se != null && !(se instanceof MtpException)) {
                diverge(Category.CONTRACT, "backend threw " + se + " instead of an MtpException",
                        Map.of("exception", String.valueOf(se)));
                return false;
            }
            if (oe != null && !(oe instanceof MtpException)) {
                throw new IllegalStateException("the reference threw a non-contract exception", oe);
            }
            if (oe == null && se == null) {
                return true;
            }
            if (oe == null || se == null) {
                MtpException e = (MtpException) (oe == null ? se : oe);
                diverge(Category.ERROR_BEHAVIOUR, (oe == null ? "backend failed where the reference succeeded: "
                        : "backend succeeded where the reference failed: ") + e.getMessage(),
                        Map.of("failedSide", oe == null ? "backend" : "reference", "kind", e.kind().name(),
                                "message", e.getMessage()));
                return false;
            }
            MtpException o = (MtpException) oe;
            MtpException s = (MtpException) se;
            if (o.kind() != s.kind()) {
                diverge(Category.ERROR_BEHAVIOUR, "error kind " + s.kind() + " where the reference says " + o.kind()
                        + " (" + o.getMessage() + ")", Map.of("referenceKind", o.kind().name(), "backendKind",
                        s.kind().name(), "referenceMessage", o.getMessage(), "backendMessage", s.getMessage()));
                return false;
            }
            checkUnchanged("reference", oracle, oBefore);
            checkUnchanged("backend", subject, sBefore);
            return false;
        }

        void checkUnchanged(String side, DraftRows g, List<RowCheckpoint> before) {
            if (divergence != null) {
                return;
            }
            if (g.rowCount() != shape.rows()) {
                if (side.equals("reference")) {
                    throw new IllegalStateException("the reference changed its row count in a failed call at action "
                            + index);
                }
                diverge(Category.STATE_AFTER_FAILURE, "a failed call changed the backend's row count from "
                        + shape.rows() + " to " + g.rowCount(), Map.of("before", shape.rows(), "after", g.rowCount()));
                return;
            }
            List<RowCheckpoint> after = captureAll(g);
            for (int r = 0; r < before.size(); r++) {
                RowCheckpoint a = before.get(r);
                RowCheckpoint b = r < after.size() ? after.get(r) : null;
                boolean same = a == null ? b == null : a.contentEquals(b);
                if (!same || after.size() != before.size()) {
                    if (side.equals("reference")) {
                        throw new IllegalStateException("the reference changed state in a failed call at action "
                                + index);
                    }
                    diverge(Category.STATE_AFTER_FAILURE, "a failed call changed row " + r + " of the backend",
                            Map.of("row", r));
                    return;
                }
            }
        }

        boolean append(Action.Append a) {
            List<RowCheckpoint> o = new ArrayList<>();
            List<RowCheckpoint> s = new ArrayList<>();
            for (int slot : a.slots()) {
                if (slot < 0 || pool.isEmpty()) {
                    o.add(null);
                    s.add(null);
                } else {
                    RowCheckpoint[] pair = pool.get(slot % pool.size());
                    o.add(pair[0]);
                    s.add(a.crossFeed() ? pair[0] : pair[1]);
                }
            }
            List<RowCheckpoint> oBefore = captureAll(oracle);
            List<RowCheckpoint> sBefore = captureAll(subject);
            RuntimeException oe = attempt(() -> oracle.append(o));
            RuntimeException se = attempt(() -> subject.append(s));
            return compareOutcome(oe, se, oBefore, sBefore);
        }

        boolean draft(Action.Draft d) {
            int b = shape.rows();
            ChainData.DraftArgs args = ChainData.draft(d.seed(), b, model.config().vocabSize(), d.stochastic());
            int[][][] theirs = new int[1][][];
            List<RowCheckpoint> oBefore = captureAll(oracle);
            List<RowCheckpoint> sBefore = captureAll(subject);
            RuntimeException se = attempt(() -> theirs[0] = subject.draft(args.pending(), d.depth(), args.steps(),
                    args.sampling()));
            if (se == null && !wellFormed(theirs[0], b, d.depth())) {
                return false;
            }
            int vocab = model.config().vocabSize();
            RuntimeException oe = attempt(() -> oracle.draft(args.pending(), d.depth(), args.steps(), args.sampling(),
                    (row, pos, lp, off, ours) -> {
                        if (se != null) {
                            return ours;
                        }
                        int their = theirs[0][row][pos];
                        comparedTokens++;
                        if (their == ours) {
                            return ours;
                        }
                        var sampler = args.sampling().row(row);
                        long step = args.steps()[row] + pos;
                        double gap = sampler.isGreedy() ? NearTie.logProbGap(lp, off, ours, their)
                                : NearTie.seededGap(lp, off, vocab, sampler, step, their);
                        double bound = tolerance.tokenGap();
                        if (gap <= bound && divergence == null) {
                            nearTies++;
                            maxGap = Math.max(maxGap, gap);
                        } else if (divergence == null) {
                            Map<String, Object> det = new LinkedHashMap<>();
                            det.put("row", row);
                            det.put("position", pos);
                            det.put("referenceToken", ours);
                            det.put("backendToken", their);
                            det.put("referenceLogprob", lp[off + ours]);
                            det.put("backendTokenLogprob", lp[off + their]);
                            det.put("gap", gap);
                            det.put("gapUnit", sampler.isGreedy() ? "log-prob" : "log-prob (2 x perturbation)");
                            det.put("tolerance", bound);
                            det.put("sampler", sampler.toString());
                            det.put("step", step);
                            diverge(Category.DRAFT_TOKEN, String.format(
                                    "row %d position %d: backend drafted %d, reference %d (log-probs %.5f vs %.5f, "
                                            + "gap %.3g > %.3g, %s)", row, pos, their, ours, lp[off + their],
                                    lp[off + ours], gap, bound, sampler.isGreedy() ? "greedy" : "seeded"), det);
                        }
                        return their;
                    }));
            if (divergence != null) {
                return false;
            }
            return compareOutcome(oe, se, oBefore, sBefore);
        }

        boolean wellFormed(int[][] t, int b, int depth) {
            boolean ok = t != null && t.length == b;
            for (int r = 0; ok && r < b; r++) {
                ok = t[r] != null && t[r].length == depth;
                for (int p = 0; ok && p < depth; p++) {
                    ok = t[r][p] >= 0 && t[r][p] < model.config().vocabSize();
                }
            }
            if (!ok) {
                diverge(Category.CONTRACT, "draft returned a malformed result (expected " + b + " rows of " + depth
                        + " ids in [0, V))", Map.of("result", String.valueOf(t == null ? null : Arrays.deepToString(t))));
            }
            return ok;
        }

        boolean capture(Action.Capture c) {
            int row = ChainData.captureRow(c.seed(), shape);
            if (row < 0) {
                return false;
            }
            RowCheckpoint[] pair = new RowCheckpoint[2];
            RuntimeException oe = attempt(() -> pair[0] = oracle.capture(row));
            RuntimeException se = attempt(() -> pair[1] = subject.capture(row));
            if (!compareOutcome(oe, se, List.of(), List.of())) {
                return false;
            }
            compareCheckpoint(row, pair[0], pair[1]);
            pool.add(pair);
            return true;
        }

        boolean bad(Action.Bad b) {
            if (!b.call().appliesTo(shape)) {
                skippedBad++;
                return false;
            }
            badCalls++;
            List<RowCheckpoint> oBefore = captureAll(oracle);
            List<RowCheckpoint> sBefore = captureAll(subject);
            RuntimeException oe = attempt(() -> b.call().invoke(oracle, model, shape, b.seed()));
            RuntimeException se = attempt(() -> b.call().invoke(subject, model, shape, b.seed()));
            if (oe instanceof MtpException m && m.kind() != b.call().expectedKind()) {
                throw new IllegalStateException("the reference answers " + b.call() + " with " + m.kind()
                        + ", the catalogue expects " + b.call().expectedKind(), m);
            }
            compareOutcome(oe, se, oBefore, sBefore);
            return false;
        }

        void compareRows() {
            if (subject.rowCount() != oracle.rowCount()) {
                diverge(Category.CHECKPOINT, "backend has " + subject.rowCount() + " rows, reference "
                        + oracle.rowCount(), Map.of("backendRows", subject.rowCount(), "referenceRows",
                        oracle.rowCount()));
                return;
            }
            if (shape.roundOpen()) {
                return;
            }
            for (int r = 0; r < shape.rows() && divergence == null; r++) {
                if (!shape.hasHidden(r)) {
                    continue;
                }
                int row = r;
                RowCheckpoint[] pair = new RowCheckpoint[2];
                RuntimeException oe = attempt(() -> pair[0] = oracle.capture(row));
                RuntimeException se = attempt(() -> pair[1] = subject.capture(row));
                if (compareOutcome(oe, se, List.of(), List.of())) {
                    compareCheckpoint(row, pair[0], pair[1]);
                } else if (divergence == null) {
                    diverge(Category.CHECKPOINT, "row " + row + " cannot be captured on either side",
                            Map.of("row", row));
                }
            }
        }

        void compareCheckpoint(int row, RowCheckpoint o, RowCheckpoint s) {
            comparedCheckpoints++;
            if (s == null) {
                diverge(Category.CONTRACT, "capture(" + row + ") returned null", Map.of("row", row));
                return;
            }
            if (o.processedTokens() != s.processedTokens() || o.draftOffset() != s.draftOffset()
                    || !o.schema().equals(s.schema()) || !o.modelIdentity().equals(s.modelIdentity())) {
                diverge(Category.CHECKPOINT, String.format("row %d: backend checkpoint P=%d draftOffset=%d schema=%s, "
                                + "reference P=%d draftOffset=%d schema=%s", row, s.processedTokens(), s.draftOffset(),
                        s.schema(), o.processedTokens(), o.draftOffset(), o.schema()),
                        Map.of("row", row, "backendP", s.processedTokens(), "referenceP", o.processedTokens(),
                                "backendDraftOffset", s.draftOffset(), "referenceDraftOffset", o.draftOffset()));
                return;
            }
            tensor(row, "keys", o.keys(), s.keys(), tolerance.kvNmse(), true);
            tensor(row, "values", o.values(), s.values(), tolerance.kvNmse(), true);
            tensor(row, "hidden", o.hidden(), s.hidden(), tolerance.hiddenNmse(), false);
        }

        void tensor(int row, String name, HostTensor o, HostTensor s, double bound, boolean kv) {
            if (divergence != null) {
                return;
            }
            if (o == null || s == null) {
                if (o != s) {
                    diverge(Category.CHECKPOINT, "row " + row + ": " + name + " present on one side only",
                            Map.of("row", row, "tensor", name));
                }
                return;
            }
            if (!Arrays.equals(o.shape(), s.shape())) {
                diverge(Category.CHECKPOINT, "row " + row + ": " + name + " shape " + s.describe() + ", reference "
                        + o.describe(), Map.of("row", row, "tensor", name));
                return;
            }
            double nmse = Nmse.of(s, o);
            if (kv) {
                maxKv = Math.max(maxKv, nmse);
            } else {
                maxHidden = Math.max(maxHidden, nmse);
            }
            if (!(nmse <= bound)) {
                diverge(Category.CHECKPOINT, String.format("row %d: %s NMSE %.3g > %.3g", row, name, nmse, bound),
                        Map.of("row", row, "tensor", name, "nmse", nmse, "tolerance", bound));
            }
        }

        List<RowCheckpoint> captureAll(DraftRows g) {
            List<RowCheckpoint> out = new ArrayList<>();
            if (shape.roundOpen()) {
                return out;
            }
            for (int r = 0; r < shape.rows(); r++) {
                int row = r;
                RowCheckpoint[] c = new RowCheckpoint[1];
                attempt(() -> c[0] = shape.hasHidden(row) ? g.capture(row) : null);
                out.add(c[0]);
            }
            return out;
        }

        void diverge(Category category, String message, Map<String, Object> details) {
            if (divergence == null) {
                divergence = new Divergence(index, category, message, details);
            }
        }
    }

    private static RuntimeException attempt(Runnable r) {
        try {
            r.run();
            return null;
        } catch (RuntimeException e) {
            return e;
        }
    }
}
