package org.mtporacle.conformance.compare;

import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * The NMSEs one chain compared, by kind, and their median: a chain's typical NMSE (conformance/SPEC.md "A chain's
 * typical NMSE"). A per-comparison bound must sit past a conforming engine's rarest comparison, so a bug that shifts
 * every comparison by a factor of 100 can stay under it; the median of a chain's comparisons sits far below its
 * largest, and its spread over chains is narrow, so a bound on it sees such a shift. A median of fewer than {@code
 * min} comparisons is not judged (nor recorded): a short chain's median is as noisy as one comparison.
 */
public final class ChainMedians {
    /** The prefix of a recorded per-chain median's kind in a report's {@code stats.nmse} ({@code median.keys}). */
    public static final String PREFIX = "median.";

    private final Map<String, double[]> values = new LinkedHashMap<>();
    private final Map<String, Integer> counts = new LinkedHashMap<>();

    /** Counts one comparison's NMSE of {@code kind}; NaN counts as the largest value. */
    public void add(String kind, double nmse) {
        double[] v = values.computeIfAbsent(kind, k -> new double[16]);
        int n = counts.getOrDefault(kind, 0);
        if (n == v.length) {
            v = Arrays.copyOf(v, 2 * n);
            values.put(kind, v);
        }
        v[n] = Double.isNaN(nmse) ? Double.POSITIVE_INFINITY : nmse;
        counts.put(kind, n + 1);
    }

    /** The comparisons of {@code kind} so far. */
    public int count(String kind) {
        return counts.getOrDefault(kind, 0);
    }

    /** The median of {@code kind}'s comparisons (the mean of the middle two for an even count); 0 when none. */
    public double median(String kind) {
        int n = count(kind);
        if (n == 0) {
            return 0;
        }
        double[] v = Arrays.copyOf(values.get(kind), n);
        Arrays.sort(v);
        return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    }

    /** Adds each kind's median with at least {@code min} comparisons to {@code into}'s {@code median.KIND}. */
    public void recordInto(Map<String, NmseHistogram> into, int min) {
        counts.forEach((kind, n) -> {
            if (n >= min) {
                into.computeIfAbsent(PREFIX + kind, k -> new NmseHistogram()).add(median(kind));
            }
        });
    }

    /** A kind whose median broke its bound. */
    public record Excess(String kind, double median, int comparisons, double bound) {
        /** One line: "typical keys NMSE 3.7e-03 (median of 20 comparisons) > 1.0e-03". */
        public String describe() {
            return String.format(Locale.ROOT, "typical %s NMSE %.3g (the median of the chain's %d comparisons) > %.3g",
                    kind, median, comparisons, bound);
        }
    }

    /**
     * The first kind (in the order first compared) with at least {@code min} comparisons whose median exceeds its
     * bound in {@code bounds} (a kind without one is not judged); null when none does.
     */
    public Excess judge(Map<String, Double> bounds, int min) {
        for (Map.Entry<String, Integer> e : counts.entrySet()) {
            Double bound = bounds.get(e.getKey());
            if (bound == null || e.getValue() < min) {
                continue;
            }
            double m = median(e.getKey());
            if (!(m <= bound)) {
                return new Excess(e.getKey(), m, e.getValue(), bound);
            }
        }
        return null;
    }
}
