package org.mtporacle.conformance.golden;

import com.fasterxml.jackson.databind.JsonNode;

import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

/**
 * JSON text for golden traces: the canonical form that checksums cover (RFC 8785, JCS: object keys sorted by UTF-16
 * code units, no whitespace, numbers as ECMAScript prints the IEEE double, minimal string escapes), and a readable
 * indented form whose arrays of scalars stay on one line.
 */
public final class JsonText {
    private JsonText() {
    }

    /** The RFC 8785 canonical text of {@code node}. */
    public static String canonical(JsonNode node) {
        StringBuilder sb = new StringBuilder();
        canonical(node, sb);
        return sb.toString();
    }

    /** SHA-256 hex of the UTF-8 bytes of {@link #canonical}. */
    public static String canonicalSha256(JsonNode node) {
        return sha256(canonical(node).getBytes(StandardCharsets.UTF_8));
    }

    static String sha256(byte[] bytes) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    private static void canonical(JsonNode n, StringBuilder sb) {
        if (n.isObject()) {
            List<String> keys = new ArrayList<>();
            n.fieldNames().forEachRemaining(keys::add);
            keys.sort(null); // String.compareTo orders by UTF-16 code units, as RFC 8785 §3.2.3 asks
            sb.append('{');
            for (int i = 0; i < keys.size(); i++) {
                if (i > 0) {
                    sb.append(',');
                }
                string(keys.get(i), sb);
                sb.append(':');
                canonical(n.get(keys.get(i)), sb);
            }
            sb.append('}');
        } else if (n.isArray()) {
            sb.append('[');
            for (int i = 0; i < n.size(); i++) {
                if (i > 0) {
                    sb.append(',');
                }
                canonical(n.get(i), sb);
            }
            sb.append(']');
        } else if (n.isTextual()) {
            string(n.textValue(), sb);
        } else if (n.isNumber()) {
            sb.append(number(numberValue(n)));
        } else {
            sb.append(n.isNull() ? "null" : n.asText()); // true, false
        }
    }

    /**
     * The double a number node stands for once written and read back: a float node is written with its shortest
     * f32 digits ({@link Float#toString}), so it reads back as the double nearest those digits.
     */
    static double numberValue(JsonNode n) {
        if (n.isFloat()) {
            return Double.parseDouble(Float.toString(n.floatValue()));
        }
        return n.isBigDecimal() ? n.decimalValue().doubleValue() : n.doubleValue();
    }

    /** ECMAScript Number::toString of {@code d} (RFC 8785 §3.2.2.3); NaN and infinities are not JSON. */
    static String number(double d) {
        if (!Double.isFinite(d)) {
            throw new IllegalArgumentException("JSON numbers must be finite, got " + d);
        }
        if (d == 0) {
            return "0";
        }
        String sign = d < 0 ? "-" : "";
        BigDecimal b = new BigDecimal(Double.toString(Math.abs(d))).stripTrailingZeros(); // shortest digits (JDK 19+)
        String s = b.unscaledValue().toString();
        int k = s.length();
        int n = k - b.scale(); // value = 0.s × 10^n
        if (k <= n && n <= 21) {
            return sign + s + "0".repeat(n - k);
        }
        if (0 < n && n <= 21) {
            return sign + s.substring(0, n) + "." + s.substring(n);
        }
        if (-6 < n && n <= 0) {
            return sign + "0." + "0".repeat(-n) + s;
        }
        int e = n - 1;
        String exp = "e" + (e < 0 ? "-" : "+") + Math.abs(e);
        return sign + (k == 1 ? s : s.charAt(0) + "." + s.substring(1)) + exp;
    }

    private static void string(String s, StringBuilder sb) {
        sb.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> sb.append("\\\"");
                case '\\' -> sb.append("\\\\");
                case '\b' -> sb.append("\\b");
                case '\f' -> sb.append("\\f");
                case '\n' -> sb.append("\\n");
                case '\r' -> sb.append("\\r");
                case '\t' -> sb.append("\\t");
                default -> {
                    if (c < 0x20) {
                        sb.append(String.format("\\u%04x", (int) c));
                    } else {
                        sb.append(c);
                    }
                }
            }
        }
        sb.append('"');
    }

    /** Indented text: objects one field per line, arrays of scalars (or of arrays of scalars) on one line. */
    public static String pretty(JsonNode node) {
        StringBuilder sb = new StringBuilder();
        pretty(node, sb, "");
        return sb.append('\n').toString();
    }

    private static void pretty(JsonNode n, StringBuilder sb, String indent) {
        if (n.isObject() && !n.isEmpty()) {
            sb.append("{\n");
            Iterator<Map.Entry<String, JsonNode>> it = n.properties().iterator();
            while (it.hasNext()) {
                Map.Entry<String, JsonNode> e = it.next();
                sb.append(indent).append("  ");
                string(e.getKey(), sb);
                sb.append(": ");
                pretty(e.getValue(), sb, indent + "  ");
                sb.append(it.hasNext() ? ",\n" : "\n");
            }
            sb.append(indent).append('}');
        } else if (n.isArray() && !flat(n)) {
            sb.append("[\n");
            for (int i = 0; i < n.size(); i++) {
                sb.append(indent).append("  ");
                pretty(n.get(i), sb, indent + "  ");
                sb.append(i + 1 < n.size() ? ",\n" : "\n");
            }
            sb.append(indent).append(']');
        } else {
            compact(n, sb);
        }
    }

    private static boolean flat(JsonNode arr) {
        for (JsonNode x : arr) {
            if (x.isObject() && !x.isEmpty() || x.isArray() && !x.isEmpty() && !flat(x) || x.isArray() && x.size() > 0
                    && x.get(0).isArray()) {
                return false;
            }
        }
        return true;
    }

    private static void compact(JsonNode n, StringBuilder sb) {
        if (n.isArray()) {
            sb.append('[');
            for (int i = 0; i < n.size(); i++) {
                if (i > 0) {
                    sb.append(", ");
                }
                compact(n.get(i), sb);
            }
            sb.append(']');
        } else if (n.isObject()) {
            sb.append("{}");
        } else if (n.isTextual()) {
            string(n.textValue(), sb);
        } else if (n.isFloatingPointNumber()) {
            sb.append(n.isFloat() ? Float.toString(n.floatValue()) : number(n.doubleValue()));
        } else {
            sb.append(n.isNumber() ? n.numberValue().toString() : n.isNull() ? "null" : n.asText());
        }
    }
}
