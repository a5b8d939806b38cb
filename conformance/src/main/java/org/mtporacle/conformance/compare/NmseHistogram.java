package org.mtporacle.conformance.compare;

import java.util.Arrays;

/**
 * The NMSEs of one kind of compared tensor (a target's logits, taps, conv windows, recurrent states, keys or values)
 * over a campaign, binned by {@code log10}: {@link #BINS_PER_DECADE} bins per decade from {@code 10^}{@link #LOW} to
 * {@code 10^}{@link #HIGH}; smaller values (an exact match gives 0) count as {@code below}, larger ones and NaN as
 * {@code above}. The data an NMSE bound is derived from ({@link NmseCalibration}, conformance/SPEC.md "Deriving the
 * target's bf16 bounds").
 */
public final class NmseHistogram {
    /** Bins per decade of NMSE. */
    public static final int BINS_PER_DECADE = 20;
    /** {@code log10} of the lowest bin's lower edge. */
    public static final int LOW = -20;
    /** {@code log10} of the highest bin's upper edge. */
    public static final int HIGH = 2;
    static final int BINS = (HIGH - LOW) * BINS_PER_DECADE;

    private final long[] counts;
    private long below;
    private long above;
    private double max;

    public NmseHistogram() {
        this(new long[BINS], 0, 0, 0);
    }

    private NmseHistogram(long[] counts, long below, long above, double max) {
        this.counts = counts;
        this.below = below;
        this.above = above;
        this.max = max;
    }

    /** A histogram from its counts (as {@link #counts()} etc. return them). */
    public static NmseHistogram of(long[] counts, long below, long above, double max) {
        if (counts.length != BINS) {
            throw new IllegalArgumentException("NMSE histogram: " + counts.length + " bins, expected " + BINS);
        }
        return new NmseHistogram(counts.clone(), below, above, max);
    }

    /** Counts one comparison's NMSE. */
    public void add(double nmse) {
        if (!(nmse == nmse) || nmse >= StrictMath.pow(10, HIGH)) {
            above++;
            max = Double.isNaN(nmse) ? nmse : Double.isNaN(max) ? max : Math.max(max, nmse);
            return;
        }
        if (!Double.isNaN(max)) {
            max = Math.max(max, nmse);
        }
        if (nmse < StrictMath.pow(10, LOW)) {
            below++;
            return;
        }
        int bin = (int) Math.floor((StrictMath.log10(nmse) - LOW) * BINS_PER_DECADE);
        counts[Math.max(0, Math.min(BINS - 1, bin))]++;
    }

    /** Adds every count of {@code o} to this one. */
    public void addAll(NmseHistogram o) {
        for (int i = 0; i < BINS; i++) {
            counts[i] += o.counts[i];
        }
        below += o.below;
        above += o.above;
        max = Double.isNaN(max) || Double.isNaN(o.max) ? Double.NaN : Math.max(max, o.max);
    }

    public NmseHistogram copy() {
        return new NmseHistogram(counts.clone(), below, above, max);
    }

    public long[] counts() {
        return counts.clone();
    }

    public long below() {
        return below;
    }

    public long above() {
        return above;
    }

    /** The largest NMSE counted (NaN when one was NaN, 0 when none). */
    public double max() {
        return max;
    }

    /** Every comparison counted. */
    public long total() {
        return Arrays.stream(counts).sum() + below + above;
    }

    /** {@code log10} of bin {@code i}'s lower edge. */
    static double lowerEdge(int i) {
        return LOW + (double) i / BINS_PER_DECADE;
    }

    /** The smallest NMSE at or below which a fraction {@code q} of the comparisons lie (a bin's upper edge). */
    public double quantile(double q) {
        long n = total();
        if (n == 0) {
            return 0;
        }
        long need = (long) Math.ceil(q * n);
        long seen = below;
        if (seen >= need) {
            return StrictMath.pow(10, LOW);
        }
        for (int i = 0; i < BINS; i++) {
            seen += counts[i];
            if (seen >= need) {
                return StrictMath.pow(10, lowerEdge(i + 1));
            }
        }
        return max;
    }

    @Override
    public String toString() {
        return "NmseHistogram[total=" + total() + ", below=" + below + ", above=" + above + ", max=" + max + "]";
    }
}
