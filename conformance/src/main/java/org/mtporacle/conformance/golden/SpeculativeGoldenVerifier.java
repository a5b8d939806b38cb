package org.mtporacle.conformance.golden;

import org.mtporacle.api.DraftModel;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.LoadedTarget;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.RowSampler;
import org.mtporacle.api.TargetOutput;
import org.mtporacle.api.TargetRows;
import org.mtporacle.api.Tolerance;
import org.mtporacle.api.UntrustedText;
import org.mtporacle.conformance.compare.NearTie;
import org.mtporacle.conformance.golden.SpeculativeRun.Round;
import org.mtporacle.conformance.golden.SpeculativeRun.Row;
import org.mtporacle.conformance.golden.SpeculativeRun.State;
import org.mtporacle.conformance.target.lockstep.TargetTolerance;
import org.mtporacle.reference.ReferenceDraftModel;
import org.mtporacle.reference.target.ReferenceTarget;
import org.mtporacle.reference.target.SpeculativeDecoding.Request;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Locale;

/**
 * Checks a speculative-run golden ({@link SpeculativeGolden}): the reference runs the golden's requests through the
 * loop on its scalar target and drafter and must reproduce the golden under the golden's own profile; then, when given,
 * a subject's target and drafter run through the same loop ({@link SpeculativeRun}: the reference's loop driving the
 * subject's rows) and are held to the golden under the subject's profile, and the subject's outputs must equal its own
 * plain decoding (spec §13.4).
 *
 * <p>Per round, per request, while the run is on the golden's path: the depth and the rows' order, the drafted tokens,
 * the accepted count and the emitted tokens, then P of the target and drafter states, and the states themselves:
 * under an exact profile by digest; otherwise by the L2 norm of each state tensor, which bounds the NMSE from below
 * ({@code |‖b‖ − ‖a‖| ≤ ‖b − a‖}, so a norm that differs by more than {@code √stateNmse · ‖a‖} proves an NMSE above
 * the profile's state bound): a necessary check, weaker than the lockstep's NMSE. A token that differs passes only as
 * a near-tie ({@link NearTie}) in the reference's log-probs on the golden's path (the drafter's, recorded in the
 * reference's run; the target's, from a prefill of the prompt and the golden's tokens before it), and never under an
 * exact profile; a near-tie takes the run off the golden's path, and later rounds are not compared (counted). Every
 * request's output is then compared token by token, tie-aware the same way, up to its first near-tie.
 */
public final class SpeculativeGoldenVerifier {
    /** What verification compared and found (at most one finding: it stops at the first). */
    public record Result(String name, String side, String tolerance, int rounds, int roundsCompared, long tokens,
                         long nearTies, long digests, long normStates, int roundsOffPath, List<String> findings) {
        public boolean ok() {
            return findings.isEmpty();
        }
    }

    private final SpeculativeGolden golden;
    private final ReferenceTarget reference;
    private final Tolerance tol;
    private final String side;
    private final List<float[][][]> draftLogprobs;
    private final List<String> findings = new ArrayList<>();
    private long tokens;
    private long nearTies;
    private long digests;
    private long normStates;
    private int compared;

    private SpeculativeGoldenVerifier(SpeculativeGolden golden, ReferenceTarget reference, Tolerance tol, String side,
                                      List<float[][][]> draftLogprobs) {
        this.golden = golden;
        this.reference = reference;
        this.tol = tol;
        this.side = side;
        this.draftLogprobs = draftLogprobs;
    }

    /**
     * Verifies {@code golden} on the reference ({@code target} and {@code drafter} of the golden's model, scalar
     * kernels) under the golden's own profile, then, when {@code subjectTarget} is not null, the subject under
     * {@code tol}. The first result that fails ends the check.
     *
     * @throws MtpException INCOMPATIBLE_MODEL when the models are not the golden's; MALFORMED_FILE when a prompt
     *                      token is outside the vocabulary
     */
    public static List<Result> verify(SpeculativeGolden golden, ReferenceTarget target, ReferenceDraftModel drafter,
                                      LoadedTarget subjectTarget, DraftModel subjectDrafter, Tolerance tol) {
        check(golden, target, drafter);
        SpeculativeRun.Result ref = SpeculativeRun.run(target, drafter, golden.requests(), golden.options());
        SpeculativeGoldenVerifier r = new SpeculativeGoldenVerifier(golden, target,
                Tolerance.named(golden.tolerance()), "reference", ref.logprobs());
        List<Result> out = new ArrayList<>(List.of(r.compare(ref, null)));
        if (subjectTarget == null || !out.getFirst().ok()) {
            return out;
        }
        SpeculativeRun.Result sub;
        List<int[]> plain;
        try {
            sub = SpeculativeRun.run(subjectTarget, subjectDrafter, golden.requests(), golden.options());
            plain = SpeculativeRun.plain(subjectTarget, golden.requests());
        } catch (MtpException e) {
            if (e.kind() == MtpException.Kind.BACKEND_FAILURE) {
                throw e;
            }
            return failed(golden, tol, out.getFirst(), e.getMessage());
        } catch (RuntimeException e) {
            return failed(golden, tol, out.getFirst(), e.toString());
        }
        out.add(new SpeculativeGoldenVerifier(golden, target, tol, "backend", ref.logprobs()).compare(sub, plain));
        return out;
    }

