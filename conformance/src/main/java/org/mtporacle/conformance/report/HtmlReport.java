package org.mtporacle.conformance.report;

import java.util.Locale;
import java.util.Map;

/**
 * A self-contained {@code report.html}: a summary table per backend profile and fixture, each failure with its
 * divergence details and trace, and a small inline SVG plot of the worst checkpoint NMSE against the tolerance.
 */
public final class HtmlReport {
    private HtmlReport() {
    }

    public static String render(ConformReport r) {
        StringBuilder h = new StringBuilder();
        h.append("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>mtp conform report</title>")
                .append("<style>body{font:14px/1.45 system-ui,sans-serif;margin:2em;color:#222}")
                .append("table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;")
                .append("text-align:left}th{background:#f3f3f3}.PASSED{color:#176f2c;font-weight:600}")
                .append(".FAILED{color:#b00020;font-weight:600}.UNAVAILABLE{color:#777}code{background:#f6f6f6;")
                .append("padding:1px 4px}.fail{border-left:4px solid #b00020;padding:0 1em;margin:1.5em 0}</style>")
                .append("</head><body>");
        h.append("<h1>mtp conform</h1><p>").append(esc(r.tool())).append(", ").append(esc(r.created()))
                .append(". Seed <code>").append(r.seed()).append("</code>, ").append(r.chains())
                .append(" chains per entry").append(r.shards().isEmpty() ? "" : ", shards "
                        + esc(String.join(" ", r.shards()))).append(". Contexts: ").append(esc(r.contexts()))
                .append(".</p><p class=\"").append(r.ok() ? "PASSED" : "FAILED").append("\">")
                .append(r.ok() ? "All entries passed." : "Some entries failed.").append("</p>");
        h.append("<table><tr><th>backend profile</th><th>fixture</th><th>status</th><th>chains passed</th>")
                .append("<th>chains/s</th><th>tolerance</th><th>max NMSE K/V</th><th>max NMSE hidden</th>")
                .append("<th>near-ties (max gap)</th><th>tokens / checkpoints / bad calls compared</th>")
                .append("<th>numerics</th></tr>");
        for (ConformReport.Entry e : r.entries()) {
            h.append("<tr><td>").append(esc(e.profile())).append("</td><td title=\"").append(esc(e.fixtureRecipe()))
                    .append("\">").append(esc(e.fixture())).append("</td><td class=\"").append(e.status()).append("\">")
                    .append(e.status().name().toLowerCase()).append("</td>");
            if (e.status() == ConformReport.Status.UNAVAILABLE) {
                h.append("<td colspan=\"8\">").append(esc(e.reason())).append("</td></tr>");
                continue;
            }
            ConformReport.Stats s = e.stats();
            h.append(String.format(Locale.ROOT, "<td>%d / %d</td><td>%.1f</td><td>%s</td><td>%.2e</td><td>%.2e</td>"
                            + "<td>%d (%.3g)</td><td>%d / %d / %d</td><td>%s</td></tr>", e.passed(), e.chainsRun(),
                    e.seconds() == 0 ? 0 : e.chainsRun() / e.seconds(), esc(e.tolerance().describe()), s.maxKvNmse(),
                    s.maxHiddenNmse(), s.nearTies(), s.maxNearTieGap(), s.comparedTokens(), s.comparedCheckpoints(),
                    s.badCalls(), esc(e.numerics())));
        }
        h.append("</table>");
        h.append("<h2>Worst checkpoint NMSE against the tolerance</h2>").append(plot(r));
        for (ConformReport.Entry e : r.entries()) {
            for (ConformReport.FailureRecord f : e.failures()) {
                h.append("<div class=\"fail\"><h3>").append(esc(e.key())).append(": ").append(esc(f.category()))
                        .append("</h3><p>").append(esc(f.message())).append("</p><p>Chain seed <code>")
                        .append(f.chainSeed()).append("</code>, shrunk from ").append(f.originalLength())
                        .append(" to ").append(f.shrunkActions().size()).append(" actions; diverged at action ")
                        .append(f.actionIndex()).append(".</p><ol start=\"0\">");
                for (int i = 0; i < f.shrunkActions().size(); i++) {
                    h.append(i == f.actionIndex() ? "<li><b>" : "<li>").append(esc(f.shrunkActions().get(i)))
                            .append(i == f.actionIndex() ? "</b></li>" : "</li>");
                }
                h.append("</ol><table>");
                for (Map.Entry<String, Object> d : f.details().entrySet()) {
                    h.append("<tr><th>").append(esc(d.getKey())).append("</th><td>").append(esc(String.valueOf(
                            d.getValue()))).append("</td></tr>");
                }
                h.append("</table>");
                if (f.trace() != null) {
                    h.append("<p>Replay: <code>mtp replay ").append(esc(f.trace())).append("</code></p>");
                }
                h.append("</div>");
            }
        }
        return h.append("</body></html>\n").toString();
    }

    /** Horizontal bars on a log10 axis from 1e-16 to 1: K/V NMSE, hidden NMSE, and the tolerance marks. */
    private static String plot(ConformReport r) {
        int row = 22;
        int left = 230;
        int width = 480;
        var entries = r.entries().stream().filter(e -> e.status() != ConformReport.Status.UNAVAILABLE).toList();
        int height = 30 + entries.size() * 2 * row;
        StringBuilder s = new StringBuilder();
        s.append(String.format(Locale.ROOT, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                + "font-size=\"11\">", left + width + 20, height));
        for (int e = -16; e <= 0; e += 4) {
            double x = left + width * (e + 16) / 16.0;
            s.append(String.format(Locale.ROOT, "<line x1=\"%.1f\" y1=\"14\" x2=\"%.1f\" y2=\"%d\" stroke=\"#ddd\"/>"
                    + "<text x=\"%.1f\" y=\"11\" text-anchor=\"middle\">1e%d</text>", x, x, height, x, e));
        }
        int y = 22;
        for (ConformReport.Entry e : entries) {
            y = bar(s, y, left, width, row, e.key() + " K/V", e.stats().maxKvNmse(), e.tolerance().kvNmse());
            y = bar(s, y, left, width, row, e.key() + " hidden", e.stats().maxHiddenNmse(),
                    e.tolerance().hiddenNmse());
        }
        return s.append("</svg><p>Bars: worst NMSE seen (0 is drawn at 1e-16); red marks: the tolerance.</p>")
                .toString();
    }

    private static int bar(StringBuilder s, int y, int left, int width, int row, String label, double v, double tol) {
        double x = left + width * (Math.max(-16, Math.log10(Math.max(v, 1e-16))) + 16) / 16.0;
        s.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>"
                + "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"#4a7bd0\"/>", left - 6, y + 12,
                esc(label), left, y + 2, x - left, row - 8));
        if (tol > 0) {
            double tx = left + width * (Math.max(-16, Math.log10(tol)) + 16) / 16.0;
            s.append(String.format(Locale.ROOT, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#b00020\" "
                    + "stroke-width=\"2\"/>", tx, y, tx, y + row - 4));
        }
        return y + row;
    }

    static String esc(String s) {
        return org.mtporacle.api.UntrustedText.html(s);
    }
}
