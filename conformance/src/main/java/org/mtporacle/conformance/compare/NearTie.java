package org.mtporacle.conformance.compare;

import org.mtporacle.api.RowSampler;
import org.mtporacle.api.Tolerance;
import org.mtporacle.reference.sampling.DraftSampler;
import org.mtporacle.reference.sampling.MlxRandom;

import java.util.Arrays;

/**
 * How far the reference was from choosing another token, in log-prob units, so that one bound
 * ({@link Tolerance#tokenGap()}) serves greedy and seeded rows alike (conformance/SPEC.md, "Lockstep comparison").
 */
public final class NearTie {
    private static final double MAX_EPS = 8.0;
    private static final int SEARCH_STEPS = 40;

    private NearTie() {
    }

    /** Greedy: {@code lp[ours] − lp[theirs]} (≥ 0 when ours is the argmax). */
    public static double logProbGap(float[] lp, int off, int ours, int theirs) {
        return (double) lp[off + ours] - lp[off + theirs];
    }

    /**
     * Seeded: {@code 2ε}, where {@code ε} is the smallest per-token log-prob perturbation of the reference's row under
     * which the reference's own draw (same uniform, same top-k/top-p/temperature pipeline) could pick {@code theirs};
     * infinite when none up to 8 does. For a greedy row the same construction gives {@code lp[ours] − lp[theirs]},
     * hence the factor 2.
     */
    public static double seededGap(float[] lp, int off, int vocab, RowSampler sampler, long step, int theirs) {
        double u = MlxRandom.uniform(MlxRandom.key(DraftSampler.stepKey(sampler.seed(), step)), 1)[0];
        float[] row = Arrays.copyOfRange(lp, off, off + vocab);
        boolean[] kept = keptByReference(lp, off, vocab, sampler);
        if (!consistent(row, kept, sampler, u, theirs, MAX_EPS)) {
            return Double.POSITIVE_INFINITY;
        }
        double lo = 0;
        double hi = MAX_EPS;
        for (int i = 0; i < SEARCH_STEPS; i++) {
            double mid = (lo + hi) / 2;
            if (consistent(row, kept, sampler, u, theirs, mid)) {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        return 2 * hi;
    }

    private static boolean[] keptByReference(float[] lp, int off, int vocab, RowSampler sampler) {
        float[] x = DraftSampler.filteredLogits(lp, off, vocab, sampler);
        boolean[] kept = new boolean[vocab];
        for (int i = 0; i < vocab; i++) {
            kept[i] = x[i] != Float.NEGATIVE_INFINITY;
        }
        return kept;
    }

    /**
     * Whether some perturbation of every log-prob by at most {@code eps} lets the inverse-CDF draw with uniform
     * {@code u} pick {@code j}: tokens whose top-k/top-p decision could flip count as absent in the lower bounds and
     * present in the upper bounds; weights scale by {@code e^(±eps/T)}; {@code j} is picked iff
     * {@code C_j ≤ u·S < C_j + w_j}, which some (L, R) in the perturbation box satisfies iff
     * {@code (1−u)(L⁺ + w_j⁺) > u·R⁻} and {@code (1−u)L⁻ − u·w_j⁺ ≤ u·R⁺}.
     */
    static boolean consistent(float[] lp, boolean[] kept, RowSampler s, double u, int j, double eps) {
        int v = lp.length;
        boolean[] unsure = boundaryTokens(lp, kept, s, eps);
        if (!kept[j] && !unsure[j]) {
            return false;
        }
        double m = Double.NEGATIVE_INFINITY;
        for (int i = 0; i < v; i++) {
            if (kept[i] || unsure[i]) {
                m = Math.max(m, lp[i]);
            }
        }
        double f = StrictMath.exp(eps / s.temperature());
        double wj = StrictMath.exp((lp[j] - m) / s.temperature()) * f;
        double lMin = 0;
        double lMax = 0;
        double rMin = 0;
        double rMax = 0;
        for (int i = 0; i < v; i++) {
            if (i == j || !(kept[i] || unsure[i])) {
                continue;
            }
            double w = StrictMath.exp((lp[i] - m) / s.temperature());
            boolean certain = kept[i] && !unsure[i];
            if (i < j) {
                lMin += certain ? w / f : 0;
                lMax += w * f;
            } else {
                rMin += certain ? w / f : 0;
                rMax += w * f;
            }
        }
        return (1 - u) * (lMax + wj) > u * rMin && (1 - u) * lMin - u * wj <= u * rMax;
    }

    /** The number of values in ascending {@code a} that are {@code < x}. */
    private static int lowerBound(float[] a, double x) {
        int lo = 0;
        int hi = a.length;
        while (lo < hi) {
            int mid = (lo + hi) >>> 1;
            if (a[mid] < x) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        return lo;
    }

    /** The number of values in ascending {@code a} that are {@code ≤ x}. */
    private static int upperBound(float[] a, double x) {
        int lo = 0;
        int hi = a.length;
        while (lo < hi) {
            int mid = (lo + hi) >>> 1;
            if (a[mid] <= x) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        return lo;
    }

    /** Tokens whose top-k or top-p decision a perturbation of at most {@code eps} per log-prob could flip. */
    private static boolean[] boundaryTokens(float[] lp, boolean[] kept, RowSampler s, double eps) {
        int v = lp.length;
        boolean[] unsure = new boolean[v];
        if (s.topK() > 0 && s.topK() < v) {
            float[] sorted = lp.clone();
            Arrays.sort(sorted);
            double kth = sorted[v - s.topK()];
            double next = sorted[v - s.topK() - 1];
            for (int i = 0; i < v; i++) {
                unsure[i] |= kept[i] ? lp[i] <= next + 2 * eps : lp[i] >= kth - 2 * eps;
            }
        }
        if (s.topP() > 0 && s.topP() < 1) {
            // Token i's inclusive ascending cumulative probability can range over [lo, hi]: at least the tokens surely
            // below it (lp < lp_i − 2ε), each probability scaled down by e^−ε; at most every token that can sort
            // below it (lp ≤ lp_i + 2ε), scaled up by e^ε. It is kept iff that sum exceeds 1 − topP.
            float[] sorted = lp.clone();
            Arrays.sort(sorted);
            double[] prefix = new double[v + 1];
            for (int i = 0; i < v; i++) {
                prefix[i + 1] = prefix[i] + StrictMath.exp(sorted[i]);
            }
            double theta = 1 - s.topP();
            double down = StrictMath.exp(-eps);
            double up = StrictMath.exp(eps);
            for (int i = 0; i < v; i++) {
                double p = StrictMath.exp(lp[i]);
                int below = lowerBound(sorted, lp[i] - 2 * eps);           // tokens with lp < lp_i − 2ε
                int maybeBelow = upperBound(sorted, lp[i] + 2 * eps);      // tokens with lp ≤ lp_i + 2ε (i included)
                double lo = (prefix[below] + p) * down;
                double hi = prefix[maybeBelow] * up;
                unsure[i] |= lo <= theta && theta < hi;
            }
        }
        return unsure;
    }
}