    /** The reference's result and a backend whose loop or plain decoding was refused or threw. */
    private static List<Result> failed(SpeculativeGolden golden, Tolerance tol, Result reference, String why) {
        return List.of(reference, new Result(golden.name(), "backend", tol.describe(), golden.rounds().size(), 0, 0,
                0, 0, 0, 0, List.of("backend: the speculative loop failed: " + why)));
    }

    private static void check(SpeculativeGolden g, ReferenceTarget target, ReferenceDraftModel drafter) {
        if (!target.model().identity().equals(g.targetIdentity())
                || !drafter.model().identity().equals(g.drafterIdentity())) {
            throw MtpException.incompatibleModel("golden " + UntrustedText.quote(g.name()) + ": fixture "
                    + UntrustedText.quote(String.valueOf(g.fixture())) + " has target "
                    + target.model().identity() + " and drafter " + drafter.model().identity() + ", the golden was "
                    + "recorded on " + g.targetIdentity() + " and " + g.drafterIdentity() + " (re-record with `mtp "
                    + "golden record --speculative --fixture " + UntrustedText.clip(String.valueOf(g.fixture()))
                    + "`)");
        }
        if (g.requests().isEmpty()) {
            throw MtpException.malformedFile("golden " + UntrustedText.quote(g.name()) + ": no requests, so nothing "
                    + "to run or compare");
        }
        int vocab = target.model().config().shape().vocabSize();
        for (int q = 0; q < g.requests().size(); q++) {
            inVocabulary(g, "requests[" + q + "].prompt", g.requests().get(q).prompt(), vocab);
            inVocabulary(g, "outputs[" + q + "]", g.outputs().get(q), vocab);
        }
        for (int k = 0; k < g.rounds().size(); k++) {
            for (int i = 0; i < g.rounds().get(k).rows().size(); i++) {
                Row w = g.rounds().get(k).rows().get(i);
                inVocabulary(g, "rounds[" + k + "].rows[" + i + "].drafted", w.drafted(), vocab);
                inVocabulary(g, "rounds[" + k + "].rows[" + i + "].emitted", w.emitted(), vocab);
            }
        }
    }

    private static void inVocabulary(SpeculativeGolden g, String field, int[] tokens, int vocab) {
        for (int t : tokens) {
            if (t >= vocab) {
                throw MtpException.malformedFile("golden " + UntrustedText.quote(g.name()) + ": " + field
                        + " holds token " + t + ", outside the vocabulary [0, " + vocab + ")");
            }
        }
    }

    private Result compare(SpeculativeRun.Result run, List<int[]> plain) {
        int offPath = 0;
        boolean onPath = true;
        for (int k = 0; k < golden.rounds().size() && findings.isEmpty(); k++) {
            if (!onPath) {
                offPath++;
                continue;
            }
            onPath = round(k, golden.rounds().get(k), k < run.rounds().size() ? run.rounds().get(k) : null);
            compared++;
        }
        if (findings.isEmpty() && onPath && run.rounds().size() > golden.rounds().size()) {
            Round extra = run.rounds().get(golden.rounds().size());
            finding("round " + extra.round() + ": the loop ran a round the golden does not have ("
                    + golden.rounds().size() + " rounds)");
        }
        for (int q = 0; q < golden.requests().size() && findings.isEmpty(); q++) {
            output(q, run.outputs().get(q));
        }
        if (plain != null && findings.isEmpty()) {
            plainEqualsSpeculative(run, plain);
        }
        return new Result(golden.name(), side, tol.describe(), golden.rounds().size(), compared, tokens, nearTies,
                digests, normStates, offPath, List.copyOf(findings));
    }

