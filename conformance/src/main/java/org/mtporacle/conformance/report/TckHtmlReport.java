package org.mtporacle.conformance.report;

import org.mtporacle.api.UntrustedText;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The {@code report.html} of {@code mtp tck}, in the look of {@link HtmlReport}: the verdict in a coloured header, the
 * subject and its fixtures, then the failed rules, the skipped ones and the passed ones, each group in spec order
 * ({@code required_s5_8_…} before {@code required_s10_1_6_…}), each failure with its full message.
 */
public final class TckHtmlReport {
    private static final Pattern SECTION = Pattern.compile("_s(\\d+(?:_\\d+)*)_");

    private TckHtmlReport() {
    }

    /** One rule's outcome: its method name, its title, PASSED, FAILED or SKIPPED, the message and its seconds. */
    public record Rule(String rule, String title, String status, String message, double seconds) {
    }

    /**
     * The page.
     *
     * @param backend     the backend's name
     * @param description what the backend says it is
     * @param profile     the profile's label, options and tolerance, as one line
     * @param fixtures    the fixtures and contexts, as one line
     * @param rules       every rule's outcome, in any order
     */
    public static String render(String backend, String description, String profile, String fixtures,
                                List<Rule> rules, String problem) {
        long failed = rules.stream().filter(r -> r.status().equals("FAILED")).count();
        long passed = rules.stream().filter(r -> r.status().equals("PASSED")).count();
        long skipped = rules.size() - failed - passed;
        String word = failed == 0 ? "passed" : "failed";
        StringBuilder h = new StringBuilder("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
                + "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>mtp tck: ")
                .append(esc(backend)).append(": ").append(word).append("</title><style>").append(HtmlReport.CSS)
                .append(CSS).append("</style></head><body>");
        h.append("<header class=\"verdict ").append(failed == 0 ? "PASSED" : "FAILED").append("\"><h1>mtp tck: ")
                .append(esc(backend)).append(": ").append(word).append("</h1><p>").append(passed).append(" of ")
                .append(rules.size()).append(rules.size() == 1 ? " rule" : " rules").append(" passed, ")
                .append(failed).append(" failed, ").append(skipped).append(" skipped.</p></header>");
        h.append("<p class=\"campaign\">").append(esc(description)).append("<br>Profile ").append(esc(profile))
                .append(". Fixtures: ").append(esc(fixtures)).append(".</p>");
        if (problem != null && !problem.isEmpty()) {
            h.append("<p class=\"warn\">The TCK class ").append(esc(problem)).append("</p>");
        }
        for (String status : List.of("FAILED", "SKIPPED", "PASSED")) {
            List<Rule> these = inSpecOrder(rules.stream().filter(r -> r.status().equals(status)).toList());
            if (these.isEmpty()) {
                continue;
            }
            h.append("<h2 class=\"").append(status).append("\">").append(switch (status) {
                case "FAILED" -> "Failed";
                case "SKIPPED" -> "Skipped";
                default -> "Passed";
            }).append(" (").append(these.size()).append(")</h2><div class=\"scroll\"><table class=\"rules ")
                    .append(status).append("\"><thead><tr><th>§</th><th>rule</th><th>what it checks</th>")
                    .append("<th>status</th><th>s</th>").append(status.equals("PASSED") ? "" : "<th>message</th>")
                    .append("</tr></thead><tbody>");
            for (Rule r : these) {
                h.append("<tr class=\"").append(status).append("\"><td class=\"section\">").append(esc(section(r.rule())))
                        .append("</td><td><code>").append(esc(r.rule())).append("</code></td><td>")
                        .append(esc(r.title())).append("</td><td><span class=\"badge ").append(status).append("\">")
                        .append(status.toLowerCase(Locale.ROOT)).append("</span></td><td>")
                        .append(String.format(Locale.ROOT, "%.1f", r.seconds())).append("</td>");
                if (!status.equals("PASSED")) {
                    h.append("<td><pre>").append(UntrustedText.htmlLines(r.message())).append("</pre></td>");
                }
                h.append("</tr>");
            }
            h.append("</tbody></table></div>");
        }
        return h.append("<footer>Every rule is in <code>report.json</code> beside this page; rules are named after "
                + "the spec sections they check (conformance/spec/mtp-behavior.md).</footer></body></html>\n")
                .toString();
    }

    /** Rules sorted by the spec section in their names ({@code _s10_1_6_} → 10.1.6), numerically; unnamed last. */
    public static List<Rule> inSpecOrder(List<Rule> rules) {
        List<Rule> out = new ArrayList<>(rules);
        out.sort(Comparator.comparing((Rule r) -> sectionNumbers(r.rule()), TckHtmlReport::compareSections)
                .thenComparing(Rule::rule));
        return out;
    }

    /** "§10.1.6" from {@code required_s10_1_6_rollbackIsTraceFree}; empty when the name cites no section. */
    static String section(String rule) {
        int[] n = sectionNumbers(rule);
        if (n.length == 0) {
            return "";
        }
        StringBuilder s = new StringBuilder("§");
        for (int i = 0; i < n.length; i++) {
            s.append(i == 0 ? "" : ".").append(n[i]);
        }
        return s.toString();
    }

    private static int[] sectionNumbers(String rule) {
        Matcher m = SECTION.matcher(rule == null ? "" : rule);
        if (!m.find()) {
            return new int[0];
        }
        String[] parts = m.group(1).split("_");
        int[] n = new int[parts.length];
        for (int i = 0; i < parts.length; i++) {
            try {
                n[i] = Integer.parseInt(parts[i]);
            } catch (NumberFormatException e) {
                n[i] = Integer.MAX_VALUE;
            }
        }
        return n;
    }

    private static int compareSections(int[] a, int[] b) {
        if (a.length == 0 || b.length == 0) {
            return Boolean.compare(a.length == 0, b.length == 0); // a name with no section sorts last
        }
        int c = java.util.Arrays.compare(a, b);
        return c;
    }

    private static String esc(String s) {
        return UntrustedText.html(s);
    }

    private static final String CSS = "td.section{white-space:nowrap;color:#5f6b70}table.rules{width:100%}"
            + "table.rules pre{white-space:pre-wrap;margin:0;font-size:.9em}h2.FAILED{color:" + HtmlReport.BAD + "}"
            + ".badge.SKIPPED{background:#8a8a8a}";
}
