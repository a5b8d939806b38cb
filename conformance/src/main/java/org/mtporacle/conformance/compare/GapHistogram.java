package org.mtporacle.conformance.compare;

import java.util.Arrays;

/**
 * The reference's log-prob gaps at every compared greedy draft position, split by whether the backend drafted the
 * same token: at an agreeing position the gap is {@code lp[ours] − lp[runner-up]} (how far the backend's error would
 * have had to go to flip it), at a differing one {@code lp[ours] − lp[theirs]}. Together they are the data the token
 * allowance is derived from ({@link GapCalibration}, conformance/SPEC.md "Deriving the near-tie allowance").
 *
 * <p>Gaps are binned by {@link #BIN} up to {@link #RANGE}; larger gaps only count (they carry no information about
 * errors of the size that flips tokens).
 */
public final class GapHistogram {
    /** Bin width, in log-prob units. */
    public static final double BIN = 0.005;
    /** Gaps at or past this fall into one overflow count. */
    public static final double RANGE = 1.0;
    static final int BINS = (int) Math.round(RANGE / BIN);

    private final long[] agree;
    private final long[] differ;
    private long agreeBeyond;
    private long differBeyond;
    private double maxDifferGap;

    public GapHistogram() {
        this(new long[BINS], new long[BINS], 0, 0, 0);
    }

    private GapHistogram(long[] agree, long[] differ, long agreeBeyond, long differBeyond, double maxDifferGap) {
        this.agree = agree;
        this.differ = differ;
        this.agreeBeyond = agreeBeyond;
        this.differBeyond = differBeyond;
        this.maxDifferGap = maxDifferGap;
    }

    /** A histogram from its counts (as {@link #agreeCounts()} etc. return them). */
    public static GapHistogram of(long[] agree, long[] differ, long agreeBeyond, long differBeyond,
                                  double maxDifferGap) {
        if (agree.length != BINS || differ.length != BINS) {
            throw new IllegalArgumentException("gap histogram: " + agree.length + " and " + differ.length
                    + " bins, expected " + BINS);
        }
        return new GapHistogram(agree.clone(), differ.clone(), agreeBeyond, differBeyond, maxDifferGap);
    }

    /** Counts one greedy position whose reference gap is {@code gap ≥ 0}. */
    public void add(double gap, boolean differs) {
        if (!(gap >= 0)) {
            throw new IllegalArgumentException("gap histogram: gap " + gap + " must be ≥ 0");
        }
        if (differs) {
            maxDifferGap = Math.max(maxDifferGap, gap);
        }
        if (gap >= RANGE) {
            if (differs) {
                differBeyond++;
            } else {
                agreeBeyond++;
            }
            return;
        }
        int bin = (int) (gap / BIN);
        (differs ? differ : agree)[bin]++;
    }

    /** Adds every count of {@code o} to this one. */
    public void addAll(GapHistogram o) {
        for (int i = 0; i < BINS; i++) {
            agree[i] += o.agree[i];
            differ[i] += o.differ[i];
        }
        agreeBeyond += o.agreeBeyond;
        differBeyond += o.differBeyond;
        maxDifferGap = Math.max(maxDifferGap, o.maxDifferGap);
    }

    public GapHistogram copy() {
        return new GapHistogram(agree.clone(), differ.clone(), agreeBeyond, differBeyond, maxDifferGap);
    }

    public long[] agreeCounts() {
        return agree.clone();
    }

    public long[] differCounts() {
        return differ.clone();
    }

    public long agreeBeyond() {
        return agreeBeyond;
    }

    public long differBeyond() {
        return differBeyond;
    }

    /** The largest gap at a differing position (0 when none differed). */
    public double maxDifferGap() {
        return maxDifferGap;
    }

    /** Every position counted. */
    public long positions() {
        return Arrays.stream(agree).sum() + Arrays.stream(differ).sum() + agreeBeyond + differBeyond;
    }

    /** Positions where the backend drafted another token. */
    public long differing() {
        return Arrays.stream(differ).sum() + differBeyond;
    }

    /** The number of bins below {@link #RANGE}. */
    public static int agreeCountsLength() {
        return BINS;
    }

    /** The centre of bin {@code i}. */
    static double centre(int i) {
        return (i + 0.5) * BIN;
    }

    /** "GapHistogram[positions=…, differing=…, maxDifferGap=…]" (the bins are in {@link #agreeCounts()}). */
    @Override
    public String toString() {
        return "GapHistogram[positions=" + positions() + ", differing=" + differing() + ", maxDifferGap="
                + maxDifferGap() + "]";
    }
}