    /** The defining property on the subject's own target: its loop emits its plain decoding's tokens. */
    private void plainEqualsSpeculative(SpeculativeRun.Result run, List<int[]> plain) {
        for (int q = 0; q < plain.size() && findings.isEmpty(); q++) {
            if (!Arrays.equals(plain.get(q), run.outputs().get(q))) {
                finding("request " + q + " (" + how() + "): speculative " + Arrays.toString(run.outputs().get(q))
                        + " != plain " + Arrays.toString(plain.get(q)) + " on the backend's own target, first at "
                        + "token " + Arrays.mismatch(plain.get(q), run.outputs().get(q)) + " (spec §13.4)");
            }
        }
    }

    /** One round; false when a near-tie took the run off the golden's path. */
    private boolean round(int k, Round g, Round r) {
        String where = "round " + g.round();
        if (r == null || r.round() != g.round() || r.rows().size() != g.rows().size()
                || !Arrays.equals(requests(r), requests(g))) {
            finding(where + " (" + how() + "): the loop ran " + (r == null ? "no round" : "round " + r.round()
                    + " with requests " + Arrays.toString(requests(r))) + ", the golden has requests "
                    + Arrays.toString(requests(g)));
            return true;
        }
        if (r.depth() != g.depth()) {
            finding(where + " (" + how() + "): drafted at depth " + r.depth() + ", the golden at " + g.depth());
            return true;
        }
        boolean onPath = true;
        for (int row = 0; row < g.rows().size() && findings.isEmpty(); row++) {
            Row gw = g.rows().get(row);
            Row rw = r.rows().get(row);
            String at = where + ", request " + gw.request() + " (row " + row + ", " + how() + ")";
            Request q = golden.requests().get(gw.request());
            long step = emittedBefore(k, gw.request());
            int p = Arrays.mismatch(gw.drafted(), rw.drafted());
            tokens += p < 0 ? gw.drafted().length : p;
            if (p >= 0) {
                float[] lp = draftLogprobs.get(k)[row][p];
                if (!nearTie(at + ": drafted token " + p, lp, q.sampler(), step + p, gw.drafted()[p],
                        rw.drafted()[p])) {
                    return true;
                }
                onPath = false;
                continue;
            }
            int e = Arrays.mismatch(gw.emitted(), rw.emitted());
            tokens += e < 0 ? gw.emitted().length : e;
            if (e >= 0) {
                if (e < Math.min(gw.emitted().length, rw.emitted().length)) {
                    int index = (int) step + e;
                    if (!nearTie(at + ": emitted token " + e + " (output " + index + ")", targetLogprobs(q,
                            gw.request(), index), q.sampler(), index, gw.emitted()[e], rw.emitted()[e])) {
                        return true;
                    }
                    onPath = false;
                    continue;
                }
                finding(at + ": emitted " + Arrays.toString(rw.emitted()) + ", the golden "
                        + Arrays.toString(gw.emitted()));
                return true;
            }
            if (rw.accepted() != gw.accepted()) {
                finding(at + ": accepted " + rw.accepted() + " of " + g.depth() + " drafts, the golden "
                        + gw.accepted() + " (drafts " + Arrays.toString(gw.drafted()) + ")");
                return true;
            }
            state(at + ": target state", gw.target(), rw.target(), State.TARGET);
            if (findings.isEmpty()) {
                state(at + ": drafter state", gw.drafter(), rw.drafter(), State.DRAFTER);
            }
        }
        return onPath;
    }

    private void state(String at, State g, State r, List<String> names) {
        if (g.processedTokens() != r.processedTokens()) {
            finding(at + " has P = " + r.processedTokens() + ", the golden " + g.processedTokens()
                    + " (a commit kept the wrong number of tokens)");
            return;
        }
        if (tol.exact()) {
            digests++;
            if (!g.sha256().equals(r.sha256())) {
                finding(at + ": digest " + r.sha256().substring(0, 12) + "… != the golden's "
                        + g.sha256().substring(0, 12) + "… at P = " + g.processedTokens() + " (" + tol.name()
                        + " profile: bit-identical; norms " + norms(r, names) + " vs " + norms(g, names) + ")");
            }
            return;
        }
        normStates++;
        double bound = Math.sqrt(TargetTolerance.of(tol).stateNmse());
        for (int i = 0; i < names.size(); i++) {
            double a = g.norms()[i];
            double b = r.norms()[i];
            // 1e-12 relative: the norm itself is a double sum of f32 squares, rounded once more in the JSON
            if (!(Math.abs(b - a) <= bound * a + 1e-12 * Math.max(a, b))) {
                finding(String.format(Locale.ROOT, "%s: %s norm %.9g, the golden's %.9g: relative change %.3g > "
                        + "√(state NMSE %.3g) = %.3g, so its NMSE exceeds the %s profile's bound (P = %d)", at,
                        names.get(i), b, a, Math.abs(b - a) / Math.max(a, Double.MIN_VALUE),
                        TargetTolerance.of(tol).stateNmse(), bound, tol.name(), g.processedTokens()));
                return;
            }
        }
    }

