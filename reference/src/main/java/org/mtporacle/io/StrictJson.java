package org.mtporacle.io;

import java.io.IOException;
import java.io.InputStream;
import java.math.BigDecimal;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.Map;
import java.util.TreeMap;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.mtporacle.api.MtpException;
import org.mtporacle.api.UntrustedText;

/**
 * The one reader of untrusted JSON documents (config.json, shard indexes, safetensors headers, chain traces, golden
 * traces, report.json). A document is refused with MALFORMED_FILE naming it when it is not a regular file, is larger
 * than its limit, is not UTF-8 JSON, has a duplicate key, has content after the root value, nests deeper than
 * {@link #MAX_DEPTH}, has a number literal longer than {@link #MAX_NUMBER_CHARS}, a number outside the finite double
 * range or an integer outside 64 bits, or a root that is not an object. Floating-point literals are kept as exact
 * decimals, so a golden's canonical form hashes what was written; the typed field readers below refuse a fraction
 * where an integer is expected (1.5 is not 1) and a non-string where a string is expected.
 */
public final class StrictJson {
    /** The deepest nesting any document of the project needs is 6; this leaves room and bounds recursion. */
    public static final int MAX_DEPTH = 64;
    /** A double needs at most 25 characters; longer literals are refused before they are converted. */
    public static final int MAX_NUMBER_CHARS = 100;

