package org.mtporacle.conformance.compare;

import java.util.Arrays;

/**
 * How far the reference's router was from choosing the backend's experts (spec §12.5, conformance/SPEC.md "Router
 * near-ties"), in probability units: {@code max p(dropped) − min p(added)}, where "dropped" are the experts the
 * reference chose and the backend did not, "added" the reverse, {@code p} the reference's router probabilities.
 * Zero or negative only when the two sets agree up to exact ties; the backend's set is the top-k of some {@code p'}
 * with {@code |p' − p| ≤ gap/2} everywhere, so the unit matches the greedy token gap's.
 */
public final class RouterNearTie {
    private RouterNearTie() {
    }

    /** True when both sides chose the same experts (order ignored: the weighted sum is symmetric). */
    public static boolean sameSet(int[] ours, int[] theirs) {
        int[] a = ours.clone();
        int[] b = theirs.clone();
        Arrays.sort(a);
        Arrays.sort(b);
        return Arrays.equals(a, b);
    }

    /**
     * The gap between the reference's choice {@code ours} and the backend's {@code theirs} under the reference's
     * probabilities {@code probs}; 0 when the sets are equal.
     *
     * @throws IllegalArgumentException when {@code theirs} is not {@code ours.length} distinct experts in range
     */
    public static double gap(float[] probs, int[] ours, int[] theirs) {
        if (theirs.length != ours.length || Arrays.stream(theirs).distinct().count() != theirs.length
                || Arrays.stream(theirs).anyMatch(e -> e < 0 || e >= probs.length)) {
            throw new IllegalArgumentException("router: backend chose " + Arrays.toString(theirs) + ", expected "
                    + ours.length + " distinct experts in [0, " + probs.length + ")");
        }
        if (sameSet(ours, theirs)) {
            return 0;
        }
        double dropped = Double.NEGATIVE_INFINITY;
        for (int e : ours) {
            if (!contains(theirs, e)) {
                dropped = Math.max(dropped, probs[e]);
            }
        }
        double added = Double.POSITIVE_INFINITY;
        for (int e : theirs) {
            if (!contains(ours, e)) {
                added = Math.min(added, probs[e]);
            }
        }
        return dropped - added;
    }

    private static boolean contains(int[] a, int x) {
        for (int v : a) {
            if (v == x) {
                return true;
            }
        }
        return false;
    }
}