    private static String norms(State s, List<String> names) {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < names.size(); i++) {
            out.add(String.format(Locale.ROOT, "%s %.6g", names.get(i), s.norms()[i]));
        }
        return String.join(", ", out);
    }

    /** Request {@code q}'s output against the golden's, up to the first difference, judged tie-aware. */
    private void output(int q, int[] theirs) {
        int[] g = golden.outputs().get(q);
        int i = Arrays.mismatch(g, theirs);
        tokens += i < 0 ? g.length : i;
        if (i < 0) {
            return;
        }
        Request r = golden.requests().get(q);
        String at = "request " + q + " (" + how() + "): output token " + i;
        if (i >= Math.min(g.length, theirs.length)) {
            finding(at + ": the loop emitted " + theirs.length + " tokens, the golden " + g.length);
        } else {
            nearTie(at, targetLogprobs(r, q, i), r.sampler(), i, g[i], theirs[i]);
        }
    }

    /**
     * Whether {@code theirs} in place of the golden's {@code ours} is a near-tie under the profile; a finding when
     * not. Under an exact profile a different token is never one (spec §7: ties go to the lowest index).
     */
    private boolean nearTie(String at, float[] lp, RowSampler sampler, long step, int ours, int theirs) {
        int vocab = lp.length;
        if (theirs < 0 || theirs >= vocab) {
            finding(at + ": token " + theirs + " outside the vocabulary [0, " + vocab + ")");
            return false;
        }
        double gap = sampler.isGreedy() ? NearTie.logProbGap(lp, 0, ours, theirs)
                : NearTie.seededGap(lp, 0, vocab, sampler, step, theirs);
        if (!tol.exact() && gap <= tol.tokenGap()) {
            nearTies++;
            return true;
        }
        finding(String.format(Locale.ROOT, "%s: %d, the golden has %d (%s, gap %.4g %s the %s profile's token gap "
                + "%.3g)", at, theirs, ours, sampler.isGreedy() ? "greedy" : "seeded", gap, tol.exact() ? "under"
                : ">", tol.name(), tol.tokenGap()));
        return false;
    }

    /** The reference target's log-probs at request {@code q}'s output {@code index}, on the golden's tokens. */
    private float[] targetLogprobs(Request r, int q, int index) {
        int[] prefix = Arrays.copyOf(r.prompt(), r.prompt().length + index);
        System.arraycopy(golden.outputs().get(q), 0, prefix, r.prompt().length, index);
        try (TargetRows t = reference.openRows(Collections.singletonList(null))) {
            TargetOutput o = t.prefill(HostTensor.ofInts(prefix, 1, prefix.length));
            int vocab = o.logits().dim(2);
            float[] logits = o.logits().toFloatArray();
            int off = (o.logits().dim(1) - 1) * vocab; // a prefill returns the last position's logits (§13.3)
            double max = Double.NEGATIVE_INFINITY;
            for (int i = 0; i < vocab; i++) {
                max = Math.max(max, logits[off + i]);
            }
            double sum = 0;
            for (int i = 0; i < vocab; i++) {
                sum += StrictMath.exp(logits[off + i] - max);
            }
            double lse = max + StrictMath.log(sum);
            float[] lp = new float[vocab];
            for (int i = 0; i < vocab; i++) {
                lp[i] = (float) (logits[off + i] - lse);
            }
            return lp;
        }
    }

    /** Tokens request {@code q} had emitted before golden round entry {@code k} (its prefill's one, then a+1 each). */
    private long emittedBefore(int k, int q) {
        long n = 1;
        for (int j = 0; j < k; j++) {
            for (Row w : golden.rounds().get(j).rows()) {
                if (w.request() == q) {
                    n += w.accepted() + 1;
                }
            }
        }
        return n;
    }

    private static int[] requests(Round r) {
        return r.rows().stream().mapToInt(Row::request).toArray();
    }

    private String how() {
        return "tap " + golden.tap().label() + ", kv " + golden.policy().label();
    }

    private void finding(String message) {
        findings.add(side + ": " + message);
    }
}
