package org.mtporacle.conformance.compare;

import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.RowCheckpoint;
import org.mtporacle.api.RowSampler;
import org.mtporacle.api.Tolerance;
import org.mtporacle.conformance.compare.Divergence.ErrorEvidence;
import org.mtporacle.conformance.compare.Divergence.Kind;
import org.mtporacle.conformance.compare.Divergence.TensorEvidence;
import org.mtporacle.conformance.compare.Divergence.TokenEvidence;
import org.mtporacle.conformance.compare.Divergence.ValueEvidence;
import org.mtporacle.reference.sampling.DraftSampler;

import java.util.Arrays;
import java.util.Locale;

/**
 * The one comparison of observables (conformance/SPEC.md, "Lockstep comparison"): draft tokens tie-aware, recorded
 * log-probs and top-2 gaps, checkpoints (state, then every tensor by NMSE), digests, row counts and call outcomes,
 * each held to one {@link Tolerance}. Lockstep runs and golden verification both judge through it; it counts what it
 * compared. Each method returns null when the observable passes, else a {@link Divergence} at action -1 that the
 * caller places with {@link Divergence#at}.
 *
 * <p>Two roles: <em>expected</em> is what the judged side must match (the reference's, or a golden's), and
 * <em>actual</em> is what the judged side produced. A draft token's near-tie gap is always measured in the
 * reference's log-probs, from the token on the reference's path to the token judged.
 */
public final class Judge {
    /** Near-tie gaps are counted in this many equal bins of {@code [0, allowance]}, for the report. */
    public static final int NEAR_TIE_BINS = 10;

    private final Tolerance tolerance;
    private final int vocab;
    private final String expectedBy;
    private long comparedTokens;
    private long nearTies;
    private double maxNearTieGap;
    private final long[] nearTieBins = new long[NEAR_TIE_BINS];
    private long comparedCheckpoints;
    private double maxKvNmse;
    private double maxHiddenNmse;
    private long comparedRouterChoices;
    private long routerNearTies;
    private double maxRouterGap;
    private final GapHistogram gaps = new GapHistogram();

    /**
     * @param vocab      V, the length of a log-prob row
     * @param expectedBy who holds the expected values, for messages ({@code "the reference"}, {@code "the golden"})
     */
    public Judge(Tolerance tolerance, int vocab, String expectedBy) {
        this.tolerance = tolerance;
        this.vocab = vocab;
        this.expectedBy = expectedBy;
    }

    public Tolerance tolerance() {
        return tolerance;
    }

    /**
     * What the judge compared so far. {@code nearTieBins[i]} counts the near-ties whose gap fell in the i-th tenth of
     * the token allowance.
     */
    public record Counts(long comparedTokens, long nearTies, double maxNearTieGap, long comparedCheckpoints,
                         double maxKvNmse, double maxHiddenNmse, long[] nearTieBins) {
    }

    // ---- router choices (MoE) ----------------------------------------------------------------------------------