    private static final ObjectMapper JSON = JsonMapper.builder(JsonFactory.builder()
                    .streamReadConstraints(StreamReadConstraints.builder().maxNestingDepth(MAX_DEPTH)
                            .maxNumberLength(MAX_NUMBER_CHARS).build())
                    .build())
            .enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION)
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS)
            .nodeFactory(JsonNodeFactory.withExactBigDecimals(true))
            .build();

    private StrictJson() {
    }

    /**
     * Reads the JSON object in {@code file}; messages start with {@code kind + " " + file}.
     *
     * @param maxBytes the largest file accepted, checked before reading (and again while reading)
     * @param kind     the document type for messages: "config", "trace", "golden", "report", …
     * @throws MtpException MALFORMED_FILE for every reason in the class comment, or when the file cannot be read
     */
    public static ObjectNode read(Path file, long maxBytes, String kind) {
        String where = kind + " " + UntrustedText.path(file);
        byte[] bytes;
        try {
            BasicFileAttributes a = Files.readAttributes(file, BasicFileAttributes.class);
            if (!a.isRegularFile()) {
                throw MtpException.malformedFile(where + ": not a regular file");
            }
            if (a.size() > maxBytes) {
                throw MtpException.malformedFile(where + ": " + a.size() + " bytes, more than the " + maxBytes
                        + " a " + kind + " may have");
            }
            try (InputStream in = Files.newInputStream(file)) {
                bytes = in.readNBytes((int) Math.min(maxBytes + 1, Integer.MAX_VALUE - 16));
            }
        } catch (IOException e) {
            throw MtpException.malformedFile(where + ": cannot read (" + UntrustedText.line(e.toString()) + ")");
        }
        if (bytes.length > maxBytes) {
            throw MtpException.malformedFile(where + ": grew past the " + maxBytes + " bytes a " + kind
                    + " may have while it was read");
        }
        return parse(bytes, where);
    }

    /** {@link #read} for a document already in memory; messages start with {@code where}. */
    public static ObjectNode parse(byte[] bytes, String where) {
        JsonNode root;
        try {
            root = JSON.readTree(bytes);
        } catch (IOException e) {
            throw MtpException.malformedFile(where + ": not valid JSON (" + jacksonMessage(e) + ")");
        } catch (IllegalArgumentException | ArithmeticException e) {
            // a number Jackson accepted lexically but could not convert (NumberFormatException is one)
            throw MtpException.malformedFile(where + ": not valid JSON (a number cannot be converted: "
                    + UntrustedText.clip(String.valueOf(e.getMessage())) + ")");
        }
        if (root == null || !root.isObject()) {
            throw MtpException.malformedFile(where + ": not a JSON object, got "
                    + (root == null ? "nothing" : root.getNodeType().toString().toLowerCase(java.util.Locale.ROOT)));
        }
        checkNumbers(root, where, "");
        return (ObjectNode) root;
    }

    private static String jacksonMessage(IOException e) {
        String m = e instanceof com.fasterxml.jackson.core.JsonProcessingException j ? j.getOriginalMessage()
                : e.getMessage();
        String loc = e instanceof com.fasterxml.jackson.core.JsonProcessingException j && j.getLocation() != null
                ? " at line " + j.getLocation().getLineNr() + " column " + j.getLocation().getColumnNr() : "";
        return UntrustedText.clip(String.valueOf(m).lines().findFirst().orElse("")) + loc;
    }

    /** Every number must be a finite double; every integer must fit in 64 bits. */
    private static void checkNumbers(JsonNode n, String where, String path) {
        if (n.isContainerNode()) {
            if (n.isObject()) {
                for (Map.Entry<String, JsonNode> e : n.properties()) {
                    checkNumbers(e.getValue(), where, path + "." + e.getKey());
                }
            } else {
                for (int i = 0; i < n.size(); i++) {
                    checkNumbers(n.get(i), where, path + "[" + i + "]");
                }
            }
        } else if (n.isBigInteger()) {
            throw MtpException.malformedFile(where + ": " + UntrustedText.quote(path.isEmpty() ? "$" : path.substring(1))
                    + " = " + UntrustedText.clip(n.asText()) + " is an integer outside the signed 64-bit range");
        } else if (n.isBigDecimal()) {
            BigDecimal d = n.decimalValue();
            if (Double.isInfinite(d.doubleValue())) {
                throw MtpException.malformedFile(where + ": " + UntrustedText.quote(path.substring(1)) + " = "
                        + UntrustedText.clip(d.toString()) + " is outside the finite double range");
            }
        }
    }

    // ---- typed fields: each message names the document, the field and the value found ----------------------------

    /** The object at {@code field}; absent, null or another type is MALFORMED_FILE. */
    public static JsonNode object(JsonNode n, String field, String where) {
        JsonNode v = n.get(field);
        if (v == null || !v.isObject()) {
            throw wrong(where, field, v, "an object");
        }
        return v;
    }

    /** The array at {@code field}, at most {@code maxSize} elements long. */
    public static JsonNode array(JsonNode n, String field, int maxSize, String where) {
        JsonNode v = n.get(field);
        if (v == null || !v.isArray()) {
            throw wrong(where, field, v, "an array");
        }
        if (v.size() > maxSize) {
            throw MtpException.malformedFile(where + ": '" + field + "' has " + v.size() + " elements, more than the "
                    + maxSize + " allowed");
        }
        return v;
    }

    /** The string at {@code field}. */
    public static String text(JsonNode n, String field, String where) {
        JsonNode v = n.get(field);
        if (v == null || !v.isTextual()) {
            throw wrong(where, field, v, "a string");
        }
        return v.textValue();
    }

    /** The string at {@code field}, or null when it is absent or null; another type is MALFORMED_FILE. */
    public static String optText(JsonNode n, String field, String where) {
        JsonNode v = n.get(field);
        if (v == null || v.isNull()) {
            return null;
        }
        if (!v.isTextual()) {
            throw wrong(where, field, v, "a string or null");
        }
        return v.textValue();
    }

    /** The boolean at {@code field}, or {@code fallback} when it is absent. */
    public static boolean bool(JsonNode n, String field, boolean fallback, String where) {
        JsonNode v = n.get(field);
        if (v == null) {
            return fallback;
        }
        if (!v.isBoolean()) {
            throw wrong(where, field, v, "true or false");
        }
        return v.booleanValue();
    }

    /** The integer at {@code field} in {@code [min, max]}; a fraction (1.5, or 1.0) is not an integer. */
    public static int integer(JsonNode n, String field, int min, int max, String where) {
        long v = longValue(n, field, where);
        if (v < min || v > max) {
            throw MtpException.malformedFile(where + ": '" + field + "' = " + v + ", expected an integer in [" + min
                    + ", " + max + "]");
        }
        return (int) v;
    }

    /** The integer at {@code field}, any 32-bit value. */
    public static int integer(JsonNode n, String field, String where) {
        return integer(n, field, Integer.MIN_VALUE, Integer.MAX_VALUE, where);
    }

    /** The 64-bit integer at {@code field}. */
    public static long longValue(JsonNode n, String field, String where) {
        JsonNode v = n.get(field);
        if (v == null || !v.isIntegralNumber() || !v.canConvertToLong()) {
            throw wrong(where, field, v, "an integer");
        }
        return v.longValue();
    }

    /** The element {@code v} (named {@code where}) as an integer in {@code [min, max]}. */
    public static int intElement(JsonNode v, int min, int max, String where) {
        if (v == null || !v.isIntegralNumber() || !v.canConvertToLong() || v.longValue() < min
                || v.longValue() > max) {
            throw MtpException.malformedFile(where + " = " + describe(v) + ", expected an integer in [" + min + ", "
                    + max + "]");
        }
        return (int) v.longValue();
    }

    /** The finite number at {@code field} (an integer or a decimal). */
    public static double number(JsonNode n, String field, String where) {
        JsonNode v = n.get(field);
        if (v == null || !v.isNumber() || !Double.isFinite(v.doubleValue())) {
            throw wrong(where, field, v, "a finite number");
        }
        return v.doubleValue();
    }

    /** The object of strings at {@code field} as a sorted map (empty when absent); other values are refused. */
    public static Map<String, String> stringMap(JsonNode n, String field, String where) {
        Map<String, String> out = new TreeMap<>();
        JsonNode v = n.get(field);
        if (v == null || v.isNull()) {
            return out;
        }
        if (!v.isObject()) {
            throw wrong(where, field, v, "an object of strings");
        }
        for (Map.Entry<String, JsonNode> e : v.properties()) {
            if (!e.getValue().isTextual()) {
                throw MtpException.malformedFile(where + ": '" + field + "." + UntrustedText.clip(e.getKey())
                        + "' = " + describe(e.getValue()) + ", expected a string");
            }
            out.put(e.getKey(), e.getValue().textValue());
        }
        return out;
    }

    private static MtpException wrong(String where, String field, JsonNode v, String expected) {
        return MtpException.malformedFile(where + ": '" + field + "' must be " + expected + (v == null
                ? ", it is missing" : ", got " + describe(v)));
    }

    /** A short, escaped rendering of a value for a message. */
    public static String describe(JsonNode v) {
        if (v == null) {
            return "nothing";
        }
        if (v.isTextual()) {
            return UntrustedText.quote(v.textValue());
        }
        if (v.isContainerNode()) {
            return v.isObject() ? "an object" : "an array of " + v.size();
        }
        return UntrustedText.clip(v.asText());
    }
}
