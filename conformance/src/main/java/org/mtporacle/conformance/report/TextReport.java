package org.mtporacle.conformance.report;

import org.mtporacle.conformance.compare.GapCalibration;
import org.mtporacle.conformance.compare.GapHistogram;

import java.util.Locale;

/** The console summary of a report: one line per entry, then each failure with its divergence and trace. */
public final class TextReport {
    private TextReport() {
    }

    public static String render(ConformReport r) {
        StringBuilder sb = new StringBuilder();
        sb.append(String.format(Locale.ROOT, "mtp conform: seed %d, %d chains per entry%s; contexts: %s%n", r.seed(),
                r.chains(), r.shards().isEmpty() ? "" : ", shards " + String.join(" ", r.shards()), r.contexts()));
        sb.append(String.format(Locale.ROOT, "%-22s %-10s %-9s %-11s %9s %8s %10s %10s  %s%n", "backend", "fixture",
                "tolerance", "status", "chains", "ch/s", "max kv", "near-ties", "numerics"));
        java.util.Map<String, java.util.List<String>> unavailableBy = new java.util.LinkedHashMap<>();
        for (ConformReport.Entry e : r.entries()) {
            if (e.status() == ConformReport.Status.UNAVAILABLE) {
                unavailableBy.computeIfAbsent(e.reason(), k -> new java.util.ArrayList<>()).add(e.profile());
                continue;
            }
            sb.append(String.format(Locale.ROOT, "%-22s %-10s %-9s %-11s %4d/%-4d %8.1f %10.2e %10d  %s%n",
                    e.profile(), e.fixture(), e.tolerance().name(), e.status().name().toLowerCase(), e.passed(),
                    e.chainsRun(), e.seconds() == 0 ? 0 : e.chainsRun() / e.seconds(), e.stats().maxKvNmse(),
                    e.stats().nearTies(), e.numerics()));
        }
        r.entries().stream().map(ConformReport.Entry::tolerance).distinct().forEach(t -> sb.append(String.format(
                Locale.ROOT, "tolerance %s: %s%n", t.name(), t.thresholds())));
        for (ConformReport.Entry e : r.entries()) {
            String line = nearTieData(e);
            if (line != null) {
                sb.append("near-tie data ").append(e.key()).append(": ").append(line).append('\n');
            }
        }
        unavailableBy.forEach((reason, profiles) -> sb.append(String.format(Locale.ROOT, "%s: unavailable, not run: %s%n",
                String.join(", ", new java.util.LinkedHashSet<>(profiles)), reason)));
        for (ConformReport.Entry e : r.entries()) {
            for (ConformReport.FailureRecord f : e.failures()) {
                sb.append(String.format(Locale.ROOT, "%nFAILED %s: %s: %s%n  at action %d of %d (%s), shrunk from %d "
                                + "actions%n", e.key(), f.category(), f.message(), f.actionIndex(),
                        f.shrunkActions().size(), f.shrunkActions().isEmpty() ? "?"
                                : f.shrunkActions().get(Math.min(f.actionIndex(), f.shrunkActions().size() - 1)),
                        f.originalLength()));
                sb.append("  chain: ").append(String.join("; ", f.shrunkActions())).append('\n');
                if (f.trace() != null) {
                    sb.append("  replay: mtp replay ").append(f.trace()).append('\n');
                }
            }
        }
        long failed = r.entries().stream().filter(e -> e.status() == ConformReport.Status.FAILED).count();
        long unavailable = r.entries().stream().filter(e -> e.status() == ConformReport.Status.UNAVAILABLE).count();
        sb.append(String.format(Locale.ROOT, "%n%s: %d entries passed, %d failed, %d unavailable%n",
                failed == 0 ? "OK" : "FAILED", r.entries().size() - failed - unavailable, failed, unavailable));
        return sb.toString();
    }

    /**
     * What an entry's greedy gaps imply ({@link GapCalibration}) for a campaign of
     * {@link GapCalibration#CAMPAIGN_CHAINS} chains like it; null when the backend never differed or the entry has no
     * gap data.
     */
    static String nearTieData(ConformReport.Entry e) {
        GapHistogram h = e.stats() == null || e.stats().gaps() == null ? null : e.stats().gaps().histogram();
        if (h == null || h.differing() == 0 || e.chainsRun() == 0) {
            return null;
        }
        double positions = (double) h.positions() / e.chainsRun() * GapCalibration.CAMPAIGN_CHAINS;
        return GapCalibration.of(h).describe(positions, GapCalibration.EXPECTED_FALSE_FAILURES)
                + String.format(Locale.ROOT, " (%d chains; profile allows %s)", GapCalibration.CAMPAIGN_CHAINS,
                e.tolerance().tokenGap());
    }
}
