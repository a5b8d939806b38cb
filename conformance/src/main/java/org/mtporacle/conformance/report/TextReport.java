package org.mtporacle.conformance.report;

import org.mtporacle.conformance.compare.ChainMedians;
import org.mtporacle.conformance.compare.GapCalibration;
import org.mtporacle.conformance.compare.GapHistogram;
import org.mtporacle.conformance.compare.NmseCalibration;
import org.mtporacle.conformance.compare.NmseHistogram;
import org.mtporacle.conformance.target.lockstep.TargetTolerance;

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
        return render(r, Layout.of(r, false));
    }

    /** The summary laid out by {@code layout} (column widths, colour). */
    public static String render(ConformReport r, Layout layout) {
        StringBuilder sb = new StringBuilder(header(r, layout));
        r.entries().stream().filter(e -> e.status() != ConformReport.Status.UNAVAILABLE)
                .forEach(e -> sb.append(entryLine(e, layout)));
        return sb.append(footer(r, layout)).toString();
    }

    /**
     * Column widths wide enough for every profile and fixture name to come (so long names such as
     * {@code exec:…} or {@code tiny-moe-q4} keep the columns aligned), and whether {@code FAILED} is coloured (only
     * for a terminal, and not under {@code NO_COLOR}: the caller decides).
     */
    public record Layout(int profileWidth, int fixtureWidth, boolean colour) {
        public static final Layout DEFAULT = new Layout(12, 10, false);

        public static Layout of(java.util.Collection<String> profiles, java.util.Collection<String> fixtures,
                                boolean colour) {
            int p = Math.max(DEFAULT.profileWidth, profiles.stream().mapToInt(s -> l(s).length()).max().orElse(0));
            int f = Math.max(DEFAULT.fixtureWidth, fixtures.stream().mapToInt(s -> l(s).length()).max().orElse(0));
            return new Layout(Math.min(p, 60), Math.min(f, 40), colour);
        }

        public static Layout of(ConformReport r, boolean colour) {
            return of(r.entries().stream().map(ConformReport.Entry::profile).toList(),
                    r.entries().stream().map(ConformReport.Entry::fixture).toList(), colour);
        }

        String failed(String word) {
            return colour ? "\u001b[1;31m" + word + "\u001b[0m" : word;
        }
    }

    /** The campaign line and the column heads. */
    public static String header(ConformReport r) {
        return header(r, Layout.DEFAULT);
    }

    public static String header(ConformReport r, Layout layout) {
        return String.format(Locale.ROOT, "mtp conform: seed %d, %s per entry%s; contexts: %s%n",
                r.seed(), count(r.chains(), "chain", "chains"), l(shardsText(r)), l(r.contexts()))
                + String.format(Locale.ROOT, "%-" + layout.profileWidth() + "s %-" + layout.fixtureWidth()
                        + "s %-9s %-6s %13s %6s %9s %9s  %s%n", "backend", "fixture", "tolerance", "status",
                "chains passed", "ch/s", "worst kv", "near-ties", "numerics");
    }

    /** One entry's line (empty for an unavailable entry: those are listed once per reason by the footer). */
    public static String entryLine(ConformReport.Entry e) {
        return entryLine(e, Layout.DEFAULT);
    }

    public static String entryLine(ConformReport.Entry e, Layout layout) {
        if (e.status() == ConformReport.Status.UNAVAILABLE) {
            return "";
        }
        String status = e.status().name().toLowerCase(Locale.ROOT);
        String statusCell = String.format(Locale.ROOT, "%-6s", status);
        return String.format(Locale.ROOT, "%-" + layout.profileWidth() + "s %-" + layout.fixtureWidth()
                        + "s %-9s %s %13s %6.1f %9.2e %9d  %s%n",
                l(e.profile()), l(e.fixture()), l(e.tolerance().name()), e.status() == ConformReport.Status.FAILED
                        ? layout.failed(statusCell) : statusCell, e.passed() + " of " + e.chainsRun(),
                e.seconds() == 0 ? 0 : e.chainsRun() / e.seconds(), e.worstKvNmse(), e.stats().nearTies(),
                l(e.numerics()))
                + (e.stats().router().compared() == 0 ? "" : String.format(Locale.ROOT,
                "%" + layout.profileWidth() + "s router: %d choices compared, %d near-ties (largest gap %.3g, "
                        + "allowance %.3g)%n", "", e.stats().router().compared(), e.stats().router().nearTies(),
                e.stats().router().maxGap(), routerAllowance(e)));
    }

    /**
     * The router near-tie allowance an entry was held to: a target entry's profile read as {@code TargetTolerance}
     * reads it ({@code bf16}: the target's own router gap, not a quarter of its token gap in logits), else the
     * profile's {@link org.mtporacle.api.Tolerance#routerGap()}.
     */
    static double routerAllowance(ConformReport.Entry e) {
        TargetTolerance target = targetTolerance(e);
        return target != null ? target.routerGap() : e.tolerance().routerGap();
    }

    /**
     * A target (or loop) entry's profile as the target kit read it: {@code bf16} and the calibration run are the
     * target's own, any other is read from the report's thresholds ({@link TargetTolerance#of}); null for a drafter
     * entry.
     */
    static TargetTolerance targetTolerance(ConformReport.Entry e) {
        if (e.fixtureRecipe() == null || !e.fixtureRecipe().startsWith("target preset ")) {
            return null;
        }
        org.mtporacle.api.Tolerance t = e.tolerance();
        if (t.name().equals(TargetTolerance.calibration().name())) {
            return TargetTolerance.calibration();
        }
        if (t.name().equals(TargetTolerance.BF16.name())) {
            return TargetTolerance.BF16;
        }
        return TargetTolerance.of(t);
    }

    /**
     * The thresholds an entry was held to: a drafter entry's profile, or a target entry's as the target kit reads it
     * (its router gap and, for {@code bf16}, its bounds on a chain's median NMSE included).
     */
    private static String toleranceLine(ConformReport.Entry e) {
        TargetTolerance target = targetTolerance(e);
        if (target == null) {
            return "tolerance " + l(e.tolerance().name()) + ": " + l(e.tolerance().thresholds());
        }
        if (target.name().equals(TargetTolerance.calibration().name())) {
            return "tolerance calibration (target): every threshold off";
        }
        return "tolerance " + l(target.name()) + " (target): " + l(target.thresholds());
    }

    /** Unavailable backends, the failures (first few in full), and the verdict. */
    public static String footer(ConformReport r) {
        return footer(r, Layout.DEFAULT);
    }

    public static String footer(ConformReport r, Layout layout) {
        StringBuilder sb = new StringBuilder();
        r.entries().stream().map(TextReport::toleranceLine).distinct().forEach(line -> sb.append(line).append('\n'));
        for (ConformReport.Entry e : r.entries()) {
            String line = nearTieData(e);
            if (line != null) {
                sb.append("near-ties ").append(l(e.key())).append(": ").append(l(line)).append('\n');
            }
            for (String n : nmseData(e)) {
                sb.append("nmse ").append(l(e.key())).append(": ").append(l(n)).append('\n');
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
                sb.append(String.format(Locale.ROOT, "%n%s %s: %s%n", layout.failed("FAILED"), l(e.key()),
                        l(e.reason())));
            }
        }
        List<FailureGroups.Group> groups = FailureGroups.of(r);
        if (!groups.isEmpty()) {
            int total = groups.stream().mapToInt(FailureGroups.Group::size).sum();
            sb.append(String.format(Locale.ROOT, "%nfailures: %s%n", FailureGroups.headline(total, groups.size())));
        }
        for (FailureGroups.Group g : groups.subList(0, Math.min(FULL_FAILURES, groups.size()))) {
            ConformReport.FailureRecord x = g.example().record();
            sb.append(String.format(Locale.ROOT, "%n%s %s: %s: %s%n  %s; shortest: %s%n", layout.failed("FAILED"),
                    l(g.entryKey()), l(g.signature()), count(g.size(), "failure", "failures"), l(x.message()),
                    l(shrunkText(x))));
            sb.append("  chain: ").append(l(String.join("; ", x.shrunkActions()))).append('\n');
            if (!g.places().isEmpty()) {
                sb.append("  differs most at: ").append(l(placesText(g.places(), 4))).append('\n');
            }
            if (x.trace() != null) {
                sb.append("  replay: ").append(l(replayCommand(g.example().entry(), x.trace()))).append('\n');
            }
        }
        if (groups.size() > FULL_FAILURES) {
            List<Failure> rest = new ArrayList<>();
            groups.subList(FULL_FAILURES, groups.size()).forEach(g -> rest.addAll(g.failures()));
            sb.append(String.format(Locale.ROOT, "%n... and %d more distinct failures (%s; all in report.json): %s%n",
                    groups.size() - FULL_FAILURES, count(rest.size(), "failure", "failures"), l(summary(rest))));
        }
        if (!r.missingShards().isEmpty()) {
            sb.append(String.format(Locale.ROOT, "%nPARTIAL: shard%s %s of %d missing (merged with --allow-partial)%n",
                    r.missingShards().size() == 1 ? "" : "s", l(String.join(", ", r.missingShards())),
                    r.plan().shardCount()));
        }
        if (!r.unfinished().isEmpty()) {
            sb.append(String.format(Locale.ROOT, "%nINCOMPLETE: %s had not finished when the run stopped: %s%n",
                    count(r.unfinished().size(), "entry", "entries"), l(String.join(", ", r.unfinished()))));
        }
        long failed = r.entries().stream().filter(e -> e.status() == ConformReport.Status.FAILED).count();
        long unavailable = r.entries().stream().filter(e -> e.status() == ConformReport.Status.UNAVAILABLE).count();
        String verdict = switch (r.verdict()) {
            case PASSED -> "OK";
            case FAILED -> layout.failed("FAILED");
            case UNAVAILABLE -> layout.failed("FAILED") + " (a backend asked for is unavailable)";
        };
        sb.append(String.format(Locale.ROOT, "%n%s: %d of %s passed, %d failed, %d unavailable%n", verdict,
                r.entries().size() - failed - unavailable, count(r.entries().size(), "entry", "entries"), failed,
                unavailable));
        if (r.pooled().isEmpty()) {
            sb.append("reproduce: ").append(l(reproduce(r))).append('\n');
        } else {
            sb.append("reproduce: a pool of ").append(count(r.pooled().size(), "campaign", "campaigns"))
                    .append(" (mtp conform merge --pool), each run again by:\n");
            r.pooled().forEach(c -> sb.append("  ").append(l(c)).append('\n'));
        }
        return sb.toString();
    }

    /** "1 chain", "2 chains". */
    static String count(long n, String one, String many) {
        return n + " " + (n == 1 ? one : many);
    }

    /** "at action 3 of 4 (commit full seed=7), shrunk from 12 actions" */
    static String shrunkText(ConformReport.FailureRecord x) {
        return String.format(Locale.ROOT, "at action %d of %d (%s), shrunk from %s", x.actionIndex(),
                x.shrunkActions().size(), x.shrunkActions().isEmpty() ? "?" : x.shrunkActions().get(Math.max(0,
                        Math.min(x.actionIndex(), x.shrunkActions().size() - 1))),
                count(x.originalLength(), "action", "actions"));
    }

    /** "kv head 1, position 3, dim 0 (40×); …" — at most {@code max} places, then how many more. */
    static String placesText(Map<String, Integer> places, int max) {
        List<String> parts = new ArrayList<>();
        places.entrySet().stream().limit(max).forEach(e -> parts.add(e.getKey() + " (" + e.getValue() + "×)"));
        return String.join("; ", parts) + (places.size() > max ? "; " + (places.size() - max) + " more places" : "");
    }

    /**
     * The command that runs the whole campaign again (every shard in one run): seed, chains, chain length, the
     * backends asked for (none: every backend found) and the fixtures, with the contexts when they are a target's,
     * then the other options that changed what ran ({@link ConformReport.Plan#options}).
     */
    public static String reproduce(ConformReport r) {
        StringBuilder c = new StringBuilder("mtp conform --seed ").append(r.seed()).append(" --chains ")
                .append(r.chains());
        if (r.plan().maxActions() > 0) {
            c.append(" --max-actions ").append(r.plan().maxActions());
        }
        r.plan().backends().forEach(b -> c.append(" --backend ").append(shellWord(b)));
        List<String> fixtures = r.plan().fixtures().isEmpty()
                ? r.entries().stream().map(ConformReport.Entry::fixture).distinct().toList() : r.plan().fixtures();
        fixtures.forEach(f -> c.append(" --fixture ").append(shellWord(f)));
        String contexts = r.contexts() == null ? "" : r.contexts();
        if (contexts.startsWith(TARGET_ROWS)) {
            c.append(" --target");
        } else if (contexts.startsWith(LOOP_CHAINS)) {
            c.append(" --loop").append(contexts.contains("target's pre-norm tap") ? " --tap pre" : "");
        } else if (contexts.startsWith("target")) {
            int tap = contexts.indexOf("(tap ");
            c.append(" --contexts target");
            if (tap >= 0 && contexts.indexOf(')', tap) > tap) {
                c.append(" --tap ").append(shellWord(contexts.substring(tap + 5, contexts.indexOf(')', tap))));
            }
        }
        r.plan().options().forEach(o -> c.append(' ').append(shellWord(o)));
        return c.toString();
    }

    /** How a report of target rows ({@code mtp conform --target}) names its contexts. */
    private static final String TARGET_ROWS = "target rows";

    /** How a report of loop chains ({@code mtp conform --loop}, {@code LoopConform#contexts}) names its contexts. */
    private static final String LOOP_CHAINS = "loop chains";

    /**
     * The command that replays one failure's trace on the entry's own backend: a trace never chooses what runs, so
     * the backend is named ({@code --backend}), and so are the entry's options ({@code --option KEY=VALUE}, sorted):
     * a profile's options ({@code mlx/f32}: {@code precision=f32}) are in the trace ({@code backendOptions}), but
     * target and loop traces written before they were recorded lack them, and a replay without them would run the
     * backend's default profile under the trace's tolerance; the line says what runs either way.
     */
    public static String replayCommand(ConformReport.Entry entry, String trace) {
        StringBuilder c = new StringBuilder("mtp replay --backend ").append(shellWord(entry.backend()));
        new java.util.TreeMap<>(entry.options())
                .forEach((k, v) -> c.append(" --option ").append(shellWord(k + "=" + v)));
        return c.append(' ').append(shellWord(trace)).toString();
    }

    /** A word as a POSIX shell reads it back: bare when plain, else in single quotes. */
    static String shellWord(String s) {
        if (!s.isEmpty() && s.matches("[A-Za-z0-9_@%+=:,./-]+")) {
            return s;
        }
        return "'" + s.replace("'", "'\\''") + "'";
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
     * What an entry's greedy drafts say about its token allowance, in plain words: at how many greedy positions the
     * backend chose another token, the largest reference log-prob gap at which it did, against the allowance, and
     * whether the allowance still suffices for a campaign of {@link GapCalibration#CAMPAIGN_CHAINS} chains like this
     * one ({@link GapCalibration#allowance}: at most {@link GapCalibration#EXPECTED_FALSE_FAILURES} expected false
     * failures); null when the backend never chose another token or the entry has no gap data.
     */
    /**
     * What an entry's recorded NMSE distributions (a target run's, by kind) say about its NMSE bounds: per kind the
     * count, median, 99th percentile and largest value, and the bound a campaign of {@link
     * GapCalibration#CAMPAIGN_CHAINS} chains like this one needs ({@link NmseCalibration}), against the profile's
     * (logits and taps against its hidden NMSE bound, state tensors against its kv NMSE bound, as a target entry's
     * tolerance reads them; a chain's median, {@code median.KIND}, against bf16's bound on a chain's typical NMSE);
     * empty when none were recorded.
     */
    static java.util.List<String> nmseData(ConformReport.Entry e) {
        java.util.List<String> out = new java.util.ArrayList<>();
        if (e.stats() == null || e.chainsRun() == 0) {
            return out;
        }
        e.stats().nmse().forEach((kind, data) -> {
            NmseHistogram h = data == null ? null : data.histogram();
            if (h == null || h.total() == 0) {
                return;
            }
            double comparisons = (double) h.total() / e.chainsRun() * GapCalibration.CAMPAIGN_CHAINS;
            NmseCalibration c = NmseCalibration.of(h);
            double needed = c.bound(comparisons, GapCalibration.EXPECTED_FALSE_FAILURES);
            if (kind.startsWith(ChainMedians.PREFIX)) { // per-chain medians: against bf16's typical bound
                Double typical = TargetTolerance.BF16.typicalNmse().get(kind.substring(ChainMedians.PREFIX.length()));
                out.add(String.format(Locale.ROOT, "%s (per chain, of at least %d comparisons): %s%s", kind,
                        TargetTolerance.TYPICAL_MIN_COMPARISONS,
                        c.describe(comparisons, GapCalibration.EXPECTED_FALSE_FAILURES), typical == null ? ""
                                : String.format(Locale.ROOT, "; %s bf16's bound %.3g on a chain's typical NMSE",
                                needed <= typical ? "the data support" : "the data do not support", typical)));
                return;
            }
            double allowed = kind.equals("logits") || kind.equals("taps") ? e.tolerance().hiddenNmse()
                    : e.tolerance().kvNmse();
            out.add(String.format(Locale.ROOT, "%s: %s; %s the bound %.3g", kind,
                    c.describe(comparisons, GapCalibration.EXPECTED_FALSE_FAILURES),
                    needed <= allowed ? "the data support" : "the data do not support", allowed));
        });
        return out;
    }

    static String nearTieData(ConformReport.Entry e) {
        GapHistogram h = e.stats() == null || e.stats().gaps() == null ? null : e.stats().gaps().histogram();
        if (h == null || h.differing() == 0 || e.chainsRun() == 0) {
            return null;
        }
        double positions = (double) h.positions() / e.chainsRun() * GapCalibration.CAMPAIGN_CHAINS;
        double needed = GapCalibration.of(h).allowance(positions, GapCalibration.EXPECTED_FALSE_FAILURES);
        double allowed = e.tolerance().tokenGap();
        return String.format(Locale.ROOT, "another token at %d of %d greedy draft positions, largest gap %.4f %s the "
                        + "allowance %s; %s (a %,d-chain campaign like this one needs %.4f)", h.differing(),
                h.positions(), h.maxDifferGap(), h.maxDifferGap() <= allowed ? "within" : "past", allowed,
                needed <= allowed ? "the data support the allowance" : "the data do not support the allowance",
                GapCalibration.CAMPAIGN_CHAINS, needed) + (e.stats().nearTies() == h.differing() ? ""
                : String.format(Locale.ROOT, "; the near-ties column (%d) counts every draft within the allowance, "
                        + "seeded-sampling ones too", e.stats().nearTies()));
    }
}
