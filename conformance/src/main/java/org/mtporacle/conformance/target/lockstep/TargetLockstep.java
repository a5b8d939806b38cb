package org.mtporacle.conformance.target.lockstep;

import org.mtporacle.api.HostTensor;
import org.mtporacle.api.LoadedTarget;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.TargetCheckpoint;
import org.mtporacle.api.TargetConfig;
import org.mtporacle.api.TargetModel;
import org.mtporacle.api.TargetOutput;
import org.mtporacle.api.TargetRouterChoices;
import org.mtporacle.api.TargetRows;
import org.mtporacle.conformance.target.chain.TargetAction;
import org.mtporacle.conformance.target.chain.TargetChainData;
import org.mtporacle.conformance.target.chain.TargetShape;
import org.mtporacle.conformance.target.lockstep.TargetDivergence.Kind;
import org.mtporacle.reference.target.ReferenceTarget;
import org.mtporacle.reference.target.ReferenceTargetRows;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import java.util.function.Function;

/**
 * Drives a backend's target rows (the subject) and the reference target's (the oracle) through the same chain, action
 * by action, and stops at the first divergence (spec §13.3): every forward's logits tie-aware and by NMSE, both taps
 * by NMSE, every warm row's state after every change (through the backend's {@link TargetStateExport} in the layout
 * it declares, else through capture), every capture's checkpoint, and errors by kind with both sides' rows
 */
public final class TargetLockstep {
    private final ReferenceTarget oracle;
    private final LoadedTarget subject;
    private final TargetTolerance tolerance;
    private final TargetModel model;
    private final int vocab;
    private java.util.function.DoubleConsumer routerGapSink;

    public TargetLockstep(ReferenceTarget oracle, LoadedTarget subject, TargetTolerance tolerance) {
        this.oracle = oracle;
        this.subject = subject;
        this.tolerance = tolerance;
        this.model = oracle.model();
        this.vocab = model.config().shape().vocabSize();
    }

    public TargetTolerance tolerance() {
        return tolerance;
    }

    /** Sends every accepted router near-tie's gap of the chains run from now on to {@code sink} (null: none). */
    public void recordRouterGaps(java.util.function.DoubleConsumer sink) {
        this.routerGapSink = sink;
    }

    /** The reference target the backend is judged against. */
    public ReferenceTarget oracle() {
        return oracle;
    }

    /** Runs {@code chain}; {@code seed} is only recorded in the outcome. */
    public TargetChainOutcome run(long seed, List<TargetAction> chain) {
        Run r = new Run();
        r.judge.recordRouterGaps(routerGapSink);
        try (ReferenceTargetRows o = oracle.openReferenceRows(List.of());
             TargetRows s = subject.openRows(List.of())) {
            r.oracle = o;
            r.subject = s;
            for (int i = 0; i < chain.size() && r.divergence == null; i++) {
                r.index = i;
                r.step(chain.get(i));
                r.executed = i + 1;
            }
        } catch (MtpException e) {
            if (r.divergence == null) {
                r.divergence = TargetJudge.of(Kind.CONTRACT, -1, -1, "opening or closing a group threw " + e)
                        .at(r.index);
            }
        }
        if (r.divergence == null) { // the chain's typical NMSE, once it ran whole
            TargetDivergence d = r.judge.typical("the chain's " + r.executed + " actions");
            r.divergence = d == null ? null : d.at(Math.max(0, r.executed - 1));
        }
        return new TargetChainOutcome(seed, chain, r.executed, r.divergence, r.judge.counts(), r.badCalls,
                r.skippedBad, r.matchedAccepts, r.judge.routerTally());
    }

    private final class Run {
        ReferenceTargetRows oracle;
        TargetRows subject;
        TargetShape shape = TargetShape.empty();
        final List<TargetCheckpoint[]> pool = new ArrayList<>(); // {oracle's, subject's}
        final TargetJudge judge = new TargetJudge(tolerance);
        TargetDivergence divergence;
        int[][] verified;      // the open round's tokens [B][W]
        int[][] greedy;        // the reference's greedy token at each verified position [B][W]
        int index;
        boolean expectFailure;
        int executed;
        int badCalls;
        int skippedBad;
        final long[] matchedAccepts = new long[org.mtporacle.api.TargetContract.MAX_WIDTH];

