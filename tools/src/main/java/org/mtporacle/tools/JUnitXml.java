package org.mtporacle.tools;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;

/**
 * {@code --junit FILE}: a run's outcome as JUnit XML (the Ant/Surefire schema that CI dashboards read): one
 * {@code testsuite}, one {@code testcase} per TCK rule or conform entry, with {@code failure} and {@code skipped}.
 */
final class JUnitXml {
    private JUnitXml() {
    }

    /** One test case. {@code status} is PASSED, FAILED or anything else (skipped); {@code message} may be empty. */
    record Case(String className, String name, String status, String message, double seconds) {
    }

    /** Writes {@code cases} as the suite {@code suite} to {@code file} (its folder created). */
    static void write(Path file, String suite, List<Case> cases, double seconds) {
        long failures = cases.stream().filter(c -> c.status().equals("FAILED")).count();
        long skipped = cases.stream().filter(c -> !c.status().equals("FAILED") && !c.status().equals("PASSED"))
                .count();
        StringBuilder sb = new StringBuilder("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        sb.append(String.format(Locale.ROOT, "<testsuite name=\"%s\" tests=\"%d\" failures=\"%d\" errors=\"0\" "
                + "skipped=\"%d\" time=\"%.3f\">%n", attr(suite), cases.size(), failures, skipped, seconds));
        for (Case c : cases) {
            sb.append(String.format(Locale.ROOT, "  <testcase classname=\"%s\" name=\"%s\" time=\"%.3f\"",
                    attr(c.className()), attr(c.name()), c.seconds()));
            String first = c.message().lines().findFirst().orElse("");
            switch (c.status()) {
                case "PASSED" -> sb.append("/>\n");
                case "FAILED" -> sb.append(">\n    <failure message=\"").append(attr(first)).append("\">")
                        .append(text(c.message())).append("</failure>\n  </testcase>\n");
                default -> sb.append(">\n    <skipped message=\"").append(attr(first)).append("\"/>\n  </testcase>\n");
            }
        }
        sb.append("</testsuite>\n");
        try {
            Path parent = file.toAbsolutePath().getParent();
            if (parent != null) {
                Files.createDirectories(parent);
            }
            Files.writeString(file, sb);
        } catch (IOException e) {
            throw new UncheckedIOException("--junit " + file, e);
        }
    }

    /** XML text: markup escaped, and characters XML 1.0 cannot hold (control characters) as {@code \\uXXXX}. */
    static String text(String s) {
        StringBuilder sb = new StringBuilder(s.length());
        for (int i = 0; i < s.length(); i++) {
            char ch = s.charAt(i);
            switch (ch) {
                case '<' -> sb.append("&lt;");
                case '>' -> sb.append("&gt;");
                case '&' -> sb.append("&amp;");
                default -> {
                    boolean legal = ch == '\t' || ch == '\n' || ch == '\r' || (ch >= 0x20 && ch <= 0xD7FF)
                            || Character.isSurrogate(ch) || (ch >= 0xE000 && ch <= 0xFFFD);
                    sb.append(legal ? String.valueOf(ch) : String.format(Locale.ROOT, "\\u%04x", (int) ch));
                }
            }
        }
        return sb.toString();
    }

    private static String attr(String s) {
        return text(s).replace("\"", "&quot;").replace("\n", "&#10;").replace("\r", "&#13;").replace("\t", "&#9;");
    }
}
