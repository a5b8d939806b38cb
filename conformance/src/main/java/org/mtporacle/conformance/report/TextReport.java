package org.mtporacle.conformance.report;

import org.mtporacle.conformance.compare.GapCalibration;
import org.mtporacle.conformance.compare.GapHistogram;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import org.mtporacle.api.UntrustedText;

/**
 * The console summary of a report: a header, one line per entry (printable as each entry finishes), then the
 * unavailable backends once per reason, the first {@link #FULL_FAILURES} failures in full with their replay command,
 * the rest counted by entry and category (all of them are in report.json), and the verdict.
 */
public final class TextReport {
    /** Failures shown in full on the console and in report.html; the rest are summarised. */
    public static final int FULL_FAILURES = 5;

    private TextReport() {
    }

    public static String render(ConformReport r) {
        StringBuilder sb = new StringBuilder(header(r));
        r.entries().stream().filter(e -> e.status() != ConformReport.Status.UNAVAILABLE)
                .forEach(e -> sb.append(entryLine(e)));
        return sb.append(footer(r)).toString();
    }

    /** The campaign line and the column heads. */
    public static String header(ConformReport r) {
        return String.format(Locale.ROOT, "mtp conform: seed %d, %d chains per entry%s; contexts: %s%n",
                r.seed(), r.chains(), l(shardsText(r)), l(r.contexts()))
                + String.format(Locale.ROOT, "%-22s %-18s %-9s %-11s %9s %8s %10s %10s  %s%n", "backend", "fixture",
                "tolerance", "status", "chains", "ch/s", "max kv", "near-ties", "numerics");
    }

    /** One entry's line (empty for an unavailable entry: those are listed once per reason by the footer). */
    public static String entryLine(ConformReport.Entry e) {
        if (e.status() == ConformReport.Status.UNAVAILABLE) {
            return "";
        }
        return String.format(Locale.ROOT, "%-22s %-18s %-9s %-11s %4d/%-4d %8.1f %10.2e %10d  %s%n",
                l(e.profile()), l(e.fixture()), l(e.tolerance().name()), e.status().name().toLowerCase(Locale.ROOT), e.passed(),
                e.chainsRun(), e.seconds() == 0 ? 0 : e.chainsRun() / e.seconds(), e.stats().maxKvNmse(),
                e.stats().nearTies(), l(e.numerics()))
                + (e.stats().router().compared() == 0 ? "" : String.format(Locale.ROOT,
                "%-22s router: %d choices compared, %d near-ties (max gap %.3g, allowance %.3g)%n", "",
                e.stats().router().compared(), e.stats().router().nearTies(), e.stats().router().maxGap(),
                e.tolerance().routerGap()));
    }

