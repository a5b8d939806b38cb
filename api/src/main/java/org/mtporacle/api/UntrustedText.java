package org.mtporacle.api;

import java.nio.file.Path;

/**
 * Text from a file, a peer or a native library, made safe to print: {@link #line} escapes every control character
 * (C0, DEL, C1, the Unicode line and paragraph separators, bidirectional overrides and isolates, lone surrogates) so that a message stays one line and cannot print a
 * fake stack frame or a fake "passed" line; {@link #clip} and {@link #quote} also bound its length; {@link #html}
 * escapes it for HTML text and attribute values. Every {@link MtpException} message goes through {@link #line}.
 */
public final class UntrustedText {
    /** The most characters of one untrusted value that a message shows. */
    public static final int MAX_CHARS = 200;

    private UntrustedText() {
    }

    /** {@code s} with control characters written as {@code \n}, {@code \r}, {@code \t} or {@code \\uXXXX}. */
    public static String line(String s) {
        if (s == null) {
            return "null";
        }
        StringBuilder sb = null;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            String esc = escape(c);
            if (esc == null && Character.isSurrogate(c)) {
                boolean paired = Character.isHighSurrogate(c) ? i + 1 < s.length()
                        && Character.isLowSurrogate(s.charAt(i + 1)) : i > 0 && Character.isHighSurrogate(s.charAt(i - 1));
                esc = paired ? null : String.format("\\u%04x", (int) c); // a lone surrogate prints as nothing
            }
            if (esc != null && sb == null) {
                sb = new StringBuilder(s.length() + 16).append(s, 0, i);
            }
            if (sb != null) {
                if (esc != null) {
                    sb.append(esc);
                } else {
                    sb.append(c);
                }
            }
        }
        return sb == null ? s : sb.toString();
    }

    private static String escape(char c) {
        return switch (c) {
            case '\n' -> "\\n";
            case '\r' -> "\\r";
            case '\t' -> "\\t";
            default -> c < 0x20 || c == 0x7F || (c >= 0x80 && c < 0xA0) || c == '\u2028' || c == '\u2029'
                    || (c >= '\u202A' && c <= '\u202E') || (c >= '\u2066' && c <= '\u2069')
                    ? String.format("\\u%04x", (int) c) : null;
        };
    }

    /** {@link #line} of {@code s}, cut to {@link #MAX_CHARS} characters with the cut said. */
    public static String clip(String s) {
        if (s != null && s.length() > MAX_CHARS) {
            return line(s.substring(0, MAX_CHARS)) + "… (" + s.length() + " chars)";
        }
        return line(s);
    }

    /** {@code 's'}: {@link #clip} of {@code s} in single quotes, with quotes and backslashes in it escaped. */
    public static String quote(String s) {
        if (s == null) {
            return "null";
        }
        String body = s.length() > MAX_CHARS ? s.substring(0, MAX_CHARS) : s;
        String q = "'" + line(body.replace("\\", "\\\\").replace("'", "\\'")) + "'";
        return s.length() > MAX_CHARS ? q + "… (" + s.length() + " chars)" : q;
    }

    /** The most characters of a digest read from a file that a message shows. */
    public static final int DIGEST_PREFIX = 12;
    /** The longest message an {@link MtpException} carries; longer ones are cut, the cut said. */
    public static final int MAX_MESSAGE = 4000;

    /**
     * A digest (or anything that claims to be one) read from a file, for a message: its first
     * {@value #DIGEST_PREFIX} characters, escaped and quoted, {@code …} marking a cut, so a message can tell two
     * digests apart without echoing what a file says.
     */
    public static String digestPrefix(String s) {
        if (s == null) {
            return "absent";
        }
        return s.length() > DIGEST_PREFIX ? quote(s.substring(0, DIGEST_PREFIX)) + "…" : quote(s);
    }

    /** {@link #line} of {@code s}, cut to {@link #MAX_MESSAGE} characters with the cut said. */
    static String message(String s) {
        String l = line(s);
        return l.length() > MAX_MESSAGE ? l.substring(0, MAX_MESSAGE) + "… (message cut, " + l.length() + " chars)" : l;
    }

    /** A path for a message: {@link #line} of its text (a file name may hold a newline). */
    public static String path(Path p) {
        return line(String.valueOf(p));
    }

    /**
     * {@code s} escaped for HTML text and quoted attribute values: {@link #line} first, so control characters and
     * bidirectional overrides show as {@code \\uXXXX} instead of reordering or hiding the page's text, then markup.
     */
    public static String html(String s) {
        if (s == null) {
            return "";
        }
        s = line(s);
        StringBuilder sb = new StringBuilder(s.length() + 16);
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '&' -> sb.append("&amp;");
                case '<' -> sb.append("&lt;");
                case '>' -> sb.append("&gt;");
                case '"' -> sb.append("&quot;");
                case '\'' -> sb.append("&#39;");
                default -> sb.append(c);
            }
        }
        return sb.toString();
    }

    /** {@link #html} of each line of {@code s}, joined by {@code \n}: for a {@code <pre>} block of several lines. */
    public static String htmlLines(String s) {
        if (s == null) {
            return "";
        }
        return String.join("\n", s.lines().map(UntrustedText::html).toList());
    }
}
