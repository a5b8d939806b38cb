package org.mtporacle.conformance.report;

import java.util.Locale;

import org.mtporacle.api.UntrustedText;

/** The console summary of a report: one line per entry, then each failure with its divergence and trace. */
public final class TextReport {
    private TextReport() {
    }

    public static String render(ConformReport r) {
        StringBuilder sb = new StringBuilder();
        sb.append(String.format(Locale.ROOT, "mtp conform: seed %d, %d chains per entry%s; contexts: %s%n", r.seed(),
                r.chains(), r.shards().isEmpty() ? "" : ", shards " + l(String.join(" ", r.shards())), l(r.contexts())));
        sb.append(String.format(Locale.ROOT, "%-22s %-10s %-9s %-11s %9s %8s %10s %10s  %s%n", "backend", "fixture",
                "tolerance", "status", "chains", "ch/s", "max kv", "near-ties", "numerics"));
        java.util.Map<String, java.util.List<String>> unavailableBy = new java.util.LinkedHashMap<>();
        for (ConformReport.Entry e : r.entries()) {
            if (e.status() == ConformReport.Status.UNAVAILABLE) {
                unavailableBy.computeIfAbsent(e.reason(), k -> new java.util.ArrayList<>()).add(e.profile());
                continue;
            }
            sb.append(String.format(Locale.ROOT, "%-22s %-10s %-9s %-11s %4d/%-4d %8.1f %10.2e %10d  %s%n",
                    l(e.profile()), l(e.fixture()), l(e.tolerance().name()), e.status().name().toLowerCase(), e.passed(),
                    e.chainsRun(), e.seconds() == 0 ? 0 : e.chainsRun() / e.seconds(), e.stats().maxKvNmse(),
                    e.stats().nearTies(), l(e.numerics())));
        }
        r.entries().stream().map(ConformReport.Entry::tolerance).distinct().forEach(t -> sb.append(String.format(
                Locale.ROOT, "tolerance %s: %s%n", l(t.name()), l(String.valueOf(t.thresholds())))));
        unavailableBy.forEach((reason, profiles) -> sb.append(String.format(Locale.ROOT, "%s: unavailable, not run: %s%n",
                l(String.join(", ", new java.util.LinkedHashSet<>(profiles))), l(reason))));
        for (ConformReport.Entry e : r.entries()) {
            for (ConformReport.FailureRecord f : e.failures()) {
                sb.append(String.format(Locale.ROOT, "%nFAILED %s: %s: %s%n  at action %d of %d (%s), shrunk from %d "
                                + "actions%n", l(e.key()), l(f.category()), l(f.message()), f.actionIndex(),
                        f.shrunkActions().size(), f.shrunkActions().isEmpty() ? "?"
                                : l(f.shrunkActions().get(Math.max(0, Math.min(f.actionIndex(),
                                f.shrunkActions().size() - 1)))),
                        f.originalLength()));
                sb.append("  chain: ").append(l(String.join("; ", f.shrunkActions()))).append('\n');
                if (f.trace() != null) {
                    sb.append("  replay: mtp replay ").append(l(f.trace())).append('\n');
                }
            }
        }
        long failed = r.entries().stream().filter(e -> e.status() == ConformReport.Status.FAILED).count();
        long unavailable = r.entries().stream().filter(e -> e.status() == ConformReport.Status.UNAVAILABLE).count();
        sb.append(String.format(Locale.ROOT, "%n%s: %d entries passed, %d failed, %d unavailable%n",
                failed == 0 ? "OK" : "FAILED", r.entries().size() - failed - unavailable, failed, unavailable));
        return sb.toString();
    }

    /** Report strings may come from a shard's report.json: one line each, whatever they hold. */
    private static String l(String s) {
        return UntrustedText.line(s);
    }
}
