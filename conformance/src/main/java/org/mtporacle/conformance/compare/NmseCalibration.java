package org.mtporacle.conformance.compare;

import java.util.Locale;

/**
 * The NMSE bound a campaign's data imply for one kind of compared tensor (conformance/SPEC.md, "Deriving the
 * target's bf16 bounds"). A conforming backend fails a campaign when one of its {@code M} comparisons of that kind
 * exceeds the bound {@code B}; the bound must make the expected number of such false failures, {@code M·P(X > B)},
 * about {@link GapCalibration#EXPECTED_FALSE_FAILURES} for a campaign of {@link GapCalibration#CAMPAIGN_CHAINS}
 * chains, far past the largest value measured, so the tail is extrapolated from a fitted shape.
 *
 * <p>The fit is peaks over a threshold in {@code y = log10 NMSE}: the threshold {@code u} is the lowest bin edge with
 * at least {@link #TAIL_FRACTION} of the comparisons (and at least {@link #MIN_TAIL}; with fewer, all those in range,
 * above the lowest occupied bin's edge) above it; the excesses {@code y − u} of those {@code k} comparisons are
 * fitted by an exponential law (the generalised Pareto law of shape 0, the limit for light- and log-normal-like
 * tails), whose maximum-likelihood scale {@code β} is their mean.
 * Then {@code P(Y > y) ≈ (k/N)·e^(−(y − u)/β)} and {@code E(B) = M·(k/N)·e^(−(log10 B − u)/β)}, solved
 * for {@code E(B) = p}: {@code log10 B = u + β·ln(M·k/(N·p))}. In NMSE units the tail is a power law, heavier
 * than the log-normal tail a normal fit of {@code y} would give, so the bound errs on the loose side of the data.
 */
public final class NmseCalibration {
    /** The share of the comparisons the tail fit uses. */
    public static final double TAIL_FRACTION = 0.01;
    /** The fewest comparisons the tail fit uses (all of them when there are fewer). */
    public static final int MIN_TAIL = 50;

    private final NmseHistogram data;
    private final double threshold;
    private final long tail;
    private final double scale;

    private NmseCalibration(NmseHistogram data) {
        this.data = data.copy();
        long n = data.total();
        long want = Math.max(MIN_TAIL, (long) Math.ceil(TAIL_FRACTION * n));
        long[] c = data.counts();
        long k = data.above();
        int i = NmseHistogram.BINS;
        while (i > 0 && k < want) {
            i--;
            k += c[i];
        }
        if (k < want) { // fewer comparisons than the tail wants: all of them, from the lowest occupied bin
            i = 0;
            while (i < NmseHistogram.BINS - 1 && c[i] == 0) {
                i++;
            }
        }
        double u = NmseHistogram.lowerEdge(i);
        double excess = data.above() * (NmseHistogram.HIGH - u);
        for (int j = i; j < NmseHistogram.BINS; j++) {
            excess += c[j] * (NmseHistogram.lowerEdge(j) + 0.5 / NmseHistogram.BINS_PER_DECADE - u);
        }
        this.threshold = u;
        this.tail = k;
        this.scale = k == 0 ? 0 : Math.max(excess / k, 0.5 / NmseHistogram.BINS_PER_DECADE);
    }

    public static NmseCalibration of(NmseHistogram data) {
        return new NmseCalibration(data);
    }

    /** {@code u}: {@code log10} of the tail's threshold. */
    public double threshold() {
        return threshold;
    }

    /** {@code k}: comparisons in the tail. */
    public long tail() {
        return tail;
    }

    /** {@code β}: the fitted exponential scale of {@code log10 NMSE} above the threshold, in decades. */
    public double scale() {
        return scale;
    }

    public NmseHistogram data() {
        return data.copy();
    }

    /**
     * The bound {@code B} with {@code E(B) = expectedFailures} over a campaign of {@code comparisons} comparisons like
     * these; 0 when nothing was compared.
     */
    public double bound(double comparisons, double expectedFailures) {
        long n = data.total();
        if (n == 0 || tail == 0) {
            return 0;
        }
        double excess = comparisons * tail / (n * expectedFailures);
        return StrictMath.pow(10, threshold + scale * StrictMath.log(Math.max(excess, 1)));
    }

    /** One line for reports. */
    public String describe(double comparisons, double expectedFailures) {
        return String.format(Locale.ROOT, "%d compared, median %.3g, 99th percentile %.3g, largest %.3g; tail of %d "
                        + "over 1e%.2f, scale %.3f decades; implied bound %.3g for %.3g comparisons at %.0e expected "
                        + "false failures", data.total(), data.quantile(0.5), data.quantile(0.99), data.max(), tail,
                threshold, scale, bound(comparisons, expectedFailures), comparisons, expectedFailures);
    }
}