    /** Unavailable backends, the failures (first few in full), and the verdict. */
    public static String footer(ConformReport r) {
        StringBuilder sb = new StringBuilder();
        r.entries().stream().map(ConformReport.Entry::tolerance).distinct().forEach(t -> sb.append(String.format(Locale.ROOT,
                        "tolerance %s: %s%n", l(t.name()), l(String.valueOf(t.thresholds())))));
        for (ConformReport.Entry e : r.entries()) {
            String line = nearTieData(e);
            if (line != null) {
                sb.append("near-tie data ").append(l(e.key())).append(": ").append(l(line)).append('\n');
            }
        }
        Map<String, LinkedHashSet<String>> unavailableBy = new LinkedHashMap<>();
        for (ConformReport.Entry e : r.entries()) {
            if (e.status() == ConformReport.Status.UNAVAILABLE) {
                unavailableBy.computeIfAbsent(e.reason(), k -> new LinkedHashSet<>()).add(e.profile());
            }
        }
        String note = r.plan().backends().isEmpty() ? "unavailable, not run" : "asked for but unavailable (the run "
                + "fails)";
        unavailableBy.forEach((reason, profiles) -> sb.append(String.format(Locale.ROOT,
                "%s: %s: %s%n", l(String.join(", ", profiles)), note, l(reason))));
        for (ConformReport.Entry e : r.entries()) { // an entry that failed before any chain (load), with why
            if (e.status() == ConformReport.Status.FAILED && e.reason() != null && !e.reason().isEmpty()) {
                sb.append(String.format(Locale.ROOT, "%nFAILED %s: %s%n", l(e.key()), l(e.reason())));
            }
        }
        List<Failure> all = failures(r);
        for (Failure f : all.subList(0, Math.min(FULL_FAILURES, all.size()))) {
            ConformReport.FailureRecord x = f.record();
            sb.append(String.format(Locale.ROOT, "%nFAILED %s: %s: %s%n  at action %d of %d (%s), shrunk from %d "
                            + "actions%n", l(f.entry().key()), l(x.category()), l(x.message()), x.actionIndex(),
                    x.shrunkActions().size(), x.shrunkActions().isEmpty() ? "?"
                            : l(x.shrunkActions().get(Math.max(0, Math.min(x.actionIndex(),
                            x.shrunkActions().size() - 1)))),
                    x.originalLength()));
            sb.append("  chain: ").append(l(String.join("; ", x.shrunkActions()))).append('\n');
            if (x.trace() != null) {
                sb.append("  replay: mtp replay ").append(l(x.trace())).append('\n');
            }
        }
        if (all.size() > FULL_FAILURES) {
            sb.append(String.format(Locale.ROOT, "%n... and %d more failures (all in report.json): %s%n",
                    all.size() - FULL_FAILURES, l(summary(all.subList(FULL_FAILURES, all.size())))));
        }
        if (!r.missingShards().isEmpty()) {
            sb.append(String.format(Locale.ROOT, "%nPARTIAL: shard%s %s of %d missing (merged with --allow-partial)%n",
                    r.missingShards().size() == 1 ? "" : "s", l(String.join(", ", r.missingShards())),
                    r.plan().shardCount()));
        }
        if (!r.unfinished().isEmpty()) {
            sb.append(String.format(Locale.ROOT, "%nINCOMPLETE: %d entr%s had not finished when the run stopped: %s%n",
                    r.unfinished().size(), r.unfinished().size() == 1 ? "y" : "ies",
                    l(String.join(", ", r.unfinished()))));
        }
        long failed = r.entries().stream().filter(e -> e.status() == ConformReport.Status.FAILED).count();
        long unavailable = r.entries().stream().filter(e -> e.status() == ConformReport.Status.UNAVAILABLE).count();
        String verdict = switch (r.verdict()) {
            case PASSED -> "OK";
            case FAILED -> "FAILED";
            case UNAVAILABLE -> "FAILED (a backend asked for is unavailable)";
        };
        sb.append(String.format(Locale.ROOT, "%n%s: %d entries passed, %d failed, %d unavailable%n", verdict,
                r.entries().size() - failed - unavailable, failed, unavailable));
        return sb.toString();
    }

    /** A failure with its entry, in report order. */
    public record Failure(ConformReport.Entry entry, ConformReport.FailureRecord record) {
    }

    public static List<Failure> failures(ConformReport r) {
        List<Failure> out = new ArrayList<>();
        r.entries().forEach(e -> e.failures().forEach(f -> out.add(new Failure(e, f))));
        return out;
    }

    /** "mlx/native @ tiny: 30 LOGPROB, 6 DRAFT_TOKEN; …" */
    public static String summary(List<Failure> rest) {
        Map<String, Map<String, Integer>> by = new LinkedHashMap<>();
        rest.forEach(f -> by.computeIfAbsent(f.entry().key(), k -> new LinkedHashMap<>())
                .merge(f.record().category(), 1, Integer::sum));
        List<String> parts = new ArrayList<>();
        by.forEach((k, cats) -> {
            List<String> c = new ArrayList<>();
            cats.forEach((cat, n) -> c.add(n + " " + cat));
            parts.add(k + ": " + String.join(", ", c));
        });
        return String.join("; ", parts);
    }

    /** Report strings may come from a shard's report.json: one line each, whatever they hold. */
    private static String l(String s) {
        return UntrustedText.line(s);
    }

    static String shardsText(ConformReport r) {
        if (r.plan().shardCount() <= 1 && r.shards().size() <= 1) {
            return "";
        }
        return ", shard" + (r.shards().size() == 1 ? " " : "s ") + String.join(" ", r.shards());
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
