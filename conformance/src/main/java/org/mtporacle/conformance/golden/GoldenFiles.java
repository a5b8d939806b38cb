package org.mtporacle.conformance.golden;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MtpConfig;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.RowSampler;
import org.mtporacle.conformance.golden.GoldenTrace.Expect;
import org.mtporacle.conformance.golden.GoldenTrace.RowState;
import org.mtporacle.conformance.golden.GoldenTrace.Source;
import org.mtporacle.conformance.golden.GoldenTrace.Step;
import org.mtporacle.io.SafetensorsFile;
import org.mtporacle.io.SafetensorsWriter;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Reads and writes golden traces: {@code NAME.json} plus {@code NAME.safetensors}. Reading checks both checksums
 * before anything else, so a corrupted or edited golden fails with MALFORMED_FILE naming the file and the checksum;
 * every malformed field fails naming its JSON path.
 */
public final class GoldenFiles {
    private static final ObjectMapper JSON = new ObjectMapper()
            .enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS)
            .setNodeFactory(JsonNodeFactory.withExactBigDecimals(true));
    /** Golden JSON larger than this is refused before parsing. */
    public static final long MAX_JSON_BYTES = 64L * 1024 * 1024;

    private GoldenFiles() {
    }

    /** A golden read from disk, checksums verified, tensors copied to the heap. */
    public record Golden(Path file, GoldenTrace trace, Map<String, HostTensor> tensors, long jsonBytes,
                         long tensorBytes) {
        /** The tensor called {@code name}, or MALFORMED_FILE naming the step that needs it. */
        public HostTensor tensor(String name, String where) {
            HostTensor t = tensors.get(name);
            if (t == null) {
                throw MtpException.malformedFile("golden " + file + ": " + where + " names tensor '" + name
                        + "', which " + trace.tensorsFile() + " does not hold");
            }
            return t;
        }
    }

    /** True when {@code file} looks like a golden trace (its JSON {@code format} field), without verifying it. */
    public static boolean isGolden(Path file) {
        try {
            if (!Files.isRegularFile(file) || Files.size(file) > MAX_JSON_BYTES) {
                return false;
            }
            JsonNode root = JSON.readTree(file.toFile());
            return root != null && GoldenTrace.FORMAT.equals(root.path("format").asText());
        } catch (IOException e) {
            return false;
        }
    }

    /**
     * Writes {@code NAME.safetensors} (the tensors, sorted by name) then {@code NAME.json} into {@code dir}; the
     * trace's {@code tensorsFile} and {@code tensorsSha256} are filled in here.
     */
    public static Path write(GoldenTrace trace, Map<String, HostTensor> tensors, Path dir) {
        try {
            Files.createDirectories(dir);
            String tensorsFile = trace.name() + ".safetensors";
            Path st = dir.resolve(tensorsFile);
            SafetensorsWriter w = new SafetensorsWriter().metadata("format", GoldenTrace.FORMAT)
                    .metadata("golden", trace.name());
            new TreeMap<>(tensors).forEach(w::add);
            w.write(st);
            GoldenTrace t = new GoldenTrace(trace.name(), trace.description(), trace.model(), trace.options(),
                    tensorsFile, JsonText.sha256(Files.readAllBytes(st)), trace.steps());
            ObjectNode root = toJson(t);
            root.put("contentSha256", JsonText.canonicalSha256(root));
            Path json = dir.resolve(trace.name() + ".json");
            Files.writeString(json, JsonText.pretty(root));
            return json;
        } catch (IOException e) {
            throw new MtpException(MtpException.Kind.MALFORMED_FILE, "golden: cannot write " + dir + " ("
                    + org.mtporacle.io.IoErrors.describe(e) + ")", e);
        }
    }

    /**
     * Reads and checks a golden trace.
     *
     * @throws MtpException MALFORMED_FILE for unreadable JSON, a wrong format, a checksum mismatch or a bad field
     */
    public static Golden read(Path file) {
        String where = "golden " + file;
        ObjectNode root = parse(file, where);
        String format = root.path("format").asText(null);
        if (!GoldenTrace.FORMAT.equals(format)) {
            throw MtpException.malformedFile(where + (format == null ? ": no \"format\"" : ": format '" + format
                    + "'") + ", expected '" + GoldenTrace.FORMAT
                    + "'");
        }
        String recorded = root.path("contentSha256").asText(null);
        ObjectNode content = root.deepCopy();
        content.remove("contentSha256");
        String actual = JsonText.canonicalSha256(content);
        if (recorded == null) {
            throw MtpException.malformedFile(where + ": no contentSha256 (every golden carries the SHA-256 of its "
                    + "canonical JSON)");
        }
        if (!recorded.equals(actual)) {
            throw MtpException.malformedFile(where + ": contentSha256 mismatch, the JSON was changed after it was "
                    + "written: canonical JSON hashes to " + actual + ", the file says " + recorded);
        }
        GoldenTrace trace = fromJson(root, where);
        Path st = file.toAbsolutePath().resolveSibling(trace.tensorsFile());
        byte[] bytes;
        try {
            bytes = Files.readAllBytes(st);
        } catch (IOException e) {
            throw MtpException.malformedFile(where + ": cannot read its tensors file " + st + " (" + e + ")");
        }
        String sha = JsonText.sha256(bytes);
        if (!sha.equals(trace.tensorsSha256())) {
            throw MtpException.malformedFile(where + ": tensors.sha256 mismatch, " + trace.tensorsFile()
                    + " was changed or corrupted: it hashes to " + sha + ", the trace says " + trace.tensorsSha256());
        }
        Map<String, HostTensor> tensors = new LinkedHashMap<>();
        try (SafetensorsFile f = SafetensorsFile.open(st)) {
            Map<String, String> expected = Map.of("format", GoldenTrace.FORMAT, "golden", trace.name());
            for (Map.Entry<String, String> m : expected.entrySet()) {
                if (!m.getValue().equals(f.metadata().get(m.getKey()))) {
                    throw MtpException.malformedFile(where + ": " + trace.tensorsFile() + " __metadata__." + m.getKey()
                            + " = " + quoted(f.metadata().get(m.getKey())) + ", expected '" + m.getValue()
                            + "' (golden/README.md)");
                }
            }
            for (String n : f.names()) {
                tensors.put(n, f.tensor(n).copy());
            }
        }
        long jsonBytes;
        try {
            jsonBytes = Files.size(file);
        } catch (IOException e) {
            jsonBytes = -1;
        }
        return new Golden(file, trace, tensors, jsonBytes, bytes.length);
    }

    /** {@code v} as a JSON string (control characters escaped, at most 80 characters kept), or "absent". */
    private static String quoted(String v) {
        return v == null ? "absent" : new com.fasterxml.jackson.databind.node.TextNode(v.length() > 80
                ? v.substring(0, 80) + "…" : v).toString();
    }

    /** The JSON object of {@code file} without checking checksums (for diff and inspect of damaged files). */
    public static ObjectNode parse(Path file, String where) {
        JsonNode root;
        try {
            if (Files.size(file) > MAX_JSON_BYTES) {
                throw MtpException.malformedFile(where + ": " + Files.size(file) + " bytes, more than the "
                        + MAX_JSON_BYTES + " a golden may have");
            }
            root = JSON.readTree(Files.readString(file, StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw MtpException.malformedFile(where + ": not readable JSON (" + e.getMessage().lines().findFirst()
                    .orElse("") + ")");
        }
        if (root == null || !root.isObject()) {
            throw MtpException.malformedFile(where + ": expected a JSON object");
        }
        return (ObjectNode) root;
    }

    /** The trace in {@code file} without checking checksums or reading tensors (for inspect and diff). */
    public static GoldenTrace fromJsonUnchecked(Path file) {
        String where = "golden " + file;
        return fromJson(parse(file, where), where);
    }

    // ---- to JSON ----

    static ObjectNode toJson(GoldenTrace t) {
        ObjectNode root = JSON.createObjectNode();
        root.put("format", GoldenTrace.FORMAT);
        root.put("name", t.name());
        root.put("description", t.description());
        ObjectNode m = root.putObject("model");
        m.put("fixture", t.model().fixture());
        m.put("path", t.model().path());
        m.put("identity", t.model().identity());
        MtpConfig c = t.model().config();
        ObjectNode cfg = m.putObject("config");
        cfg.put("hiddenSize", c.hiddenSize()).put("numHeads", c.numHeads()).put("numKvHeads", c.numKvHeads())
                .put("headDim", c.headDim()).put("rotaryDims", c.rotaryDims()).put("ropeTheta", c.ropeTheta())
                .put("rmsNormEps", c.rmsNormEps()).put("vocabSize", c.vocabSize())
                .put("intermediateSize", c.intermediateSize());
        ObjectNode o = root.putObject("options");
        o.put("contexts", t.options().contexts());
        o.put("tap", t.options().tap());
        o.put("sampling", t.options().sampling());
        o.put("engine", t.options().engine());
        o.set("engineOptions", JSON.valueToTree(new TreeMap<>(t.options().engineOptions())));
        o.put("numerics", t.options().numerics());
        o.put("tolerance", t.options().tolerance());
        root.putObject("tensors").put("file", t.tensorsFile()).put("sha256", t.tensorsSha256());
        ArrayNode steps = root.putArray("steps");
        for (Step s : t.steps()) {
            steps.add(toJson(s));
        }
        return root;
    }

    static ObjectNode toJson(Step s) {
        ObjectNode n = JSON.createObjectNode();
        n.put("op", s.op());
        switch (s) {
            case GoldenTrace.Append a -> {
                ArrayNode rows = n.putArray("rows");
                for (Source src : a.rows()) {
                    if (src.checkpoint() == null) {
                        rows.addNull();
                    } else {
                        rows.addObject().put("checkpoint", src.checkpoint()).put("from",
                                src.fromFile() ? "file" : "capture");
                    }
                }
            }
            case GoldenTrace.Filter f -> ints(n.putArray("keep"), f.keep());
            case GoldenTrace.Prefill p -> {
                ArrayNode tok = n.putArray("tokens");
                for (int[] row : p.tokens()) {
                    ints(tok.addArray(), row);
                }
                n.put("context", p.context());
            }
            case GoldenTrace.Draft d -> {
                ints(n.putArray("pending"), d.pending());
                n.put("depth", d.depth());
                ArrayNode st = n.putArray("steps");
                for (long v : d.steps()) {
                    st.add(v);
                }
                ArrayNode sm = n.putArray("samplers");
                for (RowSampler r : d.samplers()) {
                    sm.addObject().put("temperature", r.temperature()).put("topK", r.topK()).put("topP", r.topP())
                            .put("seed", Long.toString(r.seed()));
                }
            }
            case GoldenTrace.Commit c -> {
                ints(n.putArray("accepted"), c.accepted());
                n.put("context", c.context());
            }
            case GoldenTrace.Capture c -> n.put("row", c.row()).put("id", c.id());
        }
        n.set("expect", toJson(s.expect()));
        return n;
    }

    private static ObjectNode toJson(Expect e) {
        ObjectNode n = JSON.createObjectNode();
        n.put("rowCount", e.rowCount());
        if (e.error() != null) {
            n.put("error", e.error());
        }
        if (e.tokens() != null) {
            ArrayNode t = n.putArray("tokens");
            ArrayNode l = n.putArray("logprobs");
            ArrayNode g = n.putArray("top2Gaps");
            for (int r = 0; r < e.tokens().length; r++) {
                ints(t.addArray(), e.tokens()[r]);
                floats(l.addArray(), e.logprobs()[r]);
                floats(g.addArray(), e.top2Gaps()[r]);
            }
        }
        if (e.rows() != null) {
            ArrayNode rows = n.putArray("rows");
            for (RowState s : e.rows()) {
                if (s == null) {
                    rows.addNull();
                } else {
                    rows.add(toJson(s));
                }
            }
        }
        if (e.checkpoint() != null) {
            n.set("checkpoint", toJson(e.checkpoint()));
        }
        return n;
    }

    private static ObjectNode toJson(RowState s) {
        ObjectNode n = JSON.createObjectNode();
        n.put("P", s.processedTokens()).put("draftOffset", s.draftOffset()).put("sha256", s.sha256());
        if (s.tensors() != null) {
            n.put("tensors", s.tensors());
        }
        return n;
    }

    private static void ints(ArrayNode a, int[] v) {
        for (int x : v) {
            a.add(x);
        }
    }

    private static void floats(ArrayNode a, float[] v) {
        for (float x : v) {
            if (Float.isFinite(x)) {
                a.add(x);
            } else {
                a.add(x > 0 ? "Infinity" : x < 0 ? "-Infinity" : "NaN");
            }
        }
    }

    // ---- from JSON ----

    static GoldenTrace fromJson(ObjectNode root, String where) {
        JsonNode m = object(root, "model", where);
        JsonNode c = object(m, "config", where + ": model");
        String w = where + ": model.config";
        MtpConfig config;
        try {
            config = new MtpConfig(integer(c, "hiddenSize", w), integer(c, "numHeads", w),
                    integer(c, "numKvHeads", w), integer(c, "headDim", w), integer(c, "rotaryDims", w),
                    number(c, "ropeTheta", w), number(c, "rmsNormEps", w), integer(c, "vocabSize", w),
                    integer(c, "intermediateSize", w));
        } catch (MtpException e) {
            throw MtpException.malformedFile(w + ": " + e.getMessage());
        }
        GoldenTrace.ModelRef model = new GoldenTrace.ModelRef(optText(m, "fixture"), optText(m, "path"),
                text(m, "identity", where + ": model"), config);
        JsonNode o = object(root, "options", where);
        Map<String, String> engineOptions = new TreeMap<>();
        JsonNode eo = o.get("engineOptions");
        if (eo != null && eo.isObject()) {
            eo.properties().forEach(e -> engineOptions.put(e.getKey(), e.getValue().asText()));
        }
        GoldenTrace.Options options = new GoldenTrace.Options(text(o, "contexts", where + ": options"),
                optText(o, "tap"), optText(o, "sampling"), text(o, "engine", where + ": options"), engineOptions,
                optText(o, "numerics"), text(o, "tolerance", where + ": options"));
        JsonNode t = object(root, "tensors", where);
        JsonNode arr = root.get("steps");
        if (arr == null || !arr.isArray()) {
            throw MtpException.malformedFile(where + ": 'steps' must be an array");
        }
        List<Step> steps = new ArrayList<>();
        for (int i = 0; i < arr.size(); i++) {
            steps.add(step(arr.get(i), where + ": steps[" + i + "]"));
        }
        return new GoldenTrace(text(root, "name", where), optText(root, "description"), model, options,
                text(t, "file", where + ": tensors"), text(t, "sha256", where + ": tensors"), steps);
    }

    static Step step(JsonNode n, String where) {
        if (n == null || !n.isObject()) {
            throw MtpException.malformedFile(where + ": expected an object");
        }
        Expect e = expect(object(n, "expect", where), where + ".expect");
        String op = text(n, "op", where);
        return switch (op) {
            case "append" -> {
                JsonNode rows = array(n, "rows", where);
                List<Source> src = new ArrayList<>();
                for (int i = 0; i < rows.size(); i++) {
                    JsonNode r = rows.get(i);
                    if (r.isNull()) {
                        src.add(Source.COLD);
                        continue;
                    }
                    String from = text(r, "from", where + ".rows[" + i + "]");
                    if (!from.equals("capture") && !from.equals("file")) {
                        throw MtpException.malformedFile(where + ".rows[" + i + "].from = '" + from
                                + "', expected capture or file");
                    }
                    src.add(new Source(text(r, "checkpoint", where + ".rows[" + i + "]"), from.equals("file")));
                }
                yield new GoldenTrace.Append(src, e);
            }
            case "filter" -> new GoldenTrace.Filter(ints(array(n, "keep", where), where + ".keep"), e);
            case "prefill" -> new GoldenTrace.Prefill(intRows(array(n, "tokens", where), where + ".tokens"),
                    text(n, "context", where), e);
            case "draft" -> {
                JsonNode st = array(n, "steps", where);
                long[] steps = new long[st.size()];
                for (int i = 0; i < steps.length; i++) {
                    if (!st.get(i).canConvertToLong()) {
                        throw MtpException.malformedFile(where + ".steps[" + i + "] is not an integer");
                    }
                    steps[i] = st.get(i).asLong();
                }
                JsonNode sm = array(n, "samplers", where);
                List<RowSampler> samplers = new ArrayList<>();
                for (int i = 0; i < sm.size(); i++) {
                    String w = where + ".samplers[" + i + "]";
                    long seed;
                    try {
                        seed = Long.parseLong(text(sm.get(i), "seed", w));
                    } catch (NumberFormatException x) {
                        throw MtpException.malformedFile(w + ".seed must be a decimal string of a signed 64-bit "
                                + "integer");
                    }
                    try {
                        samplers.add(new RowSampler(number(sm.get(i), "temperature", w), integer(sm.get(i), "topK",
                                w), number(sm.get(i), "topP", w), seed));
                    } catch (MtpException x) {
                        throw MtpException.malformedFile(w + ": " + x.getMessage());
                    }
                }
                yield new GoldenTrace.Draft(ints(array(n, "pending", where), where + ".pending"),
                        integer(n, "depth", where), steps, samplers, e);
            }
            case "commit" -> new GoldenTrace.Commit(ints(array(n, "accepted", where), where + ".accepted"),
                    text(n, "context", where), e);
            case "capture" -> new GoldenTrace.Capture(integer(n, "row", where), text(n, "id", where), e);
            default -> throw MtpException.malformedFile(where + ": unknown op '" + op + "' (expected append, filter, "
                    + "prefill, draft, commit or capture)");
        };
    }

    private static Expect expect(JsonNode n, String where) {
        int rowCount = integer(n, "rowCount", where);
        String error = optText(n, "error");
        int[][] tokens = null;
        float[][] lps = null;
        float[][] gaps = null;
        if (n.has("tokens")) {
            tokens = intRows(array(n, "tokens", where), where + ".tokens");
            lps = floatRows(array(n, "logprobs", where), where + ".logprobs");
            gaps = floatRows(array(n, "top2Gaps", where), where + ".top2Gaps");
            for (int r = 0; r < tokens.length; r++) {
                if (lps.length != tokens.length || gaps.length != tokens.length || lps[r].length != tokens[r].length
                        || gaps[r].length != tokens[r].length) {
                    throw MtpException.malformedFile(where + ": tokens, logprobs and top2Gaps must have the same "
                            + "shape");
                }
            }
        }
        List<RowState> rows = null;
        if (n.has("rows")) {
            rows = new ArrayList<>();
            JsonNode a = array(n, "rows", where);
            for (int i = 0; i < a.size(); i++) {
                rows.add(a.get(i).isNull() ? null : rowState(a.get(i), where + ".rows[" + i + "]"));
            }
        }
        RowState cp = n.has("checkpoint") ? rowState(n.get("checkpoint"), where + ".checkpoint") : null;
        return new Expect(error, rowCount, tokens, lps, gaps, rows, cp);
    }

    private static RowState rowState(JsonNode n, String where) {
        if (!n.isObject()) {
            throw MtpException.malformedFile(where + ": expected an object or null");
        }
        return new RowState(integer(n, "P", where), integer(n, "draftOffset", where), text(n, "sha256", where),
                optText(n, "tensors"));
    }

    private static JsonNode object(JsonNode n, String field, String where) {
        JsonNode v = n.get(field);
        if (v == null || !v.isObject()) {
            throw MtpException.malformedFile(where + ": '" + field + "' must be an object");
        }
        return v;
    }

    private static JsonNode array(JsonNode n, String field, String where) {
        JsonNode v = n.get(field);
        if (v == null || !v.isArray()) {
            throw MtpException.malformedFile(where + ": '" + field + "' must be an array");
        }
        return v;
    }

    private static int[] ints(JsonNode a, String where) {
        int[] out = new int[a.size()];
        for (int i = 0; i < out.length; i++) {
            if (!a.get(i).canConvertToInt() || !a.get(i).isIntegralNumber()) {
                throw MtpException.malformedFile(where + "[" + i + "] = " + a.get(i) + " is not an integer");
            }
            out[i] = a.get(i).asInt();
        }
        return out;
    }

    private static int[][] intRows(JsonNode a, String where) {
        int[][] out = new int[a.size()][];
        for (int i = 0; i < out.length; i++) {
            if (!a.get(i).isArray()) {
                throw MtpException.malformedFile(where + "[" + i + "] must be an array");
            }
            out[i] = ints(a.get(i), where + "[" + i + "]");
        }
        return out;
    }

    private static float[][] floatRows(JsonNode a, String where) {
        float[][] out = new float[a.size()][];
        for (int i = 0; i < out.length; i++) {
            JsonNode row = a.get(i);
            if (!row.isArray()) {
                throw MtpException.malformedFile(where + "[" + i + "] must be an array");
            }
            out[i] = new float[row.size()];
            for (int j = 0; j < row.size(); j++) {
                out[i][j] = floatValue(row.get(j), where + "[" + i + "][" + j + "]");
            }
        }
        return out;
    }

    /** A float written as a JSON number (parsed exactly, then rounded once to f32) or "Infinity"/"-Infinity"/"NaN". */
    static float floatValue(JsonNode v, String where) {
        if (v.isNumber()) {
            return Float.parseFloat(v.isBigDecimal() ? v.decimalValue().toString() : v.asText());
        }
        if (v.isTextual()) {
            switch (v.textValue()) {
                case "Infinity":
                    return Float.POSITIVE_INFINITY;
                case "-Infinity":
                    return Float.NEGATIVE_INFINITY;
                case "NaN":
                    return Float.NaN;
                default:
                    break;
            }
        }
        throw MtpException.malformedFile(where + " = " + v + " is not a number");
    }

    private static String text(JsonNode n, String field, String where) {
        JsonNode v = n.get(field);
        if (v == null || !v.isTextual()) {
            throw MtpException.malformedFile(where + ": '" + field + "' must be a string");
        }
        return v.textValue();
    }

    private static String optText(JsonNode n, String field) {
        JsonNode v = n.get(field);
        return v == null || v.isNull() ? null : v.asText();
    }

    private static int integer(JsonNode n, String field, String where) {
        JsonNode v = n.get(field);
        if (v == null || !v.isIntegralNumber() || !v.canConvertToInt()) {
            throw MtpException.malformedFile(where + ": '" + field + "' must be an integer");
        }
        return v.asInt();
    }

    private static double number(JsonNode n, String field, String where) {
        JsonNode v = n.get(field);
        if (v == null || !v.isNumber()) {
            throw MtpException.malformedFile(where + ": '" + field + "' must be a number");
        }
        return v.doubleValue();
    }
}