    /**
     * One MoE forward row's experts (spec §12.5): {@code actual} passes when it is the same set as {@code expected}
     * or a router near-tie of it under the reference's probabilities {@code probs} ({@link RouterNearTie#gap}) within
     * the profile's {@link Tolerance#routerGap()}. A profile with no router gap ({@code exact}) accepts no near-tie,
     * not even an exact tie of gap 0: a backend held to the reference's bits computes the same probabilities, so it
     * must break their ties by the spec's rule too (§12.3 step 3, the lower expert index wins).
     */
    public Divergence routerChoice(int row, int pos, float[] probs, int[] expected, int[] actual, String actualLabel) {
        comparedRouterChoices++;
        if (RouterNearTie.sameSet(expected, actual)) {
            return null;
        }
        double allowance = tolerance.routerGap();
        double gap;
        try {
            gap = RouterNearTie.gap(probs, expected, actual);
        } catch (IllegalArgumentException e) {
            return new Divergence(Kind.CONTRACT, -1, null, row, pos, Divergence.ValueEvidence.of("experts",
                    Arrays.toString(expected), Arrays.toString(actual)), "row " + row + " position " + pos + ": "
                    + e.getMessage());
        }
        if (gap <= allowance && allowance > 0) {
            routerNearTies++;
            maxRouterGap = Math.max(maxRouterGap, gap);
            return null;
        }
        return new Divergence(Kind.ROUTER_CHOICE, -1, null, row, pos, new Divergence.RouterEvidence(
                Arrays.toString(expected), Arrays.toString(actual), probsOf(probs, expected), probsOf(probs, actual),
                gap, allowance), String.format(Locale.ROOT, "row %d position %d: %s experts %s, reference %s "
                        + "(reference router probabilities %s vs %s, gap %.3g %s)%s", row, pos, actualLabel,
                Arrays.toString(actual), Arrays.toString(expected), probsOf(probs, actual), probsOf(probs, expected),
                gap, allowance > 0 ? String.format(Locale.ROOT, "> %.3g %s", allowance, tolerance.name())
                        : "and " + tolerance.name() + " allows no router near-tie",
                gap == 0 ? ": an exact tie broken toward the higher expert index; spec §12.3 step 3: on equal "
                        + "probabilities the lower index wins" : ""));
    }

    private static String probsOf(float[] probs, int[] experts) {
        StringBuilder sb = new StringBuilder("[");
        for (int j = 0; j < experts.length; j++) {
            sb.append(j == 0 ? "" : ", ").append(String.format(Locale.ROOT, "%.5f", probs[experts[j]]));
        }
        return sb.append(']').toString();
    }

    /** What the router comparisons came to (MoE, spec §12.5). */
    public RouterTally routerTally() {
        return new RouterTally(comparedRouterChoices, routerNearTies, maxRouterGap);
    }

    public Counts counts() {
        return new Counts(comparedTokens, nearTies, maxNearTieGap, comparedCheckpoints, maxKvNmse, maxHiddenNmse,
                nearTieBins.clone());
    }

    /**
     * The reference's gaps at every greedy position judged so far, agreeing and differing: the data the token
     * allowance is derived from ({@link GapCalibration}).
     */
    public GapHistogram gaps() {
        return gaps.copy();
    }

    // ---- draft tokens ------------------------------------------------------------------------------------------

    /**
     * One draft position: {@code actual} passes when it equals {@code expected} or is a near-tie of it in the
     * reference's log-probs {@code lp[off, off + V)} (greedy rows: {@code lp[expected] − lp[actual]}; seeded rows:
     * {@link NearTie#seededGap} at {@code step}), within the profile's token gap.
     */
    public Divergence token(int row, int pos, float[] lp, int off, int expected, int actual, RowSampler sampler,
                            long step, String actualLabel, String expectedLabel) {
        comparedTokens++;
        if (actual == expected) {
            if (sampler.isGreedy()) {
                float runnerUp = DraftSampler.top2Gap(lp, off, vocab);
                if (Float.isFinite(runnerUp)) {
                    gaps.add(runnerUp, false);
                }
            }
            return null;
        }
        double gap = sampler.isGreedy() ? NearTie.logProbGap(lp, off, expected, actual)
                : NearTie.seededGap(lp, off, vocab, sampler, step, actual);
        if (sampler.isGreedy() && gap >= 0) {
            gaps.add(gap, true);
        }
        double allowance = tolerance.tokenGap();
        // a profile with no token gap (exact) accepts no other token, not even an exact tie of gap 0: a backend held to
        // the reference's bits computes the same log-probs, so a different token there is a tie broken the other way
        if (gap <= allowance && allowance > 0) {
            nearTies++;
            maxNearTieGap = Math.max(maxNearTieGap, gap);
            nearTieBins[allowance > 0 ? Math.min(NEAR_TIE_BINS - 1, (int) (gap / allowance * NEAR_TIE_BINS)) : 0]++;
            return null;
        }
        String mode = sampler.isGreedy() ? "greedy" : "seeded";
        return new Divergence(Kind.DRAFT_TOKEN, -1, null, row, pos, new TokenEvidence(expected, actual,
                lp[off + expected], lp[off + actual], gap, allowance, sampler.isGreedy(), sampler.toString(), step),
                String.format(Locale.ROOT, "row %d position %d: %s %d, %s %d (reference log-probs %.5f vs %.5f, gap "
                                + "%.3g %s, %s)%s", row, pos, actualLabel, actual, expectedLabel, expected,
                        lp[off + actual], lp[off + expected], gap, allowance > 0
                                ? String.format(Locale.ROOT, "> %.3g %s", allowance, tolerance.name())
                                : "and " + tolerance.name() + " allows no near-tie", mode,
                        gap == 0 && sampler.isGreedy() ? ": an exact tie broken toward another token; spec §7: greedy "
                                + "argmax takes the lowest index on ties" : ""));
    }

