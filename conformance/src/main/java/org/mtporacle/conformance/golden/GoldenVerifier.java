package org.mtporacle.conformance.golden;

import org.mtporacle.api.DraftModel;
import org.mtporacle.api.DraftRows;
import org.mtporacle.api.DraftSampling;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.RowCheckpoint;
import org.mtporacle.api.RowSampler;
import org.mtporacle.api.Tolerance;
import org.mtporacle.conformance.golden.GoldenFiles.Golden;
import org.mtporacle.conformance.golden.GoldenTrace.Expect;
import org.mtporacle.conformance.golden.GoldenTrace.RowState;
import org.mtporacle.conformance.golden.GoldenTrace.Source;
import org.mtporacle.conformance.golden.GoldenTrace.Step;
import org.mtporacle.conformance.lockstep.NearTie;
import org.mtporacle.conformance.lockstep.Nmse;
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
 * policy"): the reference always replays, following the golden's draft tokens so later positions stay comparable; a
 * token that differs from the reference's own choice passes only as a near-tie ({@link NearTie}, bounds from
 * {@link Tolerance}); the golden's log-probs and top-2 gaps must match the reference's within the greedy token bound;
 * checkpoints match by digest under the {@code exact} profile, else by NMSE when the golden holds the tensors.
 *
 * <p>With a subject backend, the subject replays the same inputs beside the reference and its observables are held to
 * the golden, the reference's log-probs at the golden's path judging its near-ties. A subject row that takes a
 * near-tie leaves the golden's path; its later observables are not compared (counted in {@link Result#offPath()}).
 */
public final class GoldenVerifier {
    /** A difference the rules do not allow, at a step. */
    public record Finding(int step, String side, String message) {
        @Override
        public String toString() {
            return "step " + step + " (" + side + "): " + message;
        }
    }

    /** What verification found. */
    public record Result(String name, String subject, int steps, int stepsRun, List<String> lines,
                         List<Finding> findings, int comparedTokens, int nearTies, int comparedCheckpoints,
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
    private final Tolerance tol;
    private final String modelIdentity;
    private final int vocab;
    private final List<Finding> findings = new ArrayList<>();
    private int comparedTokens;
    private int nearTies;
    private int comparedCheckpoints;
    private int digestOnly;
    private int offPathSkips;
    private int step;

    private GoldenVerifier(Golden golden, Tolerance tol, String modelIdentity) {
        this.golden = golden;
        this.tol = tol;
        this.modelIdentity = modelIdentity;
        this.vocab = golden.trace().model().config().vocabSize();
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
     */
    public static Result verify(Golden golden, ReferenceDraftModel reference, DraftModel subject, Tolerance tol,
                                Progress progress) {
        return new GoldenVerifier(golden, tol, reference.model().identity()).run(reference, subject, progress);
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
        return new Result(golden.trace().name(), subject == null ? "reference" : "reference + subject",
                steps.size(), run, lines, List.copyOf(findings), comparedTokens, nearTies, comparedCheckpoints,
                digestOnly, offPathSkips);
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
        for (Step s : golden.trace().steps()) {
            if (s instanceof GoldenTrace.Capture c && c.id().equals(src.checkpoint()) && c.expect().checkpoint() != null
                    && c.expect().checkpoint().tensors() != null) {
                RowState st = c.expect().checkpoint();
                String where = "steps[" + step + "] checkpoint " + c.id();
                boolean kv = st.processedTokens() > 1;
                return new RowCheckpoint(RowCheckpoint.SCHEMA, st.processedTokens(), st.draftOffset(), modelIdentity,
                        kv ? golden.tensor(st.tensors() + ".keys", where) : null,
                        kv ? golden.tensor(st.tensors() + ".values", where) : null,
                        golden.tensor(st.tensors() + ".hidden", where));
            }
        }
        throw MtpException.malformedFile("golden " + golden.file() + ": steps[" + step + "] appends checkpoint '"
                + src.checkpoint() + "' from the file, but no capture step stores its tensors");
    }

    /** Compares success or failure with the expectation; true when the call succeeded as expected. */
    private boolean outcome(Side side, Expect x, RuntimeException e) {
        if (e != null && !(e instanceof MtpException)) {
            find(side, "threw " + e + " instead of an MtpException");
            return false;
        }
        String kind = e == null ? null : ((MtpException) e).kind().name();
        if (x.error() == null && kind != null) {
            find(side, "failed with " + kind + " (" + e.getMessage() + "), the golden expects success");
        } else if (x.error() != null && kind == null) {
            find(side, "succeeded, the golden expects " + x.error());
        } else if (x.error() != null && !x.error().equals(kind)) {
            find(side, "failed with " + kind + " (" + e.getMessage() + "), the golden expects " + x.error());
        }
        if (side.rows.rowCount() != x.rowCount()) {
            find(side, "has " + side.rows.rowCount() + " rows, the golden expects " + x.rowCount());
            return false;
        }
        return kind == null && x.error() == null;
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
                if (exp == null && cp != null) {
                    find(side, "row " + r + " has a retained hidden (P=" + cp.processedTokens() + "), the golden "
                            + "expects a cold row");
                } else if (exp != null && cp == null) {
                    find(side, "row " + r + " cannot be captured, the golden expects P=" + exp.processedTokens());
                } else if (exp != null) {
                    checkpoint(side, "row " + r, exp, cp);
                }
            }
        }
        if (s instanceof GoldenTrace.Capture c && x.checkpoint() != null && !side.offPath.get(c.row())) {
            checkpoint(side, "capture " + c.id() + " of row " + c.row(), x.checkpoint(), side.captures.get(c.id()));
        }
    }

