package org.mtporacle.conformance.loop.lockstep;

import org.mtporacle.api.DraftModel;
import org.mtporacle.api.DraftRows;
import org.mtporacle.api.DraftSampling;
import org.mtporacle.api.HiddenTap;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.LoadedTarget;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.RouterChoices;
import org.mtporacle.api.RowCheckpoint;
import org.mtporacle.api.RowSampler;
import org.mtporacle.api.TargetCheckpoint;
import org.mtporacle.api.TargetContract;
import org.mtporacle.api.TargetOutput;
import org.mtporacle.api.TargetRouterChoices;
import org.mtporacle.api.TargetRows;
import org.mtporacle.api.Tolerance;
import org.mtporacle.conformance.compare.ChainMedians;
import org.mtporacle.conformance.compare.Divergence;
import org.mtporacle.conformance.compare.Judge;
import org.mtporacle.conformance.chain.GroupShape;
import org.mtporacle.conformance.compare.Nmse;
import org.mtporacle.conformance.lockstep.TargetTaps;
import org.mtporacle.conformance.loop.chain.LoopAction;
import org.mtporacle.conformance.loop.chain.LoopChainData;
import org.mtporacle.conformance.loop.chain.LoopShape;
import org.mtporacle.conformance.target.chain.TargetShape;
import org.mtporacle.conformance.target.lockstep.TargetDivergence;
import org.mtporacle.conformance.target.lockstep.TargetJudge;
import org.mtporacle.conformance.target.lockstep.TargetRouterFollow;
import org.mtporacle.conformance.target.lockstep.TargetTolerance;
import org.mtporacle.reference.ReferenceDraftModel;
import org.mtporacle.reference.ReferenceDraftRows;
import org.mtporacle.reference.target.ReferenceTarget;
import org.mtporacle.reference.target.ReferenceTargetRows;
import org.mtporacle.reference.target.SpeculativeDecoding;
import org.mtporacle.reference.target.SpeculativeDecoding.KvPolicy;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * Drives a backend's target and drafter (the subject) and the reference's (the oracle) through the same loop chain,
 * action by action, as an engine runs them (spec §13.5), and stops at the first divergence. Each side's drafter is fed
 * its own target's declared tap, as in an engine, so a bug in how the two groups meet shows; everything else the
 * loop derives from outputs (pending tokens, the drafts verified, accepted counts) is the reference's, given to both
 * sides alike. After every action both judges look: the target's ({@link TargetJudge}: logits tie-aware and by NMSE,
 * taps, every warm row's state through capture) and the drafter's ({@link Judge}: draft tokens tie-aware, the
 * reference continuing on the backend's; every warm row's checkpoint), each under the backend's profile (the drafter's
 * retained hidden, being its own target's tap, under the target's tap bound: {@link #drafterTolerance}). At the end
 * of a chain that ran whole, its typical NMSE per kind, the drafter's keys and values recorded beside the target's
 * ({@link TargetJudge#typicalExcess}).
 *
 * <p>The drafter's commit follows the declared KV policy (spec §13.4), on both sides alike: {@code keep} is §5.8's
 * commit with the verify's taps; {@code rebuild} (after a round with drafts) commits 0 and re-runs each row's accepted
 * drafts with its own target's verify taps ({@link SpeculativeDecoding#rebuild}: the row captured, restored into a
 * group of its own, prefilled, captured, and the group refilled in order). A bad call ({@link LoopAction.BadTarget},
 * {@link LoopAction.BadDrafter}) must be refused by the backend with the catalogue's kind, as the reference does, and
 * leave the group's row count and, between rounds, every warm row as it was; an open round stays open, which the
 * round's commit then shows.
 */
public final class LoopLockstep {
    private final ReferenceTarget oracleTarget;
    private final ReferenceDraftModel oracleDrafter;
    private final LoadedTarget subjectTarget;
    private final DraftModel subjectDrafter;
    private final Tolerance tolerance;
    private final HiddenTap tap;
    private final KvPolicy policy;
    private final int vocab;

    /** Under the {@code keep} drafter KV policy. */
    public LoopLockstep(ReferenceTarget oracleTarget, ReferenceDraftModel oracleDrafter, LoadedTarget subjectTarget,
                        DraftModel subjectDrafter, Tolerance tolerance, HiddenTap tap) {
        this(oracleTarget, oracleDrafter, subjectTarget, subjectDrafter, tolerance, tap, KvPolicy.KEEP);
    }

    /**
     * @param policy the drafter KV policy declared for the backend (spec §13.4)
     * @throws MtpException INCOMPATIBLE_MODEL when the target's taps do not fit the drafter
     */
    public LoopLockstep(ReferenceTarget oracleTarget, ReferenceDraftModel oracleDrafter, LoadedTarget subjectTarget,
                        DraftModel subjectDrafter, Tolerance tolerance, HiddenTap tap, KvPolicy policy) {
        this.policy = policy;
        this.oracleTarget = oracleTarget;
        this.oracleDrafter = oracleDrafter;
        this.subjectTarget = subjectTarget;
        this.subjectDrafter = subjectDrafter;
        this.tolerance = tolerance;
        this.tap = tap;
        this.vocab = oracleTarget.model().config().shape().vocabSize();
        new TargetTaps(oracleTarget, tap).checkFits(oracleDrafter.model());
    }

    public Tolerance tolerance() {
        return tolerance;
    }

    public HiddenTap tap() {
        return tap;
    }

    /** The declared drafter KV policy. */
    public KvPolicy policy() {
        return policy;
    }

    /** The reference target the backend is judged against. */
    public ReferenceTarget oracle() {
        return oracleTarget;
    }

    /** Runs {@code chain}; {@code seed} is only recorded in the outcome. */
    public LoopChainOutcome run(long seed, List<LoopAction> chain) {
        Run r = new Run();
        try (ReferenceTargetRows ot = oracleTarget.openReferenceRows(List.of());
             ReferenceDraftRows od = oracleDrafter.openReferenceRows(List.of());
             TargetRows st = subjectTarget.openRows(List.of());
             DraftRows sd = subjectDrafter.openRows(List.of())) {
            r.oT = ot;
            r.oD = od;
            r.sT = st;
            r.sD = sd;
            for (int i = 0; i < chain.size() && r.divergence == null; i++) {
                r.index = i;
                r.step(chain.get(i));
                r.executed = i + 1;
            }
        } catch (MtpException e) {
            if (r.divergence == null) {
                r.divergence = new LoopDivergence("both", "CONTRACT", "CONTRACT", r.index, -1, -1,
                        "opening or closing a group threw " + e);
            }
        }
        if (r.divergence == null) { // the chain's typical NMSE, once it ran whole
            ChainMedians.Excess x = r.tj.typicalExcess();
            if (x != null) {
                TargetDivergence d = r.tj.typical("the chain's " + r.executed + " actions", x);
                r.divergence = new LoopDivergence(x.kind().startsWith("drafter") ? "drafter" : "target",
                        d.kind().name(), d.category().name(), Math.max(0, r.executed - 1), -1, -1, d.message());
            }
        }
        return new LoopChainOutcome(seed, chain, r.executed, r.divergence, LoopChainOutcome.Stats.of(
                r.tj.counts(), r.dj.counts(), r.badCalls), r.skipped, r.accepts);
    }

    /** A pool entry: one request's target and drafter checkpoints on both sides, and its pending token. */
    private record Entry(TargetCheckpoint oT, TargetCheckpoint sT, RowCheckpoint oD, RowCheckpoint sD, int pending) {
    }

    private final class Run {
        ReferenceTargetRows oT;
        TargetRows sT;
        ReferenceDraftRows oD;
        DraftRows sD;
        LoopShape shape = LoopShape.empty();
        int[] pending = new int[0];      // [B] the reference's next token per row (-1: a cold row)
        int[][] drafts;                  // [B][d] the open round's drafts (the reference side's)
        int[][] verified;                // [B][d+1] the open round's verified tokens
        int[][] greedy;                  // [B][d+1] the reference target's greedy token at each verified position
        HostTensor oTaps;                // [B, d+1, H] each side's verify taps: its drafter's commit context
        HostTensor sTaps;
        final List<Entry> pool = new ArrayList<>();
        final TargetJudge tj = new TargetJudge(TargetTolerance.of(tolerance));
        final Judge dj = new Judge(drafterTolerance(tolerance), vocab, "the reference");
        final long[] accepts = new long[TargetContract.MAX_WIDTH];
        LoopDivergence divergence;
        int index;
        int executed;
        int skipped;
        int badCalls;

        void step(LoopAction action) {
            if (!shape.allows(action)) {
                skipped++; // a shrunk chain's leftover, or a bad call that is not invalid for its reason here
                return;
            }
            LoopShape before = shape;
            switch (action) {
                case LoopAction.Join j -> join(j);
                case LoopAction.Leave l -> leave(l, before);
                case LoopAction.Prefill p -> prefill(p, before);
                case LoopAction.Draft d -> draft(d, before);
                case LoopAction.Verify v -> verify();
                case LoopAction.Commit c -> commit(c, before);
                case LoopAction.Capture c -> capture(c, before);
                case LoopAction.BadTarget b -> badTarget(b, before);
                case LoopAction.BadDrafter b -> badDrafter(b, before);
            }
            if (divergence == null) {
                shape = before.next(action);
                if (!(action instanceof LoopAction.Capture)) {
                    compareRows();
                }
            }
        }

        void join(LoopAction.Join j) {
            List<TargetCheckpoint> ot = new ArrayList<>();
            List<TargetCheckpoint> st = new ArrayList<>();
            List<RowCheckpoint> od = new ArrayList<>();
            List<RowCheckpoint> sd = new ArrayList<>();
            int[] next = Arrays.copyOf(pending, pending.length + j.slots().size());
            for (int i = 0; i < j.slots().size(); i++) {
                int slot = j.slots().get(i);
                Entry e = slot < 0 || pool.isEmpty() ? null : pool.get(slot % pool.size());
                ot.add(e == null ? null : e.oT());
                st.add(e == null ? null : e.sT());
                od.add(e == null ? null : e.oD());
                sd.add(e == null ? null : e.sD());
                next[pending.length + i] = e == null ? -1 : e.pending();
            }
            reference("append", () -> {
                oT.append(ot);
                oD.append(od);
                return null;
            });
            if (subjectTarget(() -> sT.append(st)) && subjectDrafter(() -> sD.append(sd))) {
                pending = next;
            }
        }

        void leave(LoopAction.Leave l, LoopShape before) {
            int[] keep = LoopChainData.keep(l, before.rows());
            reference("filterRows", () -> {
                oT.filterRows(keep);
                oD.filterRows(keep);
                return null;
            });
            if (subjectTarget(() -> sT.filterRows(keep)) && subjectDrafter(() -> sD.filterRows(keep))) {
                int[] next = new int[keep.length];
                for (int i = 0; i < keep.length; i++) {
                    next[i] = pending[keep[i]];
                }
                pending = next;
            }
        }

        /** The target prefills, then each side's drafter the same tokens with its own target's tap. */
        void prefill(LoopAction.Prefill p, LoopShape before) {
            HostTensor tokens = LoopChainData.tokens(p, before.rows(), vocab);
            TargetOutput[] s = new TargetOutput[1];
            TargetOutput o = targets("prefill", "target prefill", g -> g.prefill(tokens), s);
            if (o == null) {
                return;
            }
            HostTensor sCtx = s[0].taps(tap);
            if (!subjectDrafter(() -> sD.prefill(tokens, sCtx))) {
                return;
            }
            armRouter();
            reference("drafter prefill", () -> {
                oD.prefill(tokens, o.taps(tap));
                return null;
            });
            int[][] g = argmaxes(o.logits());
            for (int r = 0; r < pending.length; r++) {
                pending[r] = g[r][g[r].length - 1];
            }
        }

        /** Both drafters draft from the reference's pending tokens; the reference continues on the backend's. */
        void draft(LoopAction.Draft d, LoopShape before) {
            int b = before.rows();
            int[] from = pending.clone();
            long[] steps = new long[b];
            DraftSampling sampling = DraftSampling.greedy(b);
            int[][][] theirs = new int[1][][];
            if (!subjectDrafter(() -> theirs[0] = sD.draft(from, d.depth(), steps, sampling))) {
                return;
            }
            drafter(dj.draftResult(theirs[0], b, d.depth()));
            if (divergence != null) {
                return;
            }
            armRouter();
            drafts = reference("draft", () -> oD.draft(from, d.depth(), steps, sampling,
                    (row, pos, lp, off, ours) -> {
                        int their = theirs[0][row][pos];
                        if (divergence == null) {
                            drafter(dj.token(row, pos, lp, off, ours, their, RowSampler.GREEDY, steps[row] + pos,
                                    "backend drafted", "reference"));
                        }
                        return their;
                    }));
        }

        /** Both targets verify {@code [pending, drafts]}. */
        void verify() {
            int[][] tokens = new int[pending.length][];
            for (int r = 0; r < tokens.length; r++) {
                tokens[r] = new int[drafts[r].length + 1];
                tokens[r][0] = pending[r];
                System.arraycopy(drafts[r], 0, tokens[r], 1, drafts[r].length);
            }
            HostTensor t = HostTensor.ofIntRows(tokens);
            TargetOutput[] s = new TargetOutput[1];
            TargetOutput o = targets("verify", "verify", g -> g.verify(t), s);
            if (o != null) {
                verified = tokens;
                greedy = argmaxes(o.logits());
                oTaps = o.taps(tap);
                sTaps = s[0].taps(tap);
            }
        }

        /**
         * The targets commit, then each drafter by the declared policy with its own target's verify taps: the same
         * counts ({@code keep}), or 0 and the accepted drafts re-run ({@code rebuild}, after a round with drafts).
         */
        void commit(LoopAction.Commit c, LoopShape before) {
            int[] acc = LoopChainData.accepted(c, verified, greedy, before.depth());
            boolean rebuild = policy == KvPolicy.REBUILD && before.depth() > 0;
            int[] drafterAcc = rebuild ? new int[acc.length] : acc;
            int[][] accepted = drafts;
            reference("target commit", () -> {
                oT.commit(acc);
                return null;
            });
            HostTensor sCtx = sTaps;
            if (!subjectTarget(() -> sT.commit(acc)) || !subjectDrafter(() -> sD.commit(drafterAcc, sCtx))) {
                return;
            }
            armRouter();
            HostTensor oCtx = oTaps;
            reference("drafter commit", () -> {
                oD.commit(drafterAcc, oCtx);
                return null;
            });
            if (rebuild) {
                if (!subjectDrafter(() -> SpeculativeDecoding.rebuild(subjectDrafter, sD, acc, accepted, sCtx))) {
                    return;
                }
                reference("drafter rebuild", () -> {
                    SpeculativeDecoding.rebuild(oracleDrafter, oD, acc, accepted, oCtx);
                    return null;
                });
            }
            for (int r = 0; r < acc.length; r++) {
                pending[r] = greedy[r][acc[r]];
                accepts[acc[r]]++;
            }
            drafts = null;
            verified = null;
            greedy = null;
            oTaps = null;
            sTaps = null;
        }

        void capture(LoopAction.Capture c, LoopShape before) {
            int row = LoopChainData.captureRow(c, before);
            TargetCheckpoint ot = reference("target capture", () -> oT.capture(row));
            RowCheckpoint od = reference("drafter capture", () -> oD.capture(row));
            TargetCheckpoint[] st = new TargetCheckpoint[1];
            RowCheckpoint[] sd = new RowCheckpoint[1];
            if (!subjectTarget(() -> st[0] = sT.capture(row)) || !subjectDrafter(() -> sd[0] = sD.capture(row))) {
                return;
            }
            if (st[0] == null) {
                target(TargetJudge.of(TargetDivergence.Kind.CONTRACT, row, -1, "capture returned null"));
                return;
            }
            target(tj.state(row, "checkpoint of row " + row, TargetJudge.RowState.of(ot),
                    TargetJudge.RowState.of(st[0])));
            if (divergence == null) {
                drafter(dj.checkpoint(row, "checkpoint of row " + row, od, sd[0]));
                typicalDrafter(od, sd[0]);
            }
            pool.add(new Entry(ot, st[0], od, sd[0], pending[row]));
        }

        /** A bad call to the target group: refused alike, with the catalogue's kind, and nothing changed. */
        void badTarget(LoopAction.BadTarget b, LoopShape before) {
            TargetShape ts = before.targetShape();
            List<TargetCheckpoint> oBefore = targetRows(oT, ts);
            List<TargetCheckpoint> sBefore = targetRows(sT, ts);
            RuntimeException oe = attempt(() -> b.call().invoke(oT, oracleTarget.model(), ts, b.seed()));
            MtpException refused = refusal("target", b.call().name(), b.call().expectedKind(), oe);
            badCalls++;
            RuntimeException se = attempt(() -> b.call().invoke(sT, oracleTarget.model(), ts, b.seed()));
            target(tj.outcome(refused, se));
            if (divergence == null && !sameRows(oT, ts.rows(), oBefore, targetRows(oT, ts))) {
                throw new IllegalStateException("the reference target changed its rows in a refused " + b.call()
                        + " at action " + index);
            }
            if (divergence == null && !sameRows(sT, ts.rows(), sBefore, targetRows(sT, ts))) {
                target(TargetJudge.of(TargetDivergence.Kind.STATE_AFTER_FAILURE, -1, -1, "a refused "
                        + b.describe() + " changed the backend's target rows (their count or a row's checkpoint)"));
            }
        }

        /** A bad call to the drafter group: refused alike, with the catalogue's kind, and nothing changed. */
        void badDrafter(LoopAction.BadDrafter b, LoopShape before) {
            GroupShape ds = before.drafterShape();
            List<RowCheckpoint> oBefore = drafterRows(oD, ds);
            List<RowCheckpoint> sBefore = drafterRows(sD, ds);
            RuntimeException oe = attempt(() -> b.call().invoke(oD, oracleDrafter.model(), ds, b.seed()));
            MtpException refused = refusal("drafter", b.call().name(), b.call().expectedKind(), oe);
            badCalls++;
            RuntimeException se = attempt(() -> b.call().invoke(sD, oracleDrafter.model(), ds, b.seed()));
            drafter(dj.outcome(refused.kind().name(), refused.getMessage(), se));
            if (divergence == null && !sameRows(oD, ds.rows(), oBefore, drafterRows(oD, ds))) {
                throw new IllegalStateException("the reference drafter changed its rows in a refused " + b.call()
                        + " at action " + index);
            }
            if (divergence == null && !sameRows(sD, ds.rows(), sBefore, drafterRows(sD, ds))) {
                drafter(Judge.of(Divergence.Kind.STATE_AFTER_FAILURE, -1, "a refused " + b.describe() + " changed "
                        + "the backend's drafter rows (their count or a row's checkpoint)",
                        Divergence.ValueEvidence.of("rows", "as before the call", "changed")));
            }
        }

        /** The reference's refusal of a catalogued bad call; anything else is the harness's error, not the backend's. */
        MtpException refusal(String group, String call, MtpException.Kind expected, RuntimeException oe) {
            if (oe instanceof MtpException m && m.kind() == expected) {
                return m;
            }
            throw new IllegalStateException("loop chain: the reference " + group + " answers " + call + " with "
                    + (oe == null ? "success" : oe.toString()) + " at action " + index + ", the catalogue expects "
                    + expected, oe);
        }

        /** Every warm row's target checkpoint (null for a cold row); none during the target's round. */
        List<TargetCheckpoint> targetRows(TargetRows g, TargetShape ts) {
            List<TargetCheckpoint> out = new ArrayList<>();
            for (int r = 0; r < ts.rows() && !ts.roundOpen(); r++) {
                int row = r;
                TargetCheckpoint[] c = new TargetCheckpoint[1];
                attempt(() -> c[0] = ts.warm(row) ? g.capture(row) : null);
                out.add(c[0]);
            }
            return out;
        }

        /** Every warm row's drafter checkpoint (null for a cold row); none during the drafter's round. */
        List<RowCheckpoint> drafterRows(DraftRows g, GroupShape ds) {
            List<RowCheckpoint> out = new ArrayList<>();
            for (int r = 0; r < ds.rows() && !ds.roundOpen(); r++) {
                int row = r;
                RowCheckpoint[] c = new RowCheckpoint[1];
                attempt(() -> c[0] = ds.hasHidden(row) ? g.capture(row) : null);
                out.add(c[0]);
            }
            return out;
        }

        /** Whether a group still has {@code rows} rows and the checkpoints it had before a refused call. */
        boolean sameRows(Object group, int rows, List<?> before, List<?> after) {
            int n;
            try {
                n = group instanceof TargetRows t ? t.rowCount() : ((DraftRows) group).rowCount();
            } catch (RuntimeException e) {
                return false;
            }
            if (n != rows || before.size() != after.size()) {
                return false;
            }
            for (int i = 0; i < before.size(); i++) {
                Object a = before.get(i);
                Object b = after.get(i);
                boolean same = a == null ? b == null : switch (a) {
                    case TargetCheckpoint t -> t.contentEquals((TargetCheckpoint) b);
                    case RowCheckpoint c -> c.contentEquals((RowCheckpoint) b);
                    default -> false;
                };
                if (!same) {
                    return false;
                }
            }
            return true;
        }

        /** Row counts of both groups; between rounds every warm row's target state and drafter checkpoint. */
        void compareRows() {
            int[] n = {-1, -1};
            if (!subjectTarget(() -> n[0] = sT.rowCount()) || !subjectDrafter(() -> n[1] = sD.rowCount())) {
                return;
            }
            target(tj.rowCount(oT.rowCount(), n[0]));
            drafter(dj.rowCount(oD.rowCount(), n[1]));
            for (int r = 0; r < shape.rows() && divergence == null && !shape.roundOpen(); r++) {
                if (!shape.warm(r)) {
                    continue;
                }
                int row = r;
                TargetCheckpoint[] st = new TargetCheckpoint[1];
                RowCheckpoint[] sd = new RowCheckpoint[1];
                if (!subjectTarget(() -> st[0] = sT.capture(row)) || !subjectDrafter(() -> sd[0] = sD.capture(row))) {
                    return;
                }
                target(st[0] == null ? TargetJudge.of(TargetDivergence.Kind.CONTRACT, row, -1, "capture returned null")
                        : tj.state(row, "row " + row, TargetJudge.RowState.of(oT.capture(row)),
                        TargetJudge.RowState.of(st[0])));
                if (divergence == null) {
                    RowCheckpoint od = oD.capture(row);
                    drafter(dj.checkpoint(row, "row " + row, od, sd[0]));
                    typicalDrafter(od, sd[0]);
                }
            }
        }

        /**
         * Both targets' forward {@code call}, judged by {@link #forward}: the reference's output, the backend's in
         * {@code s[0]}, or null when the chain diverged. A backend target that reports its MoE router choices runs
         * first, and the reference continues on its experts (spec §12.5, {@link TargetRouterFollow}).
         */
        TargetOutput targets(String what, String label, java.util.function.Function<TargetRows, TargetOutput> call,
                             TargetOutput[] s) {
            TargetOutput o;
            if (sT instanceof TargetRouterChoices rc) {
                if (!subjectTarget(() -> s[0] = call.apply(sT))) {
                    return null;
                }
                TargetRouterFollow f = TargetRouterFollow.arm(what, oT, rc, tj, () -> divergence != null,
                        this::target);
                o = reference(label, () -> call.apply(oT));
                f.finish();
                if (divergence != null) {
                    return null;
                }
            } else {
                o = reference(label, () -> call.apply(oT));
                if (!subjectTarget(() -> s[0] = call.apply(sT))) {
                    return null;
                }
            }
            return forward(what, o, s[0]) ? o : null;
        }

        /** A drafter checkpoint that passed: its keys' and values' NMSEs count toward the chain's typical NMSE. */
        void typicalDrafter(RowCheckpoint expected, RowCheckpoint actual) {
            if (divergence != null || actual == null) {
                return;
            }
            if (expected.keys() != null && actual.keys() != null) {
                tj.addTypical("drafterKeys", Nmse.of(actual.keys(), expected.keys()));
            }
            if (expected.values() != null && actual.values() != null) {
                tj.addTypical("drafterValues", Nmse.of(actual.values(), expected.values()));
            }
        }

        /** A forward's logits (tie-aware) and both taps against the reference's. */
        boolean forward(String what, TargetOutput o, TargetOutput s) {
            if (s == null) {
                target(TargetJudge.of(TargetDivergence.Kind.CONTRACT, -1, -1, what + " returned null"));
                return false;
            }
            target(tj.logits(what, o.logits(), s.logits()));
            if (divergence == null) {
                target(tj.taps(what, "pre-norm", o.preNorm(), s.preNorm()));
            }
            if (divergence == null) {
                target(tj.taps(what, "post-norm", o.postNorm(), s.postNorm()));
            }
            return divergence == null;
        }

        /**
         * When the backend's drafter reports its MoE router choices, the reference's next drafter call judges each
         * forward row's experts against them and continues on the backend's (spec §12.5).
         */
        void armRouter() {
            if (!(sD instanceof RouterChoices rc)) {
                return;
            }
            Map<Long, int[]> theirs = new HashMap<>();
            for (RouterChoices.Choice ch : rc.lastRouterChoices()) {
                theirs.put(((long) ch.row() << 32) | (ch.position() & 0xffffffffL), ch.experts());
            }
            oD.chooseExpertsNextCall((row, pos, probs, ours) -> {
                int[] their = theirs.get(((long) row << 32) | (pos & 0xffffffffL));
                if (their == null) {
                    return ours;
                }
                if (divergence == null) {
                    drafter(dj.routerChoice(row, pos, probs, ours, their, "backend chose"));
                }
                return divergence == null ? their : ours;
            });
        }

        /** A subject target call: a failure is a divergence, since the reference succeeded. */
        boolean subjectTarget(Runnable call) {
            RuntimeException e = attempt(call);
            if (e != null) {
                target(tj.outcome(null, e));
            }
            return e == null;
        }

        /** A subject drafter call: a failure is a divergence, since the reference succeeded. */
        boolean subjectDrafter(Runnable call) {
            RuntimeException e = attempt(call);
            if (e != null) {
                drafter(dj.outcome(null, null, e));
            }
            return e == null;
        }

        /** A reference call the shape allows: a refusal is the harness's error, not the backend's. */
        <T> T reference(String what, Supplier<T> call) {
            try {
                return call.get();
            } catch (MtpException e) {
                throw new IllegalStateException("loop chain: the reference refused a " + what + " that the loop's "
                        + "shape allows, at action " + index + ": " + e.getMessage(), e);
            }
        }

        void target(TargetDivergence d) {
            if (divergence == null && d != null) {
                divergence = LoopDivergence.of(d, index);
            }
        }

        void drafter(Divergence d) {
            if (divergence == null && d != null) {
                divergence = LoopDivergence.of(d, index);
            }
        }

        int[][] argmaxes(HostTensor logits) {
            int b = logits.dim(0);
            int n = logits.dim(1);
            float[] l = logits.toFloatArray();
            int[][] out = new int[b][n];
            for (int r = 0; r < b; r++) {
                for (int p = 0; p < n; p++) {
                    out[r][p] = TargetJudge.argmax(l, (r * n + p) * vocab, vocab);
                }
            }
            return out;
        }
    }

    /**
     * The drafter's profile in a loop: a drafter row retains its own target's tap (spec §5.8), which in lockstep with
     * the reference's may differ as far as the target's taps may, so its retained hidden is held to the target's tap
     * bound ({@link TargetTolerance#outputNmse()}) where the profile's own hidden bound is tighter (f32: a copy, 0).
     */
    static Tolerance drafterTolerance(Tolerance t) {
        double hidden = Math.max(t.hiddenNmse(), TargetTolerance.of(t).outputNmse());
        return hidden == t.hiddenNmse() ? t : new Tolerance(t.name(), t.tokenGap(), t.kvNmse(), hidden);
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