    /** A recorded log-prob of {@code token} against the reference's, within the token gap (or equal). */
    public Divergence logprob(int row, int pos, int token, float expected, float actual) {
        return recorded(Kind.LOG_PROB, row, pos, "log-prob of token " + token, expected, actual);
    }

    /** A recorded top-2 gap against the reference's, within the token gap (or equal). */
    public Divergence top2Gap(int row, int pos, float expected, float actual) {
        return recorded(Kind.TOP2_GAP, row, pos, "top-2 gap", expected, actual);
    }

    private Divergence recorded(Kind kind, int row, int pos, String what, float expected, float actual) {
        double diff = Math.abs((double) actual - expected);
        if (diff <= tolerance.tokenGap() || Float.compare(actual, expected) == 0) {
            return null;
        }
        return new Divergence(kind, -1, null, row, pos, new ValueEvidence(kind == Kind.LOG_PROB ? "logprob"
                : "top2Gap", expected, actual, diff, tolerance.tokenGap()), String.format(Locale.ROOT,
                "row %d position %d: %s is %s, %s says %s (|Δ| %.3g > %.3g %s)", row, pos, what, actual, expectedBy,
                expected, diff, tolerance.tokenGap(), tolerance.name()));
    }

    // ---- checkpoints -------------------------------------------------------------------------------------------

    /**
     * A checkpoint against the expected one: P, draft offset, schema and model identity equal, then keys, values
     * (when P > 1) and hidden by NMSE. {@code what} names it in messages ({@code "row 2"}).
     */
    public Divergence checkpoint(int row, String what, RowCheckpoint expected, RowCheckpoint actual) {
        comparedCheckpoints++;
        if (actual == null) {
            return new Divergence(Kind.CONTRACT, -1, null, row, -1, ValueEvidence.of("checkpoint", "a checkpoint",
                    null), what + ": capture returned null");
        }
        Divergence d = stateOf(row, what, expected.processedTokens(), expected.draftOffset(), actual);
        if (d == null && !expected.schema().equals(actual.schema())) {
            d = stateField(row, what, "schema", expected.schema(), actual.schema());
        }
        if (d == null && !expected.modelIdentity().equals(actual.modelIdentity())) {
            d = stateField(row, what, "modelIdentity", expected.modelIdentity(), actual.modelIdentity());
        }
        if (d == null) {
            d = tensor(row, what, "keys", expected.keys(), actual.keys());
        }
        if (d == null) {
            d = tensor(row, what, "values", expected.values(), actual.values());
        }
        return d != null ? d : tensor(row, what, "hidden", expected.hidden(), actual.hidden());
    }