    private void checkpoint(Side side, String what, RowState exp, RowCheckpoint cp) {
        comparedCheckpoints++;
        if (cp.processedTokens() != exp.processedTokens() || cp.draftOffset() != exp.draftOffset()) {
            find(side, String.format(Locale.ROOT, "%s: P=%d draftOffset=%d, the golden expects P=%d draftOffset=%d",
                    what, cp.processedTokens(), cp.draftOffset(), exp.processedTokens(), exp.draftOffset()));
            return;
        }
        String digest = CheckpointDigest.of(cp);
        boolean exact = tol.kvNmse() == 0 && tol.hiddenNmse() == 0;
        if (exp.tensors() == null) {
            if (exact && !digest.equals(exp.sha256())) {
                find(side, what + ": checkpoint digest " + digest + ", the golden expects " + exp.sha256()
                        + " (no tensors stored to say where they differ)");
            } else if (!exact) {
                digestOnly++;
            }
            return;
        }
        boolean kv = cp.processedTokens() > 1;
        String where = "steps[" + step + "] " + what;
        int before = findings.size();
        if (kv) {
            nmse(side, what, "keys", cp.keys(), golden.tensor(exp.tensors() + ".keys", where), tol.kvNmse());
            nmse(side, what, "values", cp.values(), golden.tensor(exp.tensors() + ".values", where), tol.kvNmse());
        }
        nmse(side, what, "hidden", cp.hidden(), golden.tensor(exp.tensors() + ".hidden", where), tol.hiddenNmse());
        if (exact && findings.size() == before && !digest.equals(exp.sha256())) {
            find(side, what + ": checkpoint digest " + digest + ", the golden expects " + exp.sha256()
                    + " though the stored tensors match (the digest or the tensors were edited)");
        }
    }

    private void nmse(Side side, String what, String name, HostTensor actual, HostTensor expected, double bound) {
        if (!Arrays.equals(actual.shape(), expected.shape())) {
            find(side, what + ": " + name + " " + actual.describe() + ", the golden holds " + expected.describe());
            return;
        }
        double e = Nmse.of(actual, expected);
        if (!(e <= bound)) {
            find(side, String.format(Locale.ROOT, "%s: %s NMSE %.3g > %.3g (tolerance %s)", what, name, e, bound,
                    tol.name()));
        }
    }

