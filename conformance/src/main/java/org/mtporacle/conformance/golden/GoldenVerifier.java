package org.mtporacle.conformance.golden;

import org.mtporacle.api.DraftModel;
import org.mtporacle.api.DraftRows;
import org.mtporacle.api.DraftSampling;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.RowCheckpoint;
import org.mtporacle.api.RowSampler;
import org.mtporacle.api.Tolerance;
import org.mtporacle.conformance.compare.Divergence;
import org.mtporacle.conformance.compare.Judge;
import org.mtporacle.conformance.compare.NearTie;
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
 * checkpoints match by NMSE against the stored tensors, and by digest under an exact profile. Before any replay the
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
                         int digestOnly, int offPath) {
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
        GoldenChecks.check(golden, reference.model().identity(), reference.model().config());
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
                c.comparedCheckpoints(), digestOnly, offPathSkips);
    }

    private void run(Step s, Side ref, ReferenceDraftRows refRows, Side sub) {
        if (s instanceof GoldenTrace.Draft d) {
            draft(d, ref, refRows, sub);
            return;
        }
        for (Side side : sub == null ? List.of(ref) : List.of(ref, sub)) {
            RuntimeException e = attempt(() -> call(s, side));
            if (outcome(side, s.expect(), e)) {
                after(s, side);
            }
        }
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
        if (!outcome(ref, x, e)) {
            if (sub != null) {
                outcome(sub, x, attempt(() -> sub.rows.draft(d.pending(), d.depth(), d.steps(), sampling)));
            }
            return;
        }
        if (sub == null) {
            return;
        }
        int[][][] theirs = new int[1][][];
        RuntimeException se = attempt(() -> theirs[0] = sub.rows.draft(d.pending(), d.depth(), d.steps(), sampling));
        if (!outcome(sub, x, se)) {
            return;
        }
        Divergence malformed = judge.draftResult(theirs[0], b, d.depth());
        if (malformed != null) {
            find(sub, malformed);
            return;
        }
        for (int r = 0; r < b; r++) {
            for (int p = 0; p < d.depth(); p++) {
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