    /**
     * A checkpoint known only by P, draft offset and digest: P and offset must be equal; the digest is compared
     * under an exact profile (else a different digest says nothing, and the result is null: not compared).
     */
    public Divergence digestOnly(int row, String what, long expectedP, long expectedOffset, String expectedSha256,
                                 RowCheckpoint actual, String actualSha256) {
        comparedCheckpoints++;
        Divergence d = stateOf(row, what, expectedP, expectedOffset, actual);
        if (d == null && tolerance.exact()) {
            d = digest(row, what, expectedSha256, actualSha256, "no tensors stored to say where they differ");
        }
        return d;
    }

    private Divergence stateOf(int row, String what, long expectedP, long expectedOffset, RowCheckpoint actual) {
        if (actual.processedTokens() == expectedP && actual.draftOffset() == expectedOffset) {
            return null;
        }
        String field = actual.processedTokens() != expectedP ? "P" : "draftOffset";
        return new Divergence(Kind.CHECKPOINT_STATE, -1, null, row, -1, ValueEvidence.of(field,
                field.equals("P") ? expectedP : expectedOffset, field.equals("P") ? actual.processedTokens()
                        : actual.draftOffset()), String.format(Locale.ROOT, "%s: P=%d draftOffset=%d, %s has P=%d "
                        + "draftOffset=%d", what, actual.processedTokens(), actual.draftOffset(), expectedBy, expectedP,
                expectedOffset));
    }

    private Divergence stateField(int row, String what, String field, String expected, String actual) {
        return new Divergence(Kind.CHECKPOINT_STATE, -1, null, row, -1, ValueEvidence.of(field, expected, actual),
                what + ": " + field + " '" + actual + "', " + expectedBy + " has '" + expected + "'");
    }

    /** Whether a row holds a checkpoint (a retained hidden) or is cold, against the expected presence. */
    public Divergence presence(int row, String what, boolean expectedWarm, RowCheckpoint actual) {
        if (expectedWarm == (actual != null)) {
            return null;
        }
        return new Divergence(Kind.CHECKPOINT_STATE, -1, null, row, -1, ValueEvidence.of("retainedHidden",
                expectedWarm, actual != null), actual != null ? what + " has a retained hidden (P="
                + actual.processedTokens() + "), " + expectedBy + " has a cold row" : what + " cannot be captured, "
                + expectedBy + " has a retained hidden");
    }

    /**
     * One checkpoint tensor ({@code keys}, {@code values}: bound {@code kvNmse}; {@code hidden}: {@code hiddenNmse}):
     * both absent, or equal shapes and NMSE {@code Σ(a−b)²/Σb²} within the bound.
     */
    public Divergence tensor(int row, String what, String name, HostTensor expected, HostTensor actual) {
        boolean kv = !name.equals("hidden");
        double bound = kv ? tolerance.kvNmse() : tolerance.hiddenNmse();
        if (expected == null || actual == null) {
            if (expected == actual) {
                return null;
            }
            return new Divergence(Kind.CHECKPOINT_SHAPE, -1, null, row, -1, new TensorEvidence(name,
                    describe(expected), describe(actual), Double.NaN, bound), what + ": " + name + " "
                    + (actual == null ? "absent" : "present") + ", " + expectedBy + " has it "
                    + (expected == null ? "absent" : "present"));
        }
        if (!Arrays.equals(expected.shape(), actual.shape())) {
            return new Divergence(Kind.CHECKPOINT_SHAPE, -1, null, row, -1, new TensorEvidence(name,
                    expected.describe(), actual.describe(), Double.NaN, bound), what + ": " + name + " "
                    + actual.describe() + ", " + expectedBy + " has " + expected.describe());
        }
        double nmse = Nmse.of(actual, expected);
        if (kv) {
            maxKvNmse = Math.max(maxKvNmse, nmse);
        } else {
            maxHiddenNmse = Math.max(maxHiddenNmse, nmse);
        }
        if (nmse <= bound) {
            return null;
        }
        String where = kv ? Nmse.largestDifference(actual, expected, "kv head", "position", "dim")
                : Nmse.largestDifference(actual, expected, "dim");
        return new Divergence(Kind.CHECKPOINT_TENSOR, -1, null, row, -1, new TensorEvidence(name,
                expected.describe(), actual.describe(), nmse, bound, where), String.format(Locale.ROOT,
                "%s: %s NMSE %.3g > %.3g %s", what, name, nmse, bound, tolerance.name()));
    }