        void step(TargetAction action) {
            TargetShape before = shape;
            expectFailure = action instanceof TargetAction.Bad;
            boolean ok = switch (action) {
                case TargetAction.Append a -> append(a);
                case TargetAction.Filter f ->
                        both(g -> g.filterRows(TargetChainData.keep(f.seed(), before.rows(), f.keepAll())));
                case TargetAction.Prefill p -> forward("prefill",
                        TargetChainData.tokens(p.seed(), before.rows(), p.length(), vocab), TargetRows::prefill);
                case TargetAction.Verify v -> verify(v);
                case TargetAction.Commit c -> {
                    int[] acc = !before.roundOpen() || verified == null ? new int[before.rows()]
                            : TargetChainData.accepted(c, before.rows(), before.width(),
                            TargetChainData.matched(verified, greedy));
                    boolean done = both(g -> g.commit(acc));
                    if (done && c.acceptance() == TargetAction.Acceptance.MATCHED) {
                        for (int a : acc) {
                            matchedAccepts[a]++;
                        }
                    }
                    yield done;
                }
                case TargetAction.Capture c -> capture(c);
                case TargetAction.Bad b -> bad(b);
            };
            if (divergence == null && ok) {
                shape = before.next(action);
                if (!(action instanceof TargetAction.Capture)) {
                    compareRows();
                }
            }
        }

        /** Runs {@code call} on both sides: true when both succeeded, false when both failed alike. */
        boolean both(Consumer<TargetRows> call) {
            return both(g -> {
                call.accept(g);
                return null;
            }, (o, s) -> { });
        }

        <T> boolean both(Function<TargetRows, T> call, java.util.function.BiConsumer<T, T> compare) {
            return both(null, call, compare);
        }

        /**
         * Runs {@code call} on both sides and compares the results. For a forward ({@code routed} names it) of a
         * backend that reports its MoE router choices, the backend runs first and the reference continues on its
         * experts (spec §12.5, {@link TargetRouterFollow}).
         */
        <T> boolean both(String routed, Function<TargetRows, T> call, java.util.function.BiConsumer<T, T> compare) {
            List<TargetCheckpoint> oBefore = beforeFailure(oracle);
            List<TargetCheckpoint> sBefore = beforeFailure(subject);
            Object[] results = new Object[2];
            RuntimeException oe;
            RuntimeException se;
            if (routed != null && subject instanceof TargetRouterChoices rc) {
                se = attempt(() -> results[1] = call.apply(subject));
                TargetRouterFollow follow = se == null ? TargetRouterFollow.arm(routed, oracle, rc, judge,
                        () -> divergence != null, this::diverge) : null;
                oe = attempt(() -> results[0] = call.apply(oracle));
                if (follow != null && oe == null) {
                    follow.finish();
                }
                if (divergence != null) {
                    return false;
                }
            } else {
                oe = attempt(() -> results[0] = call.apply(oracle));
                se = attempt(() -> results[1] = call.apply(subject));
            }
            if (!compareOutcome(oe, se, oBefore, sBefore)) {
                return false;
            }
            @SuppressWarnings("unchecked")
            T o = (T) results[0];
            @SuppressWarnings("unchecked")
            T s = (T) results[1];
            compare.accept(o, s);
            return divergence == null;
        }

        boolean compareOutcome(RuntimeException oe, RuntimeException se, List<TargetCheckpoint> oBefore,
                               List<TargetCheckpoint> sBefore) {
            if (oe != null && !(oe instanceof MtpException)) {
                throw new IllegalStateException("the reference threw a non-contract exception", oe);
            }
            TargetDivergence d = judge.outcome((MtpException) oe, se);
            if (d != null || oe == null) {
                diverge(d);
                return d == null;
            }
            checkUnchanged("reference", oracle, oBefore);
            checkUnchanged("backend", subject, sBefore);
            return false;
        }

