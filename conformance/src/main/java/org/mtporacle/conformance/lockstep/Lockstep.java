package org.mtporacle.conformance.lockstep;

import org.mtporacle.api.DraftModel;
import org.mtporacle.api.DraftRows;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.RouterChoices;
import org.mtporacle.api.RowCheckpoint;
import org.mtporacle.api.TargetCheckpoint;
import org.mtporacle.api.Tolerance;
import org.mtporacle.conformance.chain.Action;
import org.mtporacle.conformance.chain.ChainData;
import org.mtporacle.conformance.chain.ContextSource;
import org.mtporacle.conformance.chain.GroupShape;
import org.mtporacle.conformance.chain.ShapeRules;
import org.mtporacle.conformance.compare.Divergence;
import org.mtporacle.conformance.compare.Divergence.Kind;
import org.mtporacle.conformance.compare.Divergence.ValueEvidence;
import org.mtporacle.conformance.compare.Judge;
import org.mtporacle.reference.ReferenceDraftModel;
import org.mtporacle.reference.ReferenceDraftRows;

import java.util.ArrayList;
import java.util.List;

/**
 * Drives a backend (the subject) and the reference (the oracle) through the same chain, action by action, and stops
 * at the first divergence (DESIGN "Conformance method"): draft tokens compared tie-aware (both sides continue on the
 * subject's token), every capturable row's checkpoint compared after every state change, and errors compared by kind
 * with the state of both sides unchanged. Every comparison goes through one {@link Judge}.
 *
 * <p>The contexts fed to prefill and commit are the chain's seeded synthetic hiddens, or, with {@link TargetTaps},
 * a reference target's taps of the chain's own tokens ({@link TargetMirror}, spec §13.4); both sides receive the same.
 */
public final class Lockstep {
    private final ReferenceDraftModel oracle;
    private final DraftModel subject;
    private final Tolerance tolerance;
    private final MtpModel model;
    private final TargetTaps taps;

    /** A run on synthetic contexts. */
    public Lockstep(ReferenceDraftModel oracle, DraftModel subject, Tolerance tolerance) {
        this(oracle, subject, tolerance, null);
    }

    /**
     * A run whose contexts are {@code taps}' (null: synthetic).
     *
     * @throws org.mtporacle.api.MtpException INCOMPATIBLE_MODEL when the target's taps do not fit the drafter
     */
    public Lockstep(ReferenceDraftModel oracle, DraftModel subject, Tolerance tolerance, TargetTaps taps) {
        this.oracle = oracle;
        this.subject = subject;
        this.tolerance = tolerance;
        this.model = oracle.model();
        this.taps = taps;
        if (taps != null) {
            taps.checkFits(model);
        }
    }

    public Tolerance tolerance() {
        return tolerance;
    }

    /** Where this run's contexts come from. */
    public ContextSource contexts() {
        return taps == null ? ContextSource.SYNTHETIC : taps.source();
    }