    private void draft(GoldenTrace.Draft d, Side ref, ReferenceDraftRows refRows, Side sub) {
        Expect x = d.expect();
        DraftSampling sampling = new DraftSampling(d.samplers());
        int b = d.pending().length;
        float[][][] lpAt = new float[b][Math.max(0, d.depth())][];
        boolean keep = sub != null && x.tokens() != null;
        RuntimeException e = attempt(() -> refRows.draft(d.pending(), d.depth(), d.steps(), sampling,
                (row, pos, lp, off, ours) -> {
                    if (x.tokens() == null || row >= x.tokens().length || pos >= x.tokens()[row].length) {
                        return ours;
                    }
                    if (keep) {
                        lpAt[row][pos] = Arrays.copyOfRange(lp, off, off + vocab);
                    }
                    int golden = x.tokens()[row][pos];
                    if (golden < 0 || golden >= vocab) {
                        find(ref, "row " + row + " position " + pos + ": golden token " + golden + " outside [0, "
                                + vocab + ")");
                        return ours;
                    }
                    tokenFacts(ref, row, pos, lp, off, ours, golden, d.samplers().get(row),
                            d.steps()[row] + pos, x);
                    return golden;
                }));
        if (!outcome(ref, x, e)) {
            if (sub != null) {
                outcome(sub, x, attempt(() -> sub.rows.draft(d.pending(), d.depth(), d.steps(), sampling)));
            }
            return;
        }
        if (x.tokens() == null || x.tokens().length != b) {
            find(ref, "the golden's tokens do not have one row per draft row (" + b + ")");
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
        for (int r = 0; r < b; r++) {
            for (int p = 0; p < d.depth(); p++) {
                if (sub.offPath.get(r)) {
                    offPathSkips++;
                    continue;
                }
                int golden = x.tokens()[r][p];
                int their = theirs[0][r][p];
                comparedTokens++;
                if (their == golden) {
                    continue;
                }
                RowSampler sampler = d.samplers().get(r);
                double gap = gap(lpAt[r][p], 0, sampler, d.steps()[r] + p, golden, their);
                double bound = tol.tokenGap();
                if (gap <= bound) {
                    nearTies++;
                    sub.offPath.set(r, true); // later positions and states of this row follow another token
                } else {
                    find(sub, tokenMessage(r, p, their, golden, lpAt[r][p], 0, gap, bound, sampler));
                }
            }
        }
    }

    /** The reference's checks at one position: its own choice vs the golden token, and the recorded numbers. */
    private void tokenFacts(Side ref, int row, int pos, float[] lp, int off, int ours, int golden, RowSampler sampler,
                            long stepIndex, Expect x) {
        comparedTokens++;
        if (ours != golden) {
            double gap = gap(lp, off, sampler, stepIndex, ours, golden);
            double bound = tol.tokenGap();
            if (gap <= bound) {
                nearTies++;
            } else {
                find(ref, tokenMessage(row, pos, ours, golden, lp, off, gap, bound, sampler));
                return;
            }
        }
        float lpDiff = Math.abs(lp[off + golden] - x.logprobs()[row][pos]);
        if (!(lpDiff <= tol.tokenGap())) {
            find(ref, String.format(Locale.ROOT, "row %d position %d: log-prob of token %d is %s, the golden says %s "
                    + "(|Δ| %.3g > %.3g)", row, pos, golden, lp[off + golden], x.logprobs()[row][pos], lpDiff,
                    tol.tokenGap()));
            return;
        }
        float g2 = DraftSampler.top2Gap(lp, off, vocab);
        float gapDiff = Math.abs(g2 - x.top2Gaps()[row][pos]);
        if (!(gapDiff <= tol.tokenGap()) && !(g2 == x.top2Gaps()[row][pos])) {
            find(ref, String.format(Locale.ROOT, "row %d position %d: top-2 gap %s, the golden says %s (|Δ| %.3g > "
                    + "%.3g)", row, pos, g2, x.top2Gaps()[row][pos], gapDiff, tol.tokenGap()));
        }
    }

    /** The near-tie distance of {@code theirs} from {@code ours} in the row {@code lp} (NearTie's units). */
    private double gap(float[] lp, int off, RowSampler sampler, long stepIndex, int ours, int theirs) {
        return sampler.isGreedy() ? NearTie.logProbGap(lp, off, ours, theirs)
                : NearTie.seededGap(lp, off, vocab, sampler, stepIndex, theirs);
    }

    private String tokenMessage(int row, int pos, int drafted, int expected, float[] lp, int off, double gap,
                                double bound, RowSampler sampler) {
        return String.format(Locale.ROOT, "row %d position %d: drafted %d, the golden has %d (reference log-probs "
                        + "%.5f vs %.5f, gap %.3g > %.3g %s, sampler %s)", row, pos, drafted, expected,
                lp[off + drafted], lp[off + expected], gap, bound, sampler.isGreedy() ? "greedy" : "seeded",
                sampler);
    }

    private void find(Side side, String message) {
        findings.add(new Finding(step, side.label, message));
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
