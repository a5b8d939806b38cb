package org.mtporacle.conformance.target.lockstep;

import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.TargetCheckpoint;
import org.mtporacle.api.TargetConfig;
import org.mtporacle.conformance.compare.ChainMedians;
import org.mtporacle.conformance.compare.GapHistogram;
import org.mtporacle.conformance.compare.NmseHistogram;
import org.mtporacle.conformance.compare.RouterNearTie;
import org.mtporacle.conformance.compare.RouterTally;
import org.mtporacle.conformance.target.lockstep.TargetDivergence.Kind;

import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The one comparison of a target's observables against the reference's (spec §13.3), each held to one {@link
 * TargetTolerance}: call outcomes by kind; a forward's logits tie-aware at every position (the backend's greedy token
 * passes when it is the reference's, or within the token gap of it in the reference's logits) and by NMSE per row;
 * its taps by NMSE per row; a row's state (P, then conv windows, recurrent states, keys, values, each by NMSE, in the
 * reference's layout). Each method returns null when the observable passes. It counts what it compared, and records
 * the data the bf16 bounds are derived from (conformance/SPEC.md "Deriving the target's bf16 bounds"): the reference's
 * logit gap at every greedy position ({@link GapHistogram}) and every NMSE it compares, by kind ({@link #KINDS}).
 * One judge per chain: at its end {@link #typicalExcess} holds each kind's median against the profile's bound on a
 * chain's typical NMSE (conformance/SPEC.md "A chain's typical NMSE").
 */
public final class TargetJudge {
    private final TargetTolerance tolerance;
    private long comparedTokens;
    private long nearTies;
    private long comparedStates;
    private double maxOutputNmse;
    private double maxStateNmse;
    private final GapHistogram gaps = new GapHistogram();
    private final Map<String, NmseHistogram> nmse = emptyNmse();
    private long routerCompared;
    private long routerNearTies;
    private double maxRouterGap;
    private java.util.function.DoubleConsumer routerGapSink;
    private final ChainMedians chain = new ChainMedians();

    /** The kinds of compared tensor whose NMSEs are recorded: logits, taps, then the four state tensors. */
    public static final List<String> KINDS = List.of("logits", "taps", "convWindows", "recurrentStates", "keys",
            "values");

    public TargetJudge(TargetTolerance tolerance) {
        this.tolerance = tolerance;
    }

    static Map<String, NmseHistogram> emptyNmse() {
        Map<String, NmseHistogram> m = new LinkedHashMap<>();
        for (String k : KINDS) {
            m.put(k, new NmseHistogram());
        }
        return m;
    }

    public TargetTolerance tolerance() {
        return tolerance;
    }

    /**
     * What was compared so far and the worst values seen; {@code gaps} the reference's logit gaps at every greedy
     * position, {@code nmse} every compared NMSE by kind ({@link #KINDS}).
     */
    public record Counts(long comparedTokens, long nearTies, long comparedStates, double maxOutputNmse,
                         double maxStateNmse, GapHistogram gaps, Map<String, NmseHistogram> nmse) {
        public Counts {
            gaps = gaps == null ? new GapHistogram() : gaps.copy();
            Map<String, NmseHistogram> m = emptyNmse();
            if (nmse != null) {
                nmse.forEach((k, v) -> m.computeIfAbsent(k, x -> new NmseHistogram()).addAll(v));
            }
            nmse = java.util.Collections.unmodifiableMap(m);
        }

        /** Counts with no distributions recorded. */
        public Counts(long comparedTokens, long nearTies, long comparedStates, double maxOutputNmse,
                      double maxStateNmse) {
            this(comparedTokens, nearTies, comparedStates, maxOutputNmse, maxStateNmse, null, null);
        }

        @Override
        public GapHistogram gaps() {
            return gaps.copy();
        }

        public Counts plus(Counts o) {
            GapHistogram g = gaps.copy();
            g.addAll(o.gaps);
            Map<String, NmseHistogram> m = new LinkedHashMap<>();
            nmse.forEach((k, v) -> m.put(k, v.copy()));
            o.nmse.forEach((k, v) -> m.computeIfAbsent(k, x -> new NmseHistogram()).addAll(v));
            return new Counts(comparedTokens + o.comparedTokens, nearTies + o.nearTies,
                    comparedStates + o.comparedStates, Math.max(maxOutputNmse, o.maxOutputNmse),
                    Math.max(maxStateNmse, o.maxStateNmse), g, m);
        }
    }

    public Counts counts() {
        return new Counts(comparedTokens, nearTies, comparedStates, maxOutputNmse, maxStateNmse, gaps, nmse);
    }

    /** A row's state in the reference's layout ({@link TargetStateLayout#REFERENCE}); absent tensors are empty. */
    public record RowState(int processed, float[] conv, float[] recurrent, float[] keys, float[] values) {
        public static RowState of(TargetCheckpoint cp) {
            return new RowState(cp.processedTokens(), floats(cp.convWindows()), floats(cp.recurrentStates()),
                    floats(cp.keys()), floats(cp.values()));
        }

        /** A backend's native state normalised from its declared layout. */
        public static RowState of(TargetStateExport.NativeState s, TargetStateLayout layout, TargetConfig c) {
            int n = c.count(TargetConfig.LayerType.LINEAR_ATTENTION);
            return new RowState(s.processed(), layout.convToReference(s.conv(), n, c.gdn()),
                    layout.stateToReference(s.recurrent(), n, c.gdn()), s.keys(), s.values());
        }

        private static float[] floats(HostTensor t) {
            return t == null ? new float[0] : t.toFloatArray();
        }
    }

    // ---- outcomes ------------------------------------------------------------------------------------------------

    /** A call's outcome: success where {@code expected} is null, else a failure of its kind. */
    public TargetDivergence outcome(MtpException expected, RuntimeException actual) {
        if (actual != null && !(actual instanceof MtpException)) {
            return of(Kind.CONTRACT, -1, -1, "threw " + actual + " instead of an MtpException");
        }
        MtpException a = (MtpException) actual;
        if (expected == null && a != null) {
            return of(Kind.UNEXPECTED_ERROR, -1, -1, "failed with " + a.kind() + " where the reference succeeds: "
                    + a.getMessage());
        }
        if (expected != null && a == null) {
            return of(Kind.MISSING_ERROR, -1, -1, "succeeded where the reference fails with " + expected.kind()
                    + " (" + expected.getMessage() + ")");
        }
        if (expected != null && expected.kind() != a.kind()) {
            return of(Kind.ERROR_KIND, -1, -1, "failed with " + a.kind() + " (" + a.getMessage()
                    + ") where the reference fails with " + expected.kind() + " (" + expected.getMessage() + ")");
        }
        return null;
    }

    // ---- forward outputs -----------------------------------------------------------------------------------------

    /**
     * Logits {@code [B, n, V]}: shape, then per row and position the greedy token tie-aware, then per row the NMSE.
     * {@code what} names the call ({@code "verify"}).
     */
    public TargetDivergence logits(String what, HostTensor expected, HostTensor actual) {
        TargetDivergence d = shape(what + " logits", expected, actual);
        if (d != null) {
            return d;
        }
        int b = expected.dim(0);
        int n = expected.dim(1);
        int v = expected.dim(2);
        float[] e = expected.toFloatArray();
        float[] a = actual.toFloatArray();
        for (int r = 0; r < b; r++) {
            for (int p = 0; p < n; p++) {
                int off = (r * n + p) * v;
                int ours = argmax(e, off, v);
                int theirs = argmax(a, off, v);
                comparedTokens++;
                if (ours == theirs) {
                    double runnerUp = runnerUpGap(e, off, v, ours);
                    if (Double.isFinite(runnerUp)) {
                        gaps.add(runnerUp, false);
                    }
                    continue;
                }
                double gap = (double) e[off + ours] - e[off + theirs];
                if (gap >= 0) {
                    gaps.add(gap, true);
                }
                if (gap <= tolerance.tokenGap()) {
                    nearTies++;
                    continue;
                }
                return of(Kind.TOKEN, r, p, String.format(Locale.ROOT, "%s row %d position %d: greedy token %d, "
                        + "reference %d (reference logits %.5f vs %.5f, gap %.3g > %.3g %s)", what, r, p, theirs, ours,
                        e[off + theirs], e[off + ours], gap, tolerance.tokenGap(), tolerance.name()));
            }
            int len = n * v;
            double nmse = nmse(a, r * len, e, r * len, len);
            maxOutputNmse = Math.max(maxOutputNmse, nmse);
            this.nmse.get("logits").add(nmse);
            chain.add("logits", nmse);
            if (!(nmse <= tolerance.outputNmse())) {
                return of(Kind.LOGITS, r, -1, String.format(Locale.ROOT, "%s row %d: logits NMSE %.3g > %.3g %s",
                        what, r, nmse, tolerance.outputNmse(), tolerance.name()));
            }
        }
        return null;
    }

    /** Taps {@code [B, L, H]} ({@code tap}: "pre-norm" or "post-norm"): shape, then NMSE per row. */
    public TargetDivergence taps(String what, String tap, HostTensor expected, HostTensor actual) {
        TargetDivergence d = shape(what + " " + tap + " taps", expected, actual);
        if (d != null) {
            return d;
        }
        int b = expected.dim(0);
        int len = expected.dim(1) * expected.dim(2);
        float[] e = expected.toFloatArray();
        float[] a = actual.toFloatArray();
        for (int r = 0; r < b; r++) {
            double nmse = nmse(a, r * len, e, r * len, len);
            maxOutputNmse = Math.max(maxOutputNmse, nmse);
            this.nmse.get("taps").add(nmse);
            chain.add("taps", nmse);
            if (!(nmse <= tolerance.outputNmse())) {
                return of(Kind.TAPS, r, -1, String.format(Locale.ROOT, "%s row %d: %s taps NMSE %.3g > %.3g %s",
                        what, r, tap, nmse, tolerance.outputNmse(), tolerance.name()));
            }
        }
        return null;
    }

    private static TargetDivergence shape(String what, HostTensor expected, HostTensor actual) {
        if (actual == null) {
            return of(Kind.CONTRACT, -1, -1, what + ": absent, expected " + expected.describe());
        }
        if (!Arrays.equals(expected.shape(), actual.shape()) || !actual.dtype().isFloating()) {
            return of(Kind.CONTRACT, -1, -1, what + ": " + actual.describe() + ", expected " + expected.describe());
        }
        return null;
    }

    // ---- router choices (MoE) ------------------------------------------------------------------------------------

    /**
     * One MoE layer's experts at one token (spec §12.5): {@code actual} passes when it is the same set as
     * {@code expected}, or a router near-tie of it under the reference's probabilities {@code probs} ({@link
     * RouterNearTie#gap}) within the profile's {@link TargetTolerance#routerGap()}. A profile with no router gap
     * ({@code exact}) accepts no near-tie, not even an exact tie of gap 0: a backend held to the reference's bits
     * computes the same probabilities, so it must break their ties by the spec's rule (§12.3 step 3, the lower expert
     * index wins).
     */
    public TargetDivergence routerChoice(String what, int row, int position, int layer, float[] probs, int[] expected,
                                         int[] actual) {
        routerCompared++;
        if (RouterNearTie.sameSet(expected, actual)) {
            return null;
        }
        String where = String.format(Locale.ROOT, "%s row %d position %d layer %d", what, row, position, layer);
        double gap;
        try {
            gap = RouterNearTie.gap(probs, expected, actual);
        } catch (IllegalArgumentException e) {
            return of(Kind.CONTRACT, row, position, where + ": " + e.getMessage());
        }
        double allowance = tolerance.routerGap();
        if (gap <= allowance && allowance > 0) {
            routerNearTies++;
            maxRouterGap = Math.max(maxRouterGap, gap);
            if (routerGapSink != null) {
                routerGapSink.accept(gap);
            }
            return null;
        }
        return of(Kind.ROUTER, row, position, String.format(Locale.ROOT, "%s: backend chose experts %s, reference %s "
                + "(reference router probabilities %s vs %s, gap %.3g %s)%s", where, Arrays.toString(actual),
                Arrays.toString(expected), probsOf(probs, actual), probsOf(probs, expected), gap, allowance > 0
                        ? String.format(Locale.ROOT, "> %.3g %s", allowance, tolerance.name())
                        : "and " + tolerance.name() + " allows no router near-tie", gap == 0
                        ? ": an exact tie broken toward the higher expert index; spec §12.3 step 3: on equal "
                        + "probabilities the lower index wins" : ""));
    }

    private static String probsOf(float[] probs, int[] experts) {
        StringBuilder sb = new StringBuilder("[");
        for (int j = 0; j < experts.length; j++) {
            sb.append(j == 0 ? "" : ", ").append(String.format(Locale.ROOT, "%.5f", probs[experts[j]]));
        }
        return sb.append(']').toString();
    }

    /**
     * Sends the gap of every router near-tie accepted from now on to {@code sink} (null: none): the data the
     * {@code bf16} router bound is derived from (conformance/SPEC.md "Deriving the target's bf16 bounds").
     */
    public void recordRouterGaps(java.util.function.DoubleConsumer sink) {
        this.routerGapSink = sink;
    }

    /** What the router comparisons came to (MoE, spec §12.5): choices compared, near-ties, the largest gap. */
    public RouterTally routerTally() {
        return new RouterTally(routerCompared, routerNearTies, maxRouterGap);
    }

    // ---- row state -----------------------------------------------------------------------------------------------

    /** Row {@code row}'s state ({@code what} says where it came from): P, then each tensor by NMSE. */
    public TargetDivergence state(int row, String what, RowState expected, RowState actual) {
        comparedStates++;
        if (expected.processed() != actual.processed()) {
            return of(Kind.STATE_SHAPE, row, -1, what + ": P = " + actual.processed() + ", the reference has P = "
                    + expected.processed());
        }
        String[] names = {"convWindows", "recurrentStates", "keys", "values"};
        float[][] e = {expected.conv(), expected.recurrent(), expected.keys(), expected.values()};
        float[][] a = {actual.conv(), actual.recurrent(), actual.keys(), actual.values()};
        for (int i = 0; i < names.length; i++) {
            if (e[i].length != a[i].length) {
                return of(Kind.STATE_SHAPE, row, -1, what + ": " + names[i] + " has " + a[i].length
                        + " elements, the reference's " + e[i].length);
            }
            double nmse = nmse(a[i], 0, e[i], 0, e[i].length);
            maxStateNmse = Math.max(maxStateNmse, nmse);
            if (e[i].length > 0) {
                this.nmse.get(names[i]).add(nmse);
                chain.add(names[i], nmse);
            }
            if (!(nmse <= tolerance.stateNmse())) {
                return of(Kind.STATE_TENSOR, row, -1, String.format(Locale.ROOT, "%s: %s NMSE %.3g > %.3g %s "
                        + "(P = %d)", what, names[i], nmse, tolerance.stateNmse(), tolerance.name(),
                        expected.processed()));
            }
        }
        return null;
    }

    // ---- a chain's typical NMSE -----------------------------------------------------------------------------------

    /**
     * Counts a comparison that another judge made and bounded: a loop's drafter state ({@code drafterKeys},
     * {@code drafterValues}), recorded by kind and toward the chain's typical NMSE.
     */
    public void addTypical(String kind, double nmse) {
        this.nmse.computeIfAbsent(kind, k -> new NmseHistogram()).add(nmse);
        chain.add(kind, nmse);
    }

    /**
     * The end of a chain: records each kind's median of at least {@link TargetTolerance#TYPICAL_MIN_COMPARISONS}
     * comparisons (the counts' {@code median.KIND}), then judges them against the profile's bound on a chain's
     * typical NMSE (conformance/SPEC.md "A chain's typical NMSE"); null when every median is within. Call it once, at
     * the end of a chain that passed so far.
     */
    public ChainMedians.Excess typicalExcess() {
        chain.recordInto(nmse, TargetTolerance.TYPICAL_MIN_COMPARISONS);
        return chain.judge(tolerance.typicalNmse(), TargetTolerance.TYPICAL_MIN_COMPARISONS);
    }

    /** {@link #typicalExcess} as a divergence ({@code what} names the chain or run), or null. */
    public TargetDivergence typical(String what) {
        ChainMedians.Excess x = typicalExcess();
        return x == null ? null : typical(what, x);
    }

    /** A chain's typical NMSE over its bound, as a divergence. */
    public TargetDivergence typical(String what, ChainMedians.Excess x) {
        return of(Kind.TYPICAL_NMSE, -1, -1, what + ": " + x.describe() + " " + tolerance.name());
    }

    public TargetDivergence rowCount(int expected, int actual) {
        return expected == actual ? null : of(Kind.ROW_COUNT, -1, -1, "has " + actual + " rows, the reference has "
                + expected);
    }

    public static TargetDivergence of(Kind kind, int row, int position, String message) {
        return new TargetDivergence(kind, -1, row, position, message);
    }

    /** The first index of the largest value (spec §13.4's greedy rule). */
    public static int argmax(float[] v, int off, int n) {
        int best = 0;
        for (int i = 1; i < n; i++) {
            if (v[off + i] > v[off + best]) {
                best = i;
            }
        }
        return best;
    }

    /** {@code v[best] − } the largest other value of {@code v[off, off + n)}: the margin of the greedy token. */
    static double runnerUpGap(float[] v, int off, int n, int best) {
        double second = Double.NEGATIVE_INFINITY;
        for (int i = 0; i < n; i++) {
            if (i != best && v[off + i] > second) {
                second = v[off + i];
            }
        }
        return v[off + best] - second;
    }

    /** {@code Σ(a−b)²/Σb²} in f64 ({@code Σ(a−b)²} when b is all zeros); NaN anywhere gives NaN. */
    static double nmse(float[] a, int aOff, float[] b, int bOff, int n) {
        double num = 0;
        double den = 0;
        for (int i = 0; i < n; i++) {
            double d = (double) a[aOff + i] - b[bOff + i];
            num += d * d;
            den += (double) b[bOff + i] * b[bOff + i];
        }
        return den == 0 ? num : num / den;
    }
}