    /** Runs {@code chain}; {@code seed} is only recorded in the outcome. */
    public ChainOutcome run(long seed, List<Action> chain) {
        Run r = new Run();
        try (ReferenceDraftRows o = oracle.openReferenceRows(List.of()); DraftRows s = subject.openRows(List.of());
             TargetMirror t = taps == null ? null : new TargetMirror(taps)) {
            r.oracle = o;
            r.subject = s;
            r.target = t;
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
        TargetMirror target; // null with synthetic contexts
        GroupShape shape = GroupShape.empty();
        final List<RowCheckpoint[]> pool = new ArrayList<>(); // {oracle's, subject's}
        final List<TargetCheckpoint> targetPool = new ArrayList<>(); // the target state captured with pool[i]
        final Judge judge = new Judge(tolerance, model.config().vocabSize(), "the reference");
        Divergence divergence;
        int index;
        int executed;
        int badCalls;
        int skippedBad;

        ChainOutcome.Stats stats() {
            Judge.Counts c = judge.counts();
            return new ChainOutcome.Stats((int) c.comparedTokens(), (int) c.nearTies(), (int) c.comparedCheckpoints(),
                    c.maxKvNmse(), c.maxHiddenNmse(), badCalls, skippedBad, c.maxNearTieGap(), c.nearTieBins(),
                    judge.gaps(), judge.routerTally());
        }

        void step(Action action) {
            GroupShape before = shape;
            boolean ok = switch (action) {
                case Action.Append a -> append(a);
                case Action.Filter f -> filter(f, before);
                case Action.Prefill p -> prefill(p, before);
                case Action.Draft d -> draft(d);
                case Action.Commit c -> commit(c, before);
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

        /**
         * Runs {@code call} on both sides; true when both succeeded, false when both failed alike. When the backend
         * reports its MoE router choices it runs first and the reference continues on them (spec §12.5).
         */
        boolean both(java.util.function.Consumer<DraftRows> call) {
            List<RowCheckpoint> oBefore = captureAll(oracle);
            List<RowCheckpoint> sBefore = captureAll(subject);
            if (subject instanceof RouterChoices) {
                RuntimeException se = attempt(() -> call.accept(subject));
                if (se == null) {
                    armRouter();
                }
                RuntimeException oe = attempt(() -> call.accept(oracle));
                return divergence == null && compareOutcome(oe, se, oBefore, sBefore);
            }
            RuntimeException oe = attempt(() -> call.accept(oracle));
            RuntimeException se = attempt(() -> call.accept(subject));
            return compareOutcome(oe, se, oBefore, sBefore);
        }

        /**
         * Makes the reference's next call judge each MoE forward row's experts against the backend's (by row and
         * position) and continue on the backend's; rows the backend did not report keep the reference's choice.
         */
        void armRouter() {
            if (!(subject instanceof RouterChoices rc)) {
                return;
            }
            java.util.Map<Long, int[]> theirs = new java.util.HashMap<>();
            for (RouterChoices.Choice ch : rc.lastRouterChoices()) {
                theirs.put(((long) ch.row() << 32) | (ch.position() & 0xffffffffL), ch.experts());
            }
            oracle.chooseExpertsNextCall((row, pos, probs, ours) -> {
                int[] their = theirs.get(((long) row << 32) | (pos & 0xffffffffL));
                if (their == null) {
                    return ours;
                }
                if (divergence == null) {
                    diverge(judge.routerChoice(row, pos, probs, ours, their, "backend chose"));
                }
                return divergence == null ? their : ours;
            });
        }

        boolean compareOutcome(RuntimeException oe, RuntimeException se, List<RowCheckpoint> oBefore,
                               List<RowCheckpoint> sBefore) {
            if (oe != null && !(oe instanceof MtpException)) {
                throw new IllegalStateException("the reference threw a non-contract exception", oe);
            }
            MtpException o = (MtpException) oe;
            Divergence d = judge.outcome(o == null ? null : o.kind().name(), o == null ? null : o.getMessage(), se);
            if (d != null || oe == null) {
                diverge(d);
                return d == null;
            }
            checkUnchanged("reference", oracle, oBefore);
            checkUnchanged("backend", subject, sBefore);
            return false;
        }

        void checkUnchanged(String side, DraftRows g, List<RowCheckpoint> before) {
            if (divergence != null) {
                return;
            }
            int[] n = new int[1];
            RuntimeException e = attempt(() -> n[0] = g.rowCount());
            if (e != null && !side.equals("reference")) {
                diverge(judge.outcome(null, null, e));
                return;
            }
            if (e != null) {
                throw e;
            }
            if (n[0] != shape.rows()) {
                if (side.equals("reference")) {
                    throw new IllegalStateException("the reference changed its row count in a failed call at action "
                            + index);
                }
                diverge(Judge.of(Kind.STATE_AFTER_FAILURE, -1, "a failed call changed the backend's row count from "
                        + shape.rows() + " to " + n[0], ValueEvidence.of("rowCount", shape.rows(), n[0])));
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
                    diverge(Judge.of(Kind.STATE_AFTER_FAILURE, r, "a failed call changed row " + r + " of the "
                            + "backend", ValueEvidence.of("checkpoint", "as before the call", "changed")));
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
            boolean ok = compareOutcome(oe, se, oBefore, sBefore);
            if (ok && target != null) {
                List<TargetCheckpoint> t = new ArrayList<>();
                for (int slot : a.slots()) {
                    t.add(slot < 0 || pool.isEmpty() ? null : targetPool.get(slot % pool.size()));
                }
                target.append(t);
            }
            return ok;
        }

        boolean filter(Action.Filter f, GroupShape before) {
            int[] keep = ChainData.keep(f.seed(), before.rows(), f.keepAll());
            boolean ok = both(g -> g.filterRows(keep));
            if (ok && target != null) {
                target.filterRows(keep);
            }
            return ok;
        }

        /**
         * A prefill of seeded tokens; with target contexts, the target prefills the same tokens first when the shape
         * says the call is valid (its taps are the context), and the seeded hiddens stand in when it is not.
         */
        boolean prefill(Action.Prefill p, GroupShape before) {
            ChainData.PrefillArgs args = ChainData.prefill(p.seed(), before.rows(), p.length(),
                    model.config().vocabSize(), model.config().hiddenSize());
            boolean mirrored = target != null && before.canPrefill();
            HostTensor context = mirrored ? target.prefill(args.tokens()) : args.context();
            boolean ok = both(g -> g.prefill(args.tokens(), context));
            if (mirrored && !ok && divergence == null) {
                throw new IllegalStateException("target contexts: both sides refused a prefill that the group's "
                        + "shape allows, at action " + index + "; the target already consumed its tokens");
            }
            return ok;
        }

        /** A commit of seeded accepted counts; with target contexts, the open round's verify taps are the context. */
        boolean commit(Action.Commit c, GroupShape before) {
            ChainData.CommitArgs args = ChainData.commit(c.seed(), c.acceptance(), before.rows(), before.depth(),
                    model.config().hiddenSize());
            HostTensor verified = target == null ? null : target.roundContext();
            HostTensor context = verified != null ? verified : args.context();
            boolean ok = both(g -> g.commit(args.accepted(), context));
            if (ok && verified != null) {
                target.commit(args.accepted());
            }
            return ok;
        }

        boolean draft(Action.Draft d) {
            int b = shape.rows();
            ChainData.DraftArgs args = ChainData.draft(d.seed(), b, model.config().vocabSize(), d.stochastic());
            int[][][] theirs = new int[1][][];
            int[][][] drafted = new int[1][][];
            List<RowCheckpoint> oBefore = captureAll(oracle);
            List<RowCheckpoint> sBefore = captureAll(subject);
            RuntimeException se = attempt(() -> theirs[0] = subject.draft(args.pending(), d.depth(), args.steps(),
                    args.sampling()));
            if (se == null && !wellFormed(theirs[0], b, d.depth())) {
                return false;
            }
            if (se == null) {
                armRouter();
            }
            RuntimeException oe = attempt(() -> drafted[0] = oracle.draft(args.pending(), d.depth(), args.steps(),
                    args.sampling(),
                    (row, pos, lp, off, ours) -> {
                        if (se != null) {
                            return ours;
                        }
                        int their = theirs[0][row][pos];
                        if (divergence == null) {
                            diverge(judge.token(row, pos, lp, off, ours, their, args.sampling().row(row),
                                    args.steps()[row] + pos, "backend drafted", "reference"));
                        }
                        return their;
                    }));
            if (divergence != null) {
                return false;
            }
            boolean ok = compareOutcome(oe, se, oBefore, sBefore);
            if (ok && target != null) {
                target.verify(args.pending(), drafted[0]); // the reference side's drafts: the backend's at near-ties
            }
            return ok;
        }

        boolean wellFormed(int[][] t, int b, int depth) {
            diverge(judge.draftResult(t, b, depth));
            return divergence == null;
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
            diverge(judge.checkpoint(row, "row " + row, pair[0], pair[1]));
            pool.add(pair);
            if (target != null) {
                targetPool.add(target.capture(row));
            }
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
            int[] n = new int[1];
            RuntimeException failed = attempt(() -> n[0] = subject.rowCount()); // an engine can fail here too
            if (failed != null) {
                diverge(judge.outcome(null, null, failed));
                return;
            }
            diverge(judge.rowCount(oracle.rowCount(), n[0]));
            if (divergence != null) {
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
                    diverge(judge.checkpoint(row, "row " + row, pair[0], pair[1]));
                } else if (divergence == null) {
                    diverge(Judge.of(Kind.CHECKPOINT_STATE, row, "row " + row + " cannot be captured on either side",
                            ValueEvidence.of("retainedHidden", true, false)));
                }
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

        /** Keeps the first divergence, placed at the current action. */
        void diverge(Divergence d) {
            if (divergence == null && d != null) {
                divergence = d.at(index, "backend");
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