        void checkUnchanged(String side, TargetRows g, List<TargetCheckpoint> before) {
            if (divergence != null || before == null) {
                return;
            }
            int rows = attemptInt(g::rowCount);
            boolean same = rows == shape.rows();
            List<TargetCheckpoint> after = same ? captureAll(g) : List.of();
            for (int r = 0; same && r < before.size(); r++) {
                TargetCheckpoint a = before.get(r);
                TargetCheckpoint b = r < after.size() ? after.get(r) : null;
                same = a == null ? b == null : a.contentEquals(b);
            }
            if (!same) {
                if (side.equals("reference")) {
                    throw new IllegalStateException("the reference changed its rows in a failed call at action "
                            + index);
                }
                diverge(TargetJudge.of(Kind.STATE_AFTER_FAILURE, -1, -1, "a failed call changed the backend's rows ("
                        + shape.rows() + " rows before, " + rows + " after, or a row's checkpoint)"));
            }
        }

        boolean append(TargetAction.Append a) {
            List<TargetCheckpoint> o = new ArrayList<>();
            List<TargetCheckpoint> s = new ArrayList<>();
            for (int slot : a.slots()) {
                if (slot < 0 || pool.isEmpty()) {
                    o.add(null);
                    s.add(null);
                } else {
                    TargetCheckpoint[] pair = pool.get(slot % pool.size());
                    o.add(pair[0]);
                    s.add(pair[1]);
                }
            }
            List<TargetCheckpoint> oBefore = beforeFailure(oracle);
            List<TargetCheckpoint> sBefore = beforeFailure(subject);
            RuntimeException oe = attempt(() -> oracle.append(o));
            RuntimeException se = attempt(() -> subject.append(s));
            return compareOutcome(oe, se, oBefore, sBefore);
        }

        boolean forward(String what, HostTensor tokens, java.util.function.BiFunction<TargetRows, HostTensor,
                TargetOutput> call) {
            return both(what, g -> call.apply(g, tokens), (o, s) -> {
                if (s == null) {
                    diverge(TargetJudge.of(Kind.CONTRACT, -1, -1, what + " returned null"));
                    return;
                }
                diverge(judge.logits(what, o.logits(), s.logits()));
                if (divergence == null) {
                    diverge(judge.taps(what, "pre-norm", o.preNorm(), s.preNorm()));
                }
                if (divergence == null) {
                    diverge(judge.taps(what, "post-norm", o.postNorm(), s.postNorm()));
                }
            });
        }

        boolean verify(TargetAction.Verify v) {
            int b = shape.rows();
            int[][] tokens = shape.canVerify()
                    ? TargetChainData.verify(v, b, vocab, this::continuation)
                    : new int[b][v.depth() + 1];
            TargetOutput[] oracleOut = new TargetOutput[1];
            boolean ok = forward("verify", HostTensor.ofIntRows(tokens), (g, t) -> {
                TargetOutput out = g.verify(t);
                if (g == oracle) {
                    oracleOut[0] = out;
                }
                return out;
            });
            if (ok) {
                verified = tokens;
                greedy = argmaxes(oracleOut[0].logits());
            }
            return ok;
        }

        /** The reference's greedy continuation of row {@code row} after {@code pending}, on a scratch copy. */
        int[] continuation(int row, int pending, int n) {
            int[] out = new int[n];
            try (TargetRows one = scratch(oracle.capture(row))) {
                int next = pending;
                for (int i = 0; i < n; i++) {
                    TargetOutput o = one.prefill(HostTensor.ofInts(new int[] {next}, 1, 1));
                    next = TargetJudge.argmax(o.logits().toFloatArray(), 0, vocab);
                    out[i] = next;
                }
            }
            return out;
        }

        boolean capture(TargetAction.Capture c) {
            int row = TargetChainData.captureRow(c.seed(), shape);
            if (row < 0) {
                return false;
            }
            TargetCheckpoint[] pair = new TargetCheckpoint[2];
            RuntimeException oe = attempt(() -> pair[0] = oracle.capture(row));
            RuntimeException se = attempt(() -> pair[1] = subject.capture(row));
            if (!compareOutcome(oe, se, List.of(), List.of())) {
                return false;
            }
            if (pair[1] == null) {
                diverge(TargetJudge.of(Kind.CONTRACT, row, -1, "capture returned null"));
                return false;
            }
            diverge(judge.state(row, "checkpoint of row " + row, TargetJudge.RowState.of(pair[0]),
                    TargetJudge.RowState.of(pair[1])));
            pool.add(pair);
            return divergence == null;
        }

