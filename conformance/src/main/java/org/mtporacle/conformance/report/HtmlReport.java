package org.mtporacle.conformance.report;

import org.mtporacle.api.Tolerance;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * A self-contained {@code report.html} (no script, no external resource): the verdict; one row per backend profile
 * and fixture with, per tensor kind, the worst NMSE drawn against the profile's threshold (green within, red past),
 * and the near-tie gaps as a histogram over the token allowance; unavailable backends once per reason; the first
 * {@link TextReport#FULL_FAILURES} failures in full, each linked to its trace with its replay command, and the rest
 * counted by entry and category.
 */
public final class HtmlReport {
    static final String OK = "#2e7d32";
    static final String BAD = "#c62828";
    private static final String MUTED = "#8a8a8a";
    /** The NMSE axis: log10 from 1e-14 to 1. */
    private static final int LOG_MIN = -14;

    private HtmlReport() {
    }

    /** The report with trace links as they were written (relative to where the command ran). */
    public static String render(ConformReport r) {
        return render(r, null);
    }

    /** The report as written into {@code dir}: trace links relative to it, so the folder can be moved as a whole. */
    public static String render(ConformReport r, Path dir) {
        StringBuilder h = new StringBuilder();
        h.append("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">")
                .append("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">")
                .append("<title>mtp conform: ").append(verdictWord(r)).append("</title><style>").append(CSS)
                .append("</style></head><body>");
        h.append("<header class=\"verdict ").append(verdictClass(r)).append("\"><h1>mtp conform: ")
                .append(verdictWord(r)).append("</h1><p>").append(verdictLine(r)).append("</p></header>");
        h.append("<p class=\"campaign\">Seed <code>").append(r.seed()).append("</code>, ").append(r.chains())
                .append(" chains per entry, chains of at most ").append(r.plan().maxActions() > 0
                        ? r.plan().maxActions() + " actions" : "? actions").append(", ")
                .append(r.plan().shardCount() <= 1 ? "one shard" : r.shards().size() + " of " + r.plan().shardCount()
                        + " shards (" + esc(String.join(", ", r.shards())) + ")")
                .append(". Contexts: ").append(esc(r.contexts())).append(". ").append(esc(r.tool())).append(", ")
                .append(esc(r.created())).append(".</p>");
        if (r.pooled().isEmpty()) {
            h.append("<p class=\"campaign\">Run the whole campaign again: <code class=\"reproduce\">")
                    .append(esc(TextReport.reproduce(r))).append("</code></p>");
        } else {
            h.append("<p class=\"campaign\">A pool of ").append(r.pooled().size()).append(" campaigns (mtp conform "
                    + "merge --pool); run each again:</p><ul class=\"reproduce\">");
            r.pooled().forEach(c -> h.append("<li><code>").append(esc(c)).append("</code></li>"));
            h.append("</ul>");
        }
        if (!r.missingShards().isEmpty()) {
            h.append("<p class=\"warn\">Partial merge: shard").append(r.missingShards().size() == 1 ? " " : "s ")
                    .append(esc(String.join(", ", r.missingShards()))).append(" of ").append(r.plan().shardCount())
                    .append(" missing; the chains they hold were not run.</p>");
        }
        if (!r.unfinished().isEmpty()) {
            h.append("<p class=\"warn\">Incomplete: ").append(r.unfinished().size())
                    .append(r.unfinished().size() == 1 ? " entry" : " entries")
                    .append(" had not finished when the run stopped: ")
                    .append(esc(String.join(", ", r.unfinished()))).append(".</p>");
        }
        entries(h, r);
        unavailable(h, r);
        failures(h, r, dir);
        h.append("<footer>Every entry and every failure is in <code>report.json</code> beside this page. NMSE axis: "
                + "log scale from 1e-14 to 1; a bar at the left edge is 0 (identical). Near-ties: draft positions "
                + "where the backend chose another token whose reference log-prob was within the allowance; the "
                + "histogram spreads their gaps over ten tenths of it.</footer>");
        return h.append("</body></html>\n").toString();
    }

    private static void entries(StringBuilder h, ConformReport r) {
        List<ConformReport.Entry> ran = r.entries().stream()
                .filter(e -> e.status() != ConformReport.Status.UNAVAILABLE).toList();
        if (ran.isEmpty()) {
            h.append("<p class=\"muted\">No entry ran.</p>");
            return;
        }
        h.append("<h2>Entries</h2><div class=\"scroll\"><table class=\"entries\"><thead><tr><th>backend profile</th>")
                .append("<th>fixture</th><th>status</th><th>chains</th><th>tolerance</th>")
                .append("<th>K/V NMSE (worst)</th><th>hidden NMSE (worst)</th><th>near-ties / allowance</th>")
                .append("<th>compared</th></tr></thead><tbody>");
        for (ConformReport.Entry e : ran) {
            ConformReport.Stats s = e.stats();
            Tolerance t = e.tolerance();
            h.append("<tr class=\"").append(e.status()).append("\"><td>").append(esc(e.profile()))
                    .append("</td><td title=\"").append(esc(e.fixtureRecipe())).append("\">").append(esc(e.fixture()))
                    .append("</td><td><span class=\"badge ").append(e.status()).append("\">")
                    .append(e.status().name().toLowerCase(Locale.ROOT)).append("</span></td>")
                    .append(chains(r, e))
                    .append("<td title=\"").append(esc(t.describe())).append("\">").append(esc(t.describe()))
                    .append("</td><td>").append(meter(e.worstKvNmse(), t.kvNmse(), s.comparedCheckpoints()))
                    .append("</td><td>").append(meter(e.worstHiddenNmse(), t.hiddenNmse(), s.comparedCheckpoints()))
                    .append("</td><td>").append(nearTies(s, t.tokenGap(), TextReport.routerAllowance(e), tokenFailures(e)))
                    .append(TextReport.nearTieData(e) == null ? "" : "<div class=\"neartie-data\">"
                            + esc(TextReport.nearTieData(e)) + "</div>").append("</td>")
                    .append(String.format(Locale.ROOT, "<td class=\"muted\">%d tokens<br>%d checkpoints<br>%d bad "
                            + "calls<br>%s</td></tr>", s.comparedTokens(), s.comparedCheckpoints(), s.badCalls(),
                            esc(e.numerics())));
        }
        h.append("</tbody></table></div>");
    }

    /**
     * The worst NMSE of one tensor kind against its threshold: a bar on the log axis, green within the threshold and
     * red past it, the threshold as a dark tick. A threshold of 0 means bit-identical (digests), with no tick.
     */
    static String meter(double worst, double threshold, long checkpoints) {
        int w = 200;
        int hgt = 22;
        boolean over = worst > threshold;
        String colour = over ? BAD : OK;
        StringBuilder s = new StringBuilder(String.format(Locale.ROOT, "<svg class=\"meter\" width=\"%d\" "
                + "height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"worst %s, threshold %s\">"
                + "<rect x=\"0\" y=\"4\" width=\"%d\" height=\"10\" fill=\"#eceff1\"/>", w, hgt, w, hgt,
                number(worst), number(threshold), w));
        double x = axis(worst, w);
        s.append(String.format(Locale.ROOT, "<rect class=\"%s\" x=\"0\" y=\"4\" width=\"%.1f\" height=\"10\" "
                + "fill=\"%s\"/>", over ? "over" : "within", Math.max(3, x), colour));
        if (threshold > 0) {
            double tx = axis(threshold, w);
            s.append(String.format(Locale.ROOT, "<rect class=\"tick\" x=\"%.1f\" y=\"1\" width=\"2\" height=\"16\" "
                    + "fill=\"#263238\"/>", Math.min(w - 2, tx)));
        }
        s.append("</svg><div class=\"meter-text\" style=\"color:").append(colour).append("\">")
                .append(meterText(worst, threshold, checkpoints)).append("</div>");
        return s.toString();
    }

    /**
     * The worst value in words: {@code "0.39, over the threshold 1e-09"}, {@code "2.1e-12, within 1e-09"},
     * {@code "identical (exact)"}, {@code "differs (exact: must be identical)"}.
     */
    static String meterText(double worst, double threshold, long checkpoints) {
        if (checkpoints == 0 && worst == 0) {
            return "no checkpoint compared";
        }
        if (threshold > 0) {
            return (worst == 0 ? "0 (identical)" : number(worst)) + (worst > threshold ? ", over the threshold "
                    : ", within ") + number(threshold);
        }
        return worst > 0 ? number(worst) + ", differs (exact: must be identical)" : "identical (exact)";
    }

    /**
     * "25 of 100 passed", with the rate; for an entry that did not run all the chains of its campaign (a stopped run,
     * a partial merge) also how many of them ran.
     */
    private static String chains(ConformReport r, ConformReport.Entry e) {
        boolean short_ = e.chainsRun() < r.chains() && e.status() != ConformReport.Status.UNAVAILABLE;
        return String.format(Locale.ROOT, "<td class=\"chains\"><b>%d of %d passed</b>%s<br><span class=\"muted\">"
                        + "%.1f chains/s</span></td>", e.passed(), e.chainsRun(), short_ ? "<br><span class=\"warn-text\">"
                        + "only " + e.chainsRun() + " of " + r.chains() + " chains ran</span>" : "",
                e.seconds() == 0 ? 0 : e.chainsRun() / e.seconds());
    }

    /** A 10-bin histogram of near-tie gaps over [0, allowance], and the failures past it in red at the right. */
    static String nearTies(ConformReport.Stats s, double allowance, double routerAllowance, long pastAllowance) {
        if (allowance == 0) {
            return "<span class=\"muted\">exact: no near-tie allowed</span>" + (pastAllowance > 0
                    ? "<div style=\"color:" + BAD + "\">" + pastAllowance + " token failure(s)</div>" : "");
        }
        List<Long> bins = s.nearTieGaps();
        int w = 160;
        int hgt = 34;
        long max = Math.max(1, Math.max(pastAllowance, bins.stream().mapToLong(Long::longValue).max().orElse(0)));
        StringBuilder b = new StringBuilder(String.format(Locale.ROOT, "<svg class=\"hist\" width=\"%d\" height=\"%d\" "
                + "viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"near-tie gaps\">", w + 18, hgt, w + 18, hgt));
        b.append(String.format(Locale.ROOT, "<rect x=\"0\" y=\"%d\" width=\"%d\" height=\"1\" fill=\"#b0bec5\"/>",
                hgt - 1, w));
        int bw = w / Math.max(1, bins.isEmpty() ? 10 : bins.size());
        for (int i = 0; i < bins.size(); i++) {
            double bh = (hgt - 4) * (double) bins.get(i) / max;
            if (bins.get(i) > 0) {
                b.append(String.format(Locale.ROOT, "<rect x=\"%d\" y=\"%.1f\" width=\"%d\" height=\"%.1f\" "
                        + "fill=\"#546e7a\"><title>%d near-ties at %d–%d%% of the allowance</title></rect>",
                        i * bw + 1, hgt - 1 - Math.max(2, bh), bw - 2, Math.max(2, bh), bins.get(i), i * 10,
                        i * 10 + 10));
            }
        }
        b.append(String.format(Locale.ROOT, "<rect class=\"tick\" x=\"%d\" y=\"0\" width=\"2\" height=\"%d\" "
                + "fill=\"#263238\"/>", w, hgt));
        if (pastAllowance > 0) {
            double bh = (hgt - 4) * (double) pastAllowance / max;
            b.append(String.format(Locale.ROOT, "<rect class=\"over\" x=\"%d\" y=\"%.1f\" width=\"12\" height=\"%.1f\" "
                    + "fill=\"%s\"><title>%d draft tokens past the allowance</title></rect>", w + 4,
                    hgt - 1 - Math.max(2, bh), Math.max(2, bh), BAD, pastAllowance));
        }
        b.append("</svg><div class=\"meter-text\">").append(s.nearTies()).append(" near-tie")
                .append(s.nearTies() == 1 ? "" : "s").append(s.nearTies() > 0 ? String.format(Locale.ROOT,
                        ", largest %.0f%% of %s", 100 * s.maxNearTieGap() / allowance, number(allowance))
                        : " (allowance " + number(allowance) + ")")
                .append(pastAllowance > 0 ? "<br><span style=\"color:" + BAD + "\">" + pastAllowance
                        + " past it</span>" : "").append(bins.isEmpty() && s.nearTies() > 0
                        ? "<br><span class=\"muted\">(gaps not recorded)</span>" : "")
                .append(s.router().compared() == 0 ? "" : String.format(Locale.ROOT, "<span class=\"router\">router: "
                        + "%d near-tie%s of %d choices, largest %s (allowance %s)</span>", s.router().nearTies(), s.router().nearTies() == 1
                        ? "" : "s", s.router().compared(), number(s.router().maxGap()), number(routerAllowance)))
                .append("</div>");
        return b.toString();
    }

    private static long tokenFailures(ConformReport.Entry e) {
        return e.failures().stream().filter(f -> f.category().equals("DRAFT_TOKEN")).count();
    }

    private static double axis(double v, int w) {
        if (!(v > 0)) {
            return 0;
        }
        double l = Math.max(LOG_MIN, Math.min(0, Math.log10(v)));
        return w * (l - LOG_MIN) / -LOG_MIN;
    }

    private static void unavailable(StringBuilder h, ConformReport r) {
        Map<String, LinkedHashSet<String>> byReason = new LinkedHashMap<>();
        r.entries().stream().filter(e -> e.status() == ConformReport.Status.UNAVAILABLE)
                .forEach(e -> byReason.computeIfAbsent(e.reason(), k -> new LinkedHashSet<>())
                        .add(e.profile()));
        if (byReason.isEmpty()) {
            return;
        }
        boolean named = !r.plan().backends().isEmpty();
        h.append("<h2>Unavailable</h2><ul class=\"unavailable").append(named ? " named" : "").append("\">");
        byReason.forEach((reason, profiles) -> {
            long fixtures = r.entries().stream().filter(e -> e.status() == ConformReport.Status.UNAVAILABLE
                    && e.reason().equals(reason)).map(ConformReport.Entry::fixture).distinct().count();
            h.append("<li><b>").append(esc(String.join(", ", profiles))).append("</b> (").append(fixtures)
                    .append(fixtures == 1 ? " fixture" : " fixtures").append(named ? ", asked for by name: the run "
                            + "fails" : ", not run").append("): ").append(esc(reason)).append("</li>");
        });
        h.append("</ul>");
    }

    private static void failures(StringBuilder h, ConformReport r, Path dir) {
        List<FailureGroups.Group> groups = FailureGroups.of(r);
        if (groups.isEmpty()) {
            return;
        }
        int total = groups.stream().mapToInt(FailureGroups.Group::size).sum();
        h.append("<h2 class=\"failures\">Failures: ").append(FailureGroups.headline(total, groups.size()))
                .append("</h2>");
        for (FailureGroups.Group g : groups.subList(0, Math.min(TextReport.FULL_FAILURES, groups.size()))) {
            ConformReport.FailureRecord f = g.example().record();
            h.append("<section class=\"fail\"><h3><span class=\"count\">").append(g.size()).append(" ×</span> ")
                    .append(esc(g.entryKey())).append(": <span class=\"signature\">").append(esc(g.signature()))
                    .append("</span></h3>");
            if (!g.places().isEmpty()) {
                h.append("<p class=\"places\">Where the tensor differs most: ")
                        .append(esc(TextReport.placesText(g.places(), 6))).append(".</p>");
            }
            h.append("<p>").append(g.size() == 1 ? "" : "The shortest of them: ").append(esc(f.message()))
                    .append("</p><p>Chain seed <code>").append(f.chainSeed()).append("</code>, shrunk from ")
                    .append(f.originalLength()).append(" to ").append(f.shrunkActions().size())
                    .append(" actions; diverged at action ").append(f.actionIndex()).append(".</p><ol start=\"0\">");
            for (int i = 0; i < f.shrunkActions().size(); i++) {
                h.append(i == f.actionIndex() ? "<li><b>" : "<li>").append(esc(f.shrunkActions().get(i)))
                        .append(i == f.actionIndex() ? "</b></li>" : "</li>");
            }
            h.append("</ol>");
            if (!f.details().isEmpty()) {
                h.append("<table class=\"details\">");
                f.details().forEach((k, v) -> h.append("<tr><th>").append(esc(k)).append("</th><td>")
                        .append(esc(String.valueOf(v))).append("</td></tr>"));
                h.append("</table>");
            }
            if (f.trace() != null) {
                String href = link(f.trace(), dir);
                String name = fileName(f.trace());
                h.append("<p>Trace: ").append(href == null ? "<code>" + esc(name) + "</code> (not a file under the "
                                + "report folder, so not linked)" : "<a href=\"" + esc(href) + "\">" + esc(name) + "</a>")
                        .append(" · replay: <code>").append(esc(TextReport.replayCommand(g.example().entry(), f.trace())))
                        .append("</code></p>");
            }
            if (g.size() > 1) {
                h.append("<p class=\"muted\">The other ").append(g.size() - 1).append(" (chain seeds ")
                        .append(esc(seeds(g, 8))).append(") are in <code>report.json</code> with their traces.</p>");
            }
            h.append("</section>");
        }
        if (groups.size() > TextReport.FULL_FAILURES) {
            List<TextReport.Failure> rest = new java.util.ArrayList<>();
            groups.subList(TextReport.FULL_FAILURES, groups.size()).forEach(g -> rest.addAll(g.failures()));
            h.append("<p class=\"more\">… and ").append(groups.size() - TextReport.FULL_FAILURES)
                    .append(" more distinct failures (").append(rest.size()).append(" in all), by entry and category: ")
                    .append(esc(TextReport.summary(rest))).append(". Each is in <code>report.json</code> with its "
                            + "trace.</p>");
        }
    }

    private static String seeds(FailureGroups.Group g, int max) {
        List<String> s = g.failures().stream().filter(x -> x != g.example()).limit(max)
                .map(x -> Long.toString(x.record().chainSeed())).toList();
        return String.join(", ", s) + (g.size() - 1 > max ? ", …" : "");
    }

    /**
     * A trace path as a relative link from {@code dir} (the report folder; without one, from where the command ran),
     * or null when it is not a relative path to a file under it: an absolute path, {@code ..}, a URL, a name the
     * file system cannot hold. Each segment is percent-encoded, so no link can carry a scheme ({@code javascript:}).
     */
    static String link(String trace, Path dir) {
        Path t;
        try {
            t = Path.of(trace);
        } catch (java.nio.file.InvalidPathException e) {
            return null;
        }
        if (dir != null) {
            Path base = dir.toAbsolutePath().normalize();
            Path abs = t.toAbsolutePath().normalize();
            if (!abs.startsWith(base) || abs.equals(base)) {
                return null;
            }
            t = base.relativize(abs);
        } else if (t.isAbsolute() || t.getRoot() != null) {
            return null;
        }
        List<String> segments = new java.util.ArrayList<>();
        for (Path seg : t.normalize()) {
            String s = seg.toString();
            if (s.isEmpty() || s.equals(".") || s.equals("..")) {
                return null;
            }
            segments.add(java.net.URLEncoder.encode(s, java.nio.charset.StandardCharsets.UTF_8).replace("+", "%20")
                    .replace("%28", "(").replace("%29", ")"));
        }
        return segments.isEmpty() ? null : String.join("/", segments);
    }

    /** The last segment of a trace path as written (no JDK path: the text may not be one here). */
    private static String fileName(String trace) {
        String s = trace;
        while (s.length() > 1 && (s.endsWith("/") || s.endsWith("\\"))) {
            s = s.substring(0, s.length() - 1);
        }
        int cut = Math.max(s.lastIndexOf('/'), s.lastIndexOf('\\'));
        return cut >= 0 && cut < s.length() - 1 ? s.substring(cut + 1) : s;
    }

    private static String verdictWord(ConformReport r) {
        return switch (r.verdict()) {
            case PASSED -> r.isPartial() ? "passed (partial)" : "passed";
            case FAILED -> "failed";
            case UNAVAILABLE -> "backend unavailable";
        };
    }

    private static String verdictClass(ConformReport r) {
        return switch (r.verdict()) {
            case PASSED -> r.isPartial() ? "PARTIAL" : "PASSED";
            case FAILED -> "FAILED";
            case UNAVAILABLE -> "FAILED";
        };
    }

    private static String verdictLine(ConformReport r) {
        long failed = r.entries().stream().filter(e -> e.status() == ConformReport.Status.FAILED).count();
        long unavailable = r.entries().stream().filter(e -> e.status() == ConformReport.Status.UNAVAILABLE).count();
        long passed = r.entries().size() - failed - unavailable;
        String base = passed + " of " + r.entries().size() + " entries passed, " + failed + " failed, " + unavailable
                + " unavailable";
        return switch (r.verdict()) {
            case PASSED -> (failed == 0 && unavailable == 0 ? "All entries passed: " : "") + base + ".";
            case FAILED -> base + ".";
            case UNAVAILABLE -> base + "; a backend asked for by name could not run, so the run fails.";
        };
    }

    private static String number(double v) {
        return v == 0 ? "0" : String.format(Locale.ROOT, "%.2g", v);
    }

    static String esc(String s) {
        return org.mtporacle.api.UntrustedText.html(s);
    }

    static final String CSS = "body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:0 auto;"
            + "max-width:1200px;padding:1.5em;color:#1c2529}h1{margin:0;font-size:1.5em}h2{margin-top:1.6em;"
            + "font-size:1.15em}code{background:#f1f3f4;padding:1px 4px;border-radius:3px;word-break:break-all}"
            + ".verdict{padding:.8em 1.2em;border-radius:6px;color:#fff}.verdict p{margin:.3em 0 0}"
            + ".verdict.PASSED{background:" + OK + "}.verdict.FAILED{background:" + BAD + "}"
            + ".verdict.PARTIAL{background:#ef6c00}.campaign,.muted{color:#5f6b70}.warn{background:#fff3e0;"
            + "border-left:4px solid #ef6c00;padding:.5em 1em}.scroll{overflow-x:auto}"
            + "table{border-collapse:collapse;margin:.5em 0}td,th{border-bottom:1px solid #e0e4e6;padding:6px 8px;"
            + "text-align:left;vertical-align:top}th{background:#f5f7f8;font-weight:600}"
            + "tr.FAILED td:first-child{border-left:4px solid " + BAD + "}"
            + ".badge{display:inline-block;padding:1px 7px;border-radius:9px;font-size:.85em;color:#fff}"
            + ".badge.PASSED{background:" + OK + "}.badge.FAILED{background:" + BAD + "}.badge.UNAVAILABLE{background:"
            + MUTED + "}.meter-text{font-size:.85em;white-space:nowrap}svg{display:block}"
            + ".unavailable li{margin:.3em 0}.unavailable.named li b{color:" + BAD + "}"
            + ".fail{border-left:4px solid " + BAD + ";padding:.2em 1em;margin:1.2em 0;background:#fffafa}"
            + ".fail ol{padding-left:2em}.details th{width:12em}.more{font-style:italic}.fail h3 .count{color:" + BAD
            + "}.warn-text{color:#ef6c00}.neartie-data{font-size:.85em;max-width:22em;color:#37474f;margin-top:.3em}"
            + "table.entries td:first-child{max-width:14em;overflow-wrap:break-word}td.chains,.badge{white-space:nowrap}"
            + ".meter-text .router{white-space:normal;display:block;max-width:18em}"
            + "footer{margin-top:2em;color:#5f6b70;font-size:.85em}";
}