    /** A checkpoint digest against the expected one ({@code why} says what a mismatch means here). */
    public Divergence digest(int row, String what, String expected, String actual, String why) {
        if (expected.equals(actual)) {
            return null;
        }
        return new Divergence(Kind.CHECKPOINT_DIGEST, -1, null, row, -1, ValueEvidence.of("sha256", expected, actual),
                what + ": checkpoint digest " + actual + ", " + expectedBy + " has " + expected + " (" + why + ")");
    }

    /** A draft result's shape: {@code b} rows of {@code depth} ids in {@code [0, V)}. */
    public Divergence draftResult(int[][] t, int b, int depth) {
        boolean ok = t != null && t.length == b;
        for (int r = 0; ok && r < b; r++) {
            ok = t[r] != null && t[r].length == depth;
            for (int p = 0; ok && p < depth; p++) {
                ok = t[r][p] >= 0 && t[r][p] < vocab;
            }
        }
        if (ok) {
            return null;
        }
        String want = b + " rows of " + depth + " ids in [0, " + vocab + ")";
        return new Divergence(Kind.CONTRACT, -1, null, -1, -1, ValueEvidence.of("result", want, t == null ? "null"
                : Arrays.deepToString(t)), "draft returned a malformed result (expected " + want + ")");
    }

    // ---- row counts and outcomes -------------------------------------------------------------------------------

    public Divergence rowCount(int expected, int actual) {
        if (expected == actual) {
            return null;
        }
        return new Divergence(Kind.ROW_COUNT, -1, null, -1, -1, ValueEvidence.of("rowCount", expected, actual),
                "has " + actual + " rows, " + expectedBy + " has " + expected);
    }

    /**
     * A call's outcome: success where {@code expectedKind} is null, else a failure of that kind. Anything but an
     * {@link MtpException} is a contract divergence.
     */
    public Divergence outcome(String expectedKind, String expectedMessage, RuntimeException actual) {
        if (actual != null && !(actual instanceof MtpException)) {
            return new Divergence(Kind.CONTRACT, -1, null, -1, -1, new ErrorEvidence(expectedKind,
                    actual.getClass().getName(), expectedMessage, String.valueOf(actual.getMessage())), "threw "
                    + actual + " instead of an MtpException");
        }
        String kind = actual == null ? null : ((MtpException) actual).kind().name();
        String message = actual == null ? null : actual.getMessage();
        ErrorEvidence e = new ErrorEvidence(expectedKind, kind, expectedMessage, message);
        String theirs = expectedMessage == null ? "" : " (" + expectedMessage + ")";
        if (expectedKind == null && kind != null) {
            return new Divergence(Kind.UNEXPECTED_ERROR, -1, null, -1, -1, e, "failed with " + kind + " where "
                    + expectedBy + " succeeds: " + message);
        }
        if (expectedKind != null && kind == null) {
            return new Divergence(Kind.MISSING_ERROR, -1, null, -1, -1, e, "succeeded where " + expectedBy
                    + " fails with " + expectedKind + theirs);
        }
        if (expectedKind != null && !expectedKind.equals(kind)) {
            return new Divergence(Kind.ERROR_KIND, -1, null, -1, -1, e, "failed with " + kind + " (" + message
                    + ") where " + expectedBy + " fails with " + expectedKind + theirs);
        }
        return null;
    }

    /** A divergence of a kind the judge does not compute (a malformed result, a state changed by a failed call). */
    public static Divergence of(Kind kind, int row, String message, ValueEvidence evidence) {
        return new Divergence(kind, -1, null, row, -1, evidence, message);
    }

    private static String describe(HostTensor t) {
        return t == null ? "absent" : t.describe();
    }
}