        boolean bad(TargetAction.Bad b) {
            if (!b.call().appliesTo(shape)) {
                skippedBad++;
                return false;
            }
            badCalls++;
            List<TargetCheckpoint> oBefore = captureAll(oracle);
            List<TargetCheckpoint> sBefore = captureAll(subject);
            RuntimeException oe = attempt(() -> b.call().invoke(oracle, model, shape, b.seed()));
            RuntimeException se = attempt(() -> b.call().invoke(subject, model, shape, b.seed()));
            if (oe == null || oe instanceof MtpException m && m.kind() != b.call().expectedKind()) {
                throw new IllegalStateException("the reference answers " + b.call() + " with "
                        + (oe == null ? "success" : ((MtpException) oe).kind()) + ", the catalogue expects "
                        + b.call().expectedKind(), oe);
            }
            compareOutcome(oe, se, oBefore, sBefore);
            return false;
        }

        /** Every warm row's state, after a state change (none during a round: the state is the round's). */
        void compareRows() {
            diverge(judge.rowCount(oracle.rowCount(), attemptInt(subject::rowCount)));
            if (divergence != null || shape.roundOpen()) {
                return;
            }
            TargetConfig c = model.config();
            for (int r = 0; r < shape.rows() && divergence == null; r++) {
                if (!shape.warm(r)) {
                    continue;
                }
                int row = r;
                TargetCheckpoint expected = oracle.capture(row);
                TargetJudge.RowState[] actual = new TargetJudge.RowState[1];
                String how;
                RuntimeException se;
                if (subject instanceof TargetStateExport ex) {
                    how = "row " + row + " (" + ex.stateLayout().describe() + " as declared)";
                    se = attempt(() -> actual[0] = TargetJudge.RowState.of(ex.nativeState(row), ex.stateLayout(), c));
                } else {
                    how = "row " + row + " (captured)";
                    se = attempt(() -> actual[0] = TargetJudge.RowState.of(subject.capture(row)));
                }
                if (se != null) {
                    diverge(TargetJudge.of(Kind.UNEXPECTED_ERROR, row, -1, how + " cannot be read: " + se));
                    return;
                }
                diverge(judge.state(row, how, TargetJudge.RowState.of(expected), actual[0]));
            }
        }

        /**
         * The rows before a call that may fail: captured for bad calls, whose failure must leave them unchanged; a
         * valid action that both sides refuse alike (a shrunk chain's leftover) is not checked, which keeps chains
         * cheap.
         */
        List<TargetCheckpoint> beforeFailure(TargetRows g) {
            return expectFailure ? captureAll(g) : null;
        }

        List<TargetCheckpoint> captureAll(TargetRows g) {
            List<TargetCheckpoint> out = new ArrayList<>();
            if (shape.roundOpen()) {
                return out;
            }
            for (int r = 0; r < shape.rows(); r++) {
                int row = r;
                TargetCheckpoint[] c = new TargetCheckpoint[1];
                attempt(() -> c[0] = shape.warm(row) ? g.capture(row) : null);
                out.add(c[0]);
            }
            return out;
        }

        /** Keeps the first divergence, placed at the current action. */
        void diverge(TargetDivergence d) {
            if (divergence == null && d != null) {
                divergence = d.at(index);
            }
        }
    }

    /** A reference group of one row restored from {@code row}: a scratch copy the chain never sees. */
    private TargetRows scratch(TargetCheckpoint row) {
        return oracle.openRows(List.of(row));
    }

    private int[][] argmaxes(HostTensor logits) {
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

    private static int attemptInt(java.util.function.IntSupplier s) {
        try {
            return s.getAsInt();
        } catch (RuntimeException e) {
            return -1;
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
