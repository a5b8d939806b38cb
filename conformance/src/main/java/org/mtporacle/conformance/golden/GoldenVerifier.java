package org.mtporacle.conformance.golden;

import org.mtporacle.api.DraftModel;
import org.mtporacle.api.DraftRows;
import org.mtporacle.api.DraftSampling;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.RouterChoices;
import org.mtporacle.api.RowCheckpoint;
import org.mtporacle.api.RowSampler;
import org.mtporacle.api.Tolerance;
import org.mtporacle.conformance.compare.Divergence;
import org.mtporacle.conformance.compare.Judge;
import org.mtporacle.conformance.compare.NearTie;
import org.mtporacle.conformance.compare.RouterNearTie;
import org.mtporacle.conformance.compare.RouterTally;
import org.mtporacle.conformance.golden.GoldenFiles.Golden;
import org.mtporacle.conformance.golden.GoldenTrace.Expect;
import org.mtporacle.conformance.golden.GoldenTrace.RowState;
import org.mtporacle.conformance.golden.GoldenTrace.Source;
import org.mtporacle.conformance.golden.GoldenTrace.Step;
import org.mtporacle.reference.ReferenceDraftModel;
import org.mtporacle.reference.ReferenceDraftRows;
import org.mtporacle.reference.sampling.DraftSampler;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Replays a golden trace's inputs and checks the observables with the conformance kit's rules (DESIGN "Numerics
 * policy"), every comparison through one {@link Judge}: the reference always replays, following the golden's draft
 * tokens so later positions stay comparable; a token that differs from the reference's own choice passes only as a
 * near-tie ({@link NearTie}); the golden's log-probs and top-2 gaps must match the reference's within the token gap;
 * checkpoints match by NMSE against the stored tensors, and by digest under an exact profile; on a MoE model the
 * router's recorded experts are judged like tokens (a router near-tie, {@code RouterNearTie}) and the reference
 * continues on them. Before any replay the
 * trace's structure is checked ({@link GoldenChecks}): a missing or misplaced observable is MALFORMED_FILE.
 *
 * <p>With a subject backend, the subject replays the same inputs beside the reference and its observables are held to
 * the golden, the reference's log-probs at the golden's path judging its near-ties. A subject row that takes a
 * near-tie leaves the golden's path; its later observables are not compared (counted in {@link Result#offPath()}).
 */
public final class GoldenVerifier {

    /** What verification found: the divergences (at most one step's), and what was compared. */
    public record Result(String name, String subject, Tolerance tolerance, int steps, int stepsRun, List<String> lines,
                         List<Divergence> findings, long comparedTokens, long nearTies, long comparedCheckpoints,
                         int digestOnly, int offPath, RouterTally router) {
        public boolean ok() {
            return findings.isEmpty() && stepsRun == steps;
        }
    }

    /** Called after every step. */
    @FunctionalInterface
    public interface Progress {
        void stepDone(int done, int total);
    }

    private final Golden golden;
    private final Judge judge;
    private final int vocab;
    private final List<Divergence> findings = new ArrayList<>();
    /** The reference's router probabilities at each (row, position) of the current step (MoE). */
    private final Map<Long, float[]> refProbs = new HashMap<>();
    private int digestOnly;
    private int offPathSkips;
    private int step;

    private GoldenVerifier(Golden golden, Tolerance tol, int vocab) {
        this.golden = golden;
        this.vocab = vocab;
        this.judge = new Judge(tol, vocab, "the golden");
    }

    /** One side of the replay: its group, what it captured, and (for the subject) which rows left the path. */
    private static final class Side {
        final String label;
        final DraftRows rows;
        final Map<String, RowCheckpoint> captures = new HashMap<>();
        final Map<String, Boolean> captureOffPath = new HashMap<>();
        List<Boolean> offPath = new ArrayList<>();

        Side(String label, DraftRows rows) {
            this.label = label;
            this.rows = rows;
        }
    }

    /**
     * Replays {@code golden} on {@code reference} (loaded with the golden's model) and, when not null, on
     * {@code subject}; stops after the first step with a finding.
     *
     * @throws MtpException MALFORMED_FILE naming the step and field when the trace lacks an observable it must
     *                      record, carries one verification cannot check, or disagrees with its own model or tensors
     */
    public static Result verify(Golden golden, ReferenceDraftModel reference, DraftModel subject, Tolerance tol,
                                Progress progress) {
        GoldenChecks.check(golden, reference.model().identity(), reference.model().config(),
                reference.model().weights().mlp());
        return new GoldenVerifier(golden, tol, reference.model().config().vocabSize()).run(reference, subject,
                progress);
    }

    private Result run(ReferenceDraftModel reference, DraftModel subject, Progress progress) {
        List<Step> steps = golden.trace().steps();
        List<String> lines = new ArrayList<>();
        int run = 0;
        try (ReferenceDraftRows refRows = reference.openReferenceRows(List.of());
             DraftRows subRows = subject == null ? null : subject.openRows(List.of())) {
            Side ref = new Side("reference", refRows);
            Side sub = subRows == null ? null : new Side("backend", subRows);
            for (step = 0; step < steps.size(); step++) {
                Step s = steps.get(step);
                int before = findings.size();
                run(s, ref, refRows, sub);
                run++;
                boolean ok = findings.size() == before;
                lines.add(String.format(Locale.ROOT, "%3d %s %s%s", step, ok ? "ok  " : "FAIL", s.describe(),
                        s.expect().error() == null ? "" : " → " + s.expect().error()));
                progress.stepDone(step + 1, steps.size());
                if (!ok) {
                    break;
                }
            }
        }
        Judge.Counts c = judge.counts();
        return new Result(golden.trace().name(), subject == null ? "reference" : "reference + subject",
                judge.tolerance(), steps.size(), run, lines, List.copyOf(findings), c.comparedTokens(), c.nearTies(),
                c.comparedCheckpoints(), digestOnly, offPathSkips, judge.routerTally());
    }

    private void run(Step s, Side ref, ReferenceDraftRows refRows, Side sub) {
        if (s instanceof GoldenTrace.Draft d) {
            draft(d, ref, refRows, sub);
            return;
        }
        armRouter(refRows, s.expect());
        for (Side side : sub == null ? List.of(ref) : List.of(ref, sub)) {
            RuntimeException e = attempt(() -> call(s, side));
            List<RouterChoices.Choice> routed = routed(side); // before after(), whose captures are calls too
            if (outcome(side, s.expect(), e)) {
                routerChoices(side, side == ref, s.expect(), routed);
                after(s, side);
            }
        }
    }

    /** The router choices a side reported for its last call (none when it does not report them). */
    private static List<RouterChoices.Choice> routed(Side side) {
        return side.rows instanceof RouterChoices rc ? rc.lastRouterChoices() : List.of();
    }

    private static long key(int row, int position) {
        return ((long) row << 32) | (position & 0xffffffffL);
    }

    /** The golden's router choices of one step by (row, position); empty when it records none. */
    private static Map<Long, int[]> goldenExperts(Expect x) {
        Map<Long, int[]> out = new HashMap<>();
        if (x.experts() != null) {
            for (int r = 0; r < x.experts().length; r++) {
                for (int[] entry : x.experts()[r]) {
                    out.put(key(r, entry[0]), Arrays.copyOfRange(entry, 1, entry.length));
                }
            }
        }
        return out;
    }

    /**
     * When the step records router choices: the reference's next call judges its own experts against the golden's
     * at each (row, position), tie-aware (under an exact profile also in slot order, spec §12.3), and continues on
     * the golden's, so later observables stay comparable; its probabilities are kept to judge the subject's choices.
     */
    private void armRouter(ReferenceDraftRows refRows, Expect x) {
        refProbs.clear();
        if (x.experts() == null) {
            return;
        }
        Map<Long, int[]> golden = goldenExperts(x);
        refRows.chooseExpertsNextCall((row, pos, probs, ours) -> {
            refProbs.put(key(row, pos), probs.clone());
            int[] g = golden.get(key(row, pos));
            if (g == null) {
                return ours; // reported as uncovered after the call
            }
            Divergence d = judge.routerChoice(row, pos, probs, ours, g, "the golden has");
            if (d == null && judge.tolerance().exact() && !Arrays.equals(ours, g)) {
                d = new Divergence(Divergence.Kind.ROUTER_CHOICE, -1, null, row, pos, Divergence.ValueEvidence.of(
                        "experts", Arrays.toString(ours), Arrays.toString(g)), "row " + row + " position " + pos
                        + ": the golden has experts " + Arrays.toString(g) + ", the reference chooses "
                        + Arrays.toString(ours) + " (exact profile: the same experts in the same slot order, spec "
                        + "§12.3)");
            }
            if (d != null) {
                findings.add(d.at(step, "reference"));
                return ours;
            }
            return g;
        });
    }

    /**
     * After a successful computing call of a step that records router choices: the reference must have routed
     * exactly the (row, position) pairs the golden records (its own choices were judged as it ran); a subject that
     * reports its choices is held to the golden's, judged by the reference's probabilities, and a row that takes a
     * router near-tie leaves the golden's path.
     */
    private void routerChoices(Side side, boolean isReference, Expect x, List<RouterChoices.Choice> routed) {
        if (x.experts() == null) {
            return;
        }
        Map<Long, int[]> golden = goldenExperts(x);
        if (isReference) {
            java.util.Set<Long> seen = new java.util.HashSet<>();
            for (RouterChoices.Choice c : routed) {
                seen.add(key(c.row(), c.position()));
                if (!golden.containsKey(key(c.row(), c.position()))) {
                    find(side, coverage(c.row(), c.position(), "the reference routed row " + c.row() + " position "
                            + c.position() + ", for which the golden records no experts"));
                    return;
                }
            }
            for (int r = 0; r < x.experts().length; r++) {
                for (int[] entry : x.experts()[r]) {
                    if (!seen.contains(key(r, entry[0]))) {
                        find(side, coverage(r, entry[0], "the golden records experts for row " + r + " position "
                                + entry[0] + ", where the reference ran no MoE forward"));
                        return;
                    }
                }
            }
            return;
        }
        List<List<RouterChoices.Choice>> byRow = subjectChoices(side, routed);
        for (int r = 0; r < byRow.size(); r++) {
            for (RouterChoices.Choice c : byRow.get(r)) {
                subjectChoice(side, c, golden);
            }
        }
    }

    /** A subject's reported choices by row (rows it does not have are ignored), each in position order. */
    private static List<List<RouterChoices.Choice>> subjectChoices(Side side, List<RouterChoices.Choice> routed) {
        List<List<RouterChoices.Choice>> byRow = new ArrayList<>();
        for (int r = 0; r < side.offPath.size(); r++) {
            byRow.add(new ArrayList<>());
        }
        for (RouterChoices.Choice c : routed) {
            if (c.row() >= 0 && c.row() < byRow.size()) {
                byRow.get(c.row()).add(c);
            }
        }
        for (List<RouterChoices.Choice> row : byRow) {
            row.sort(java.util.Comparator.comparingInt(RouterChoices.Choice::position));
        }
        return byRow;
    }

    /**
     * One subject choice against the golden's at its (row, position), judged by the reference's probabilities there;
     * a router near-tie takes the row off the golden's path. A forward row the golden does not record is compared on
     * its outputs only.
     */
    private void subjectChoice(Side side, RouterChoices.Choice c, Map<Long, int[]> golden) {
        int[] g = golden.get(key(c.row(), c.position()));
        float[] probs = refProbs.get(key(c.row(), c.position()));
        if (g == null || probs == null) {
            return;
        }
        if (side.offPath.get(c.row())) {
            offPathSkips++;
            return;
        }
        Divergence d = judge.routerChoice(c.row(), c.position(), probs, g, c.experts(), "the backend chose");
        if (d != null) {
            find(side, d);
        } else if (!RouterNearTie.sameSet(g, c.experts())) {
            side.offPath.set(c.row(), true); // a router near-tie: later observables follow other experts
        }
    }

    private static Divergence coverage(int row, int position, String message) {
        return new Divergence(Divergence.Kind.ROUTER_CHOICE, -1, null, row, position, Divergence.ValueEvidence.of(
                "experts", "recorded", "not recorded"), "row " + row + " position " + position + ": " + message);
    }

    private void call(Step s, Side side) {
        switch (s) {
            case GoldenTrace.Append a -> {
                List<RowCheckpoint> cps = new ArrayList<>();
                List<Boolean> off = new ArrayList<>();
                for (Source src : a.rows()) {
                    cps.add(src.checkpoint() == null ? null : source(src, side));
                    off.add(src.checkpoint() != null && !src.fromFile()
                            && side.captureOffPath.getOrDefault(src.checkpoint(), false));
                }
                side.rows.append(cps);
                side.offPath.addAll(off);
            }
            case GoldenTrace.Filter f -> {
                side.rows.filterRows(f.keep());
                List<Boolean> off = new ArrayList<>();
                for (int r : f.keep()) {
                    off.add(side.offPath.get(r));
                }
                side.offPath = off;
            }
            case GoldenTrace.Prefill p -> side.rows.prefill(HostTensor.ofIntRows(p.tokens()),
                    golden.tensor(p.context(), "steps[" + step + "].context"));
            case GoldenTrace.Commit c -> side.rows.commit(c.accepted(),
                    golden.tensor(c.context(), "steps[" + step + "].context"));
            case GoldenTrace.Capture c -> {
                RowCheckpoint cp = side.rows.capture(c.row());
                side.captures.put(c.id(), cp);
                side.captureOffPath.put(c.id(), side.offPath.get(c.row()));
            }
            case GoldenTrace.Draft d -> throw new IllegalStateException("draft is replayed separately");
        }
    }

    /** The checkpoint a restored row starts from: the side's own capture, or the tensors stored in the golden. */
    private RowCheckpoint source(Source src, Side side) {
        if (!src.fromFile()) {
            RowCheckpoint cp = side.captures.get(src.checkpoint());
            if (cp == null) {
                throw MtpException.malformedFile("golden " + golden.file() + ": steps[" + step + "] appends checkpoint '"
                        + src.checkpoint() + "', which no earlier capture step produced on the " + side.label);
            }
            return cp;
        }
        GoldenTrace.Capture c = null;
        for (int i = 0; i < step; i++) {
            if (golden.trace().steps().get(i) instanceof GoldenTrace.Capture k && k.id().equals(src.checkpoint())
                    && k.expect().checkpoint() != null) {
                c = k;
            }
        }
        if (c == null) {
            throw MtpException.malformedFile("golden " + golden.file() + ": steps[" + step + "] appends checkpoint '"
                    + src.checkpoint() + "' from the file, but no earlier capture step stores its tensors");
        }
        return GoldenChecks.stored(golden, c.expect().checkpoint(), "steps[" + step + "] checkpoint " + c.id());
    }

    /** Compares success or failure and the row count with the expectation; true when the call succeeded as expected. */
    private boolean outcome(Side side, Expect x, RuntimeException e) {
        Divergence d = judge.outcome(x.error(), null, e);
        find(side, d);
        if (e != null && !(e instanceof MtpException)) {
            return false;
        }
        Divergence rc = judge.rowCount(x.rowCount(), side.rows.rowCount());
        find(side, rc);
        return rc == null && e == null && x.error() == null;
    }

    private void after(Step s, Side side) {
        Expect x = s.expect();
        if (x.rows() != null) {
            for (int r = 0; r < x.rows().size(); r++) {
                RowState exp = x.rows().get(r);
                if (side.offPath.get(r)) {
                    offPathSkips++;
                    continue;
                }
                RowCheckpoint cp;
                try {
                    cp = side.rows.capture(r);
                } catch (MtpException e) {
                    cp = null;
                }
                Divergence d = judge.presence(r, "row " + r, exp != null, cp);
                find(side, d);
                if (d == null && exp != null) {
                    checkpoint(side, r, "row " + r, exp, cp);
                }
            }
        }
        if (s instanceof GoldenTrace.Capture c && x.checkpoint() != null && !side.offPath.get(c.row())) {
            checkpoint(side, c.row(), "capture " + c.id() + " of row " + c.row(), x.checkpoint(),
                    side.captures.get(c.id()));
        }
    }

    /** A row state: against the stored tensors when the golden holds them (and the digest when exact), else P,
     *  draft offset and, under an exact profile, the digest. */
    private void checkpoint(Side side, int row, String what, RowState exp, RowCheckpoint cp) {
        String digest = CheckpointDigest.of(cp);
        if (exp.tensors() == null) {
            Divergence d = judge.digestOnly(row, what, exp.processedTokens(), exp.draftOffset(), exp.sha256(), cp,
                    digest);
            find(side, d);
            if (d == null && !judge.tolerance().exact() && !digest.equals(exp.sha256())) {
                digestOnly++;
            }
            return;
        }
        RowCheckpoint expected = GoldenChecks.stored(golden, exp, "steps[" + step + "] " + what);
        Divergence d = judge.checkpoint(row, what, expected, cp);
        if (d == null && judge.tolerance().exact()) {
            d = judge.digest(row, what, exp.sha256(), digest, "though the stored tensors match");
        }
        find(side, d);
    }

    private void draft(GoldenTrace.Draft d, Side ref, ReferenceDraftRows refRows, Side sub) {
        Expect x = d.expect();
        DraftSampling sampling = new DraftSampling(d.samplers());
        int b = d.pending().length;
        float[][][] lpAt = new float[b][Math.max(0, d.depth())][];
        boolean keep = sub != null && x.tokens() != null;
        armRouter(refRows, x);
        RuntimeException e = attempt(() -> refRows.draft(d.pending(), d.depth(), d.steps(), sampling,
                (row, pos, lp, off, ours) -> {
                    if (x.tokens() == null) {
                        return ours;
                    }
                    if (keep) {
                        lpAt[row][pos] = Arrays.copyOfRange(lp, off, off + vocab);
                    }
                    int golden = x.tokens()[row][pos];
                    tokenFacts(ref, row, pos, lp, off, ours, golden, d.samplers().get(row), d.steps()[row] + pos, x);
                    return golden;
                }));
        List<RouterChoices.Choice> refRouted = routed(ref);
        if (!outcome(ref, x, e)) {
            if (sub != null) {
                outcome(sub, x, attempt(() -> sub.rows.draft(d.pending(), d.depth(), d.steps(), sampling)));
            }
            return;
        }
        routerChoices(ref, true, x, refRouted);
        if (sub == null) {
            return;
        }
        int[][][] theirs = new int[1][][];
        RuntimeException se = attempt(() -> theirs[0] = sub.rows.draft(d.pending(), d.depth(), d.steps(), sampling));
        List<RouterChoices.Choice> subRouted = routed(sub);
        if (!outcome(sub, x, se)) {
            return;
        }
        List<List<RouterChoices.Choice>> subChoices = x.experts() == null ? null : subjectChoices(sub, subRouted);
        Map<Long, int[]> goldenChoices = goldenExperts(x);
        Divergence malformed = judge.draftResult(theirs[0], b, d.depth());
        if (malformed != null) {
            find(sub, malformed);
            return;
        }
        for (int r = 0; r < b; r++) {
            // forward p's experts decide token p's distribution, token p feeds forward p + 1
            int forwards = subChoices == null ? 0 : subChoices.get(r).size();
            for (int p = 0; p < Math.max(d.depth(), forwards); p++) {
                if (p < forwards) {
                    subjectChoice(sub, subChoices.get(r).get(p), goldenChoices);
                }
                if (p >= d.depth()) {
                    continue;
                }
                if (sub.offPath.get(r)) {
                    offPathSkips++;
                    continue;
                }
                int golden = x.tokens()[r][p];
                int their = theirs[0][r][p];
                Divergence t = judge.token(r, p, lpAt[r][p], 0, golden, their, d.samplers().get(r), d.steps()[r] + p,
                        "drafted", "the golden has");
                if (t != null) {
                    find(sub, t);
                } else if (their != golden) {
                    sub.offPath.set(r, true); // a near-tie: later positions and states follow another token
                }
            }
        }
    }

    /** The reference's checks at one position: the golden token against its own choice, then the recorded numbers. */
    private void tokenFacts(Side ref, int row, int pos, float[] lp, int off, int ours, int golden, RowSampler sampler,
                            long stepIndex, Expect x) {
        Divergence d = judge.token(row, pos, lp, off, ours, golden, sampler, stepIndex, "the golden has",
                "the reference drafts");
        if (d == null) {
            d = judge.logprob(row, pos, golden, x.logprobs()[row][pos], lp[off + golden]);
        }
        if (d == null) {
            d = judge.top2Gap(row, pos, x.top2Gaps()[row][pos], DraftSampler.top2Gap(lp, off, vocab));
        }
        find(ref, d);
    }

    private void find(Side side, Divergence d) {
        if (d != null) {
            findings.add(d.at(step, side.label));
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
