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
import org.mtporacle.api.RowContract;
import org.mtporacle.api.UntrustedText;
import org.mtporacle.api.RowSampler;
import org.mtporacle.conformance.golden.GoldenTrace.Expect;
import org.mtporacle.conformance.golden.GoldenTrace.RowState;
import org.mtporacle.conformance.golden.GoldenTrace.Source;
import org.mtporacle.conformance.golden.GoldenTrace.Step;
import org.mtporacle.io.DocumentFiles;
import org.mtporacle.io.SafetensorsFile;
import org.mtporacle.io.StrictJson;
import org.mtporacle.io.SafetensorsWriter;

import java.io.IOException;
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
    /** For writing; reading goes through {@link StrictJson}, with the same exact decimals. */
    static final ObjectMapper JSON = new ObjectMapper()
            .enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS)
            .setNodeFactory(JsonNodeFactory.withExactBigDecimals(true));
    /** Golden JSON larger than this is refused before parsing. */
    public static final long MAX_JSON_BYTES = 64L * 1024 * 1024;
    /** The companion tensors file is refused above this size, before it is mapped (the committed ones are KiBs). */
    public static final long MAX_TENSOR_BYTES = 1L << 30;
    /** At most this many steps per trace. */
    public static final int MAX_STEPS = 65_536;
    /** At most this many rows in the group, and entries in any per-row list. */
    public static final int MAX_ROWS = 4096;

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
            return GoldenTrace.FORMAT.equals(StrictJson.read(file, MAX_JSON_BYTES, "golden").path("format")
                    .asText());
        } catch (MtpException e) {
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
        String where = "golden " + UntrustedText.path(file);
        ObjectNode root = parse(file, where);
        String format = StrictJson.optText(root, "format", where);
        if (!GoldenTrace.FORMAT.equals(format)) {
            throw MtpException.malformedFile(where + (format == null ? ": no \"format\"" : ": format "
                    + UntrustedText.quote(format)) + ", expected '" + GoldenTrace.FORMAT + "'");
        }
        String recorded = StrictJson.optText(root, "contentSha256", where);
        ObjectNode content = root.deepCopy();
        content.remove("contentSha256");
        String actual = JsonText.canonicalSha256(content);
        if (recorded == null) {
            throw MtpException.malformedFile(where + ": no contentSha256 (every golden carries the SHA-256 of its "
                    + "canonical JSON)");
        }
        if (!recorded.equals(actual)) {
            throw MtpException.malformedFile(where + ": contentSha256 mismatch, the JSON was changed after it was "
                    + "written: canonical JSON hashes to " + actual + ", the file says "
                    + UntrustedText.digestPrefix(recorded));
        }
        GoldenTrace trace = fromJson(root, where);
        Path st = DocumentFiles.sibling(file, trace.tensorsFile(), MAX_TENSOR_BYTES, where + ": tensors.file");
        // the digest first: a file other than the one the trace vouches for is never parsed
        String sha = DocumentFiles.sha256(st, where + ": tensors.file");
        if (!sha.equals(trace.tensorsSha256())) {
            throw MtpException.malformedFile(where + ": tensors.sha256 mismatch, " + trace.tensorsFile()
                    + " was changed or corrupted: it hashes to " + sha + ", the trace says "
                    + UntrustedText.digestPrefix(trace.tensorsSha256()));
        }
        // mapped, not copied: the views stay valid while the golden is reachable
        SafetensorsFile f = SafetensorsFile.open(st, true);
        long tensorBytes = 8 + f.headerBytes() + f.dataBytes();
        Map<String, HostTensor> tensors = new LinkedHashMap<>();
        for (Map.Entry<String, String> m : Map.of("format", GoldenTrace.FORMAT, "golden", trace.name()).entrySet()) {
            if (!m.getValue().equals(f.metadata().get(m.getKey()))) {
                throw MtpException.malformedFile(where + ": " + trace.tensorsFile() + " __metadata__." + m.getKey()
                        + " = " + quoted(f.metadata().get(m.getKey())) + ", expected '" + m.getValue()
                        + "' (golden/README.md)");
            }
        }
        for (String n : f.names()) {
            tensors.put(n, f.tensor(n));
        }
        long jsonBytes;
        try {
            jsonBytes = Files.size(file);
        } catch (IOException e) {
            jsonBytes = -1;
        }
        return new Golden(file, trace, tensors, jsonBytes, tensorBytes);
    }

    /** {@code v} as a JSON string (control characters escaped, at most 80 characters kept), or "absent". */
    private static String quoted(String v) {
        return v == null ? "absent" : new com.fasterxml.jackson.databind.node.TextNode(v.length() > 80
                ? v.substring(0, 80) + "…" : v).toString();
    }

    /** The JSON object of {@code file} without checking checksums (for diff and inspect of damaged files). */
    public static ObjectNode parse(Path file, String where) {
        return StrictJson.read(file, MAX_JSON_BYTES, "golden");
    }

    /** The trace in {@code file} without checking checksums or reading tensors (for inspect and diff). */
    public static GoldenTrace fromJsonUnchecked(Path file) {
        String where = "golden " + UntrustedText.path(file);
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
                    sm.add(sampler(r));
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
        if (e.experts() != null) {
            ArrayNode ex = n.putArray("experts");
            for (int[][] row : e.experts()) {
                ArrayNode a = ex.addArray();
                for (int[] entry : row) {
                    ints(a.addArray(), entry);
                }
            }
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

    static void ints(ArrayNode a, int[] v) {
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

    // ---- from JSON: every required field present with its type, every list bounded and of the right length ----

    static GoldenTrace fromJson(ObjectNode root, String where) {
        JsonNode m = StrictJson.object(root, "model", where);
        String w = where + ": model.config";
        JsonNode c = StrictJson.object(m, "config", where + ": model");
        MtpConfig config;
        try {
            config = new MtpConfig(StrictJson.integer(c, "hiddenSize", w), StrictJson.integer(c, "numHeads", w),
                    StrictJson.integer(c, "numKvHeads", w), StrictJson.integer(c, "headDim", w),
                    StrictJson.integer(c, "rotaryDims", w), StrictJson.number(c, "ropeTheta", w),
                    StrictJson.number(c, "rmsNormEps", w), StrictJson.integer(c, "vocabSize", w),
                    StrictJson.integer(c, "intermediateSize", w));
        } catch (MtpException e) {
            throw e.kind() == MtpException.Kind.MALFORMED_FILE ? e : MtpException.malformedFile(w + ": "
                    + e.getMessage());
        }
        String mw = where + ": model";
        GoldenTrace.ModelRef model = new GoldenTrace.ModelRef(StrictJson.optText(m, "fixture", mw),
                StrictJson.optText(m, "path", mw), StrictJson.text(m, "identity", mw), config);
        String ow = where + ": options";
        JsonNode o = StrictJson.object(root, "options", where);
        GoldenTrace.Options options = new GoldenTrace.Options(StrictJson.text(o, "contexts", ow),
                StrictJson.optText(o, "tap", ow), StrictJson.optText(o, "sampling", ow),
                StrictJson.text(o, "engine", ow), StrictJson.stringMap(o, "engineOptions", ow),
                StrictJson.optText(o, "numerics", ow), StrictJson.text(o, "tolerance", ow));
        JsonNode t = StrictJson.object(root, "tensors", where);
        String tensorsFile = StrictJson.text(t, "file", where + ": tensors");
        DocumentFiles.checkName(tensorsFile, where + ": tensors.file");
        String tensorsSha = sha256Text(t, "sha256", where + ": tensors");
        JsonNode arr = StrictJson.array(root, "steps", MAX_STEPS, where);
        List<Step> steps = new ArrayList<>();
        for (int i = 0; i < arr.size(); i++) {
            steps.add(step(arr.get(i), where + ": steps[" + i + "]"));
        }
        return new GoldenTrace(StrictJson.text(root, "name", where), StrictJson.optText(root, "description", where),
                model, options, tensorsFile, tensorsSha, steps);
    }

    /**
     * One step: every field of its op present with its type, every list bounded. Whether the observables a step
     * must record are there, one per row ({@code GoldenChecks}), is checked before replay.
     */
    static Step step(JsonNode n, String where) {
        if (n == null || !n.isObject()) {
            throw MtpException.malformedFile(where + ": expected an object, got " + StrictJson.describe(n));
        }
        String op = StrictJson.text(n, "op", where);
        Expect e = expect(StrictJson.object(n, "expect", where), where + ".expect");
        return switch (op) {
            case "append" -> append(n, where, e);
            case "filter" -> new GoldenTrace.Filter(ints(StrictJson.array(n, "keep", MAX_ROWS, where), 0, MAX_ROWS,
                    where + ".keep"), e);
            case "prefill" -> new GoldenTrace.Prefill(intRows(StrictJson.array(n, "tokens", MAX_ROWS, where),
                    where + ".tokens"), StrictJson.text(n, "context", where), e);
            case "draft" -> draft(n, where, e);
            case "commit" -> new GoldenTrace.Commit(ints(StrictJson.array(n, "accepted", MAX_ROWS, where), 0,
                    RowContract.MAX_DEPTH, where + ".accepted"), StrictJson.text(n, "context", where), e);
            case "capture" -> new GoldenTrace.Capture(StrictJson.integer(n, "row", 0, MAX_ROWS, where),
                    StrictJson.text(n, "id", where), e);
            default -> throw MtpException.malformedFile(where + ": unknown op " + UntrustedText.quote(op)
                    + " (expected append, filter, prefill, draft, commit or capture)");
        };
    }

    private static Step append(JsonNode n, String where, Expect e) {
        JsonNode rows = StrictJson.array(n, "rows", MAX_ROWS, where);
        List<Source> src = new ArrayList<>();
        for (int i = 0; i < rows.size(); i++) {
            JsonNode r = rows.get(i);
            String rw = where + ".rows[" + i + "]";
            if (r.isNull()) {
                src.add(Source.COLD);
                continue;
            }
            if (!r.isObject()) {
                throw MtpException.malformedFile(rw + " = " + StrictJson.describe(r) + ", expected null or an "
                        + "object");
            }
            String from = StrictJson.text(r, "from", rw);
            if (!from.equals("capture") && !from.equals("file")) {
                throw MtpException.malformedFile(rw + ".from = " + UntrustedText.quote(from)
                        + ", expected capture or file");
            }
            src.add(new Source(StrictJson.text(r, "checkpoint", rw), from.equals("file")));
        }
        return new GoldenTrace.Append(src, e);
    }

    private static Step draft(JsonNode n, String where, Expect e) {
        int depth = StrictJson.integer(n, "depth", 0, RowContract.MAX_DEPTH, where);
        JsonNode st = StrictJson.array(n, "steps", MAX_ROWS, where);
        long[] steps = new long[st.size()];
        for (int i = 0; i < steps.length; i++) {
            JsonNode v = st.get(i);
            if (!v.isIntegralNumber() || !v.canConvertToLong() || v.longValue() < 0) {
                throw MtpException.malformedFile(where + ".steps[" + i + "] = " + StrictJson.describe(v)
                        + ", expected a non-negative integer");
            }
            steps[i] = v.longValue();
        }
        JsonNode sm = StrictJson.array(n, "samplers", MAX_ROWS, where);
        List<RowSampler> samplers = new ArrayList<>();
        for (int i = 0; i < sm.size(); i++) {
            samplers.add(sampler(sm.get(i), where + ".samplers[" + i + "]"));
        }
        int[] pending = ints(StrictJson.array(n, "pending", MAX_ROWS, where), 0, Integer.MAX_VALUE,
                where + ".pending");
        return new GoldenTrace.Draft(pending, depth, steps, samplers, e);
    }

    /** A sampler as goldens write it: {@code {temperature, topK, topP, seed}}, the seed a decimal string. */
    static ObjectNode sampler(RowSampler r) {
        ObjectNode n = JSON.createObjectNode();
        n.put("temperature", r.temperature()).put("topK", r.topK()).put("topP", r.topP())
                .put("seed", Long.toString(r.seed()));
        return n;
    }

    /** A sampler as {@link #sampler(RowSampler)} writes it, every field checked. */
    static RowSampler sampler(JsonNode s, String w) {
        if (s == null || !s.isObject()) {
            throw MtpException.malformedFile(w + " = " + StrictJson.describe(s) + ", expected an object");
        }
        String seedText = StrictJson.text(s, "seed", w);
        long seed;
        try {
            seed = Long.parseLong(seedText);
        } catch (NumberFormatException x) {
            throw MtpException.malformedFile(w + ".seed = " + UntrustedText.quote(seedText) + ", expected the "
                    + "decimal string of a signed 64-bit integer");
        }
        try {
            return new RowSampler(StrictJson.number(s, "temperature", w), StrictJson.integer(s, "topK", w),
                    StrictJson.number(s, "topP", w), seed);
        } catch (MtpException x) {
            throw x.kind() == MtpException.Kind.MALFORMED_FILE ? x : MtpException.malformedFile(w + ": "
                    + x.getMessage());
        }
    }

    /** The observables present in {@code n}, each with its type; which must be present is GoldenChecks' rule. */
    private static Expect expect(JsonNode n, String where) {
        int rowCount = StrictJson.integer(n, "rowCount", 0, MAX_ROWS, where);
        String error = StrictJson.optText(n, "error", where);
        int[][] tokens = null;
        float[][] lps = null;
        float[][] gaps = null;
        if (n.has("tokens") || n.has("logprobs") || n.has("top2Gaps")) {
            tokens = intRows(StrictJson.array(n, "tokens", MAX_ROWS, where), where + ".tokens");
            lps = floatRows(StrictJson.array(n, "logprobs", MAX_ROWS, where), where + ".logprobs");
            gaps = floatRows(StrictJson.array(n, "top2Gaps", MAX_ROWS, where), where + ".top2Gaps");
            if (lps.length != tokens.length || gaps.length != tokens.length) {
                throw MtpException.malformedFile(where + ": tokens, logprobs and top2Gaps have " + tokens.length
                        + ", " + lps.length + " and " + gaps.length + " rows, expected the same");
            }
            for (int r = 0; r < tokens.length; r++) {
                if (lps[r].length != tokens[r].length || gaps[r].length != tokens[r].length) {
                    throw MtpException.malformedFile(where + ": tokens, logprobs and top2Gaps[" + r + "] must have "
                            + "the same length");
                }
            }
        }
        List<RowState> rows = null;
        if (n.has("rows")) {
            JsonNode a = StrictJson.array(n, "rows", MAX_ROWS, where);
            rows = new ArrayList<>();
            for (int i = 0; i < a.size(); i++) {
                rows.add(a.get(i).isNull() ? null : rowState(a.get(i), where + ".rows[" + i + "]"));
            }
        }
        RowState cp = n.has("checkpoint") ? rowState(n.get("checkpoint"), where + ".checkpoint") : null;
        int[][][] experts = null;
        if (n.has("experts")) {
            JsonNode a = StrictJson.array(n, "experts", MAX_ROWS, where);
            experts = new int[a.size()][][];
            for (int r = 0; r < experts.length; r++) {
                if (!a.get(r).isArray()) {
                    throw MtpException.malformedFile(where + ".experts[" + r + "] must be an array, got "
                            + StrictJson.describe(a.get(r)));
                }
                experts[r] = intRows(a.get(r), where + ".experts[" + r + "]");
            }
        }
        return new Expect(error, rowCount, tokens, lps, gaps, rows, cp, experts);
    }

    private static RowState rowState(JsonNode n, String where) {
        if (n == null || !n.isObject()) {
            throw MtpException.malformedFile(where + ": expected an object or null, got " + StrictJson.describe(n));
        }
        int p = StrictJson.integer(n, "P", 1, Integer.MAX_VALUE, where);
        int offset = StrictJson.integer(n, "draftOffset", 0, Integer.MAX_VALUE, where);
        String tensors = StrictJson.optText(n, "tensors", where);
        return new RowState(p, offset, sha256Text(n, "sha256", where), tensors);
    }

    /** A SHA-256 written as 64 lowercase hex digits. */
    static String sha256Text(JsonNode n, String field, String where) {
        String v = StrictJson.text(n, field, where);
        if (!v.matches("[0-9a-f]{64}")) {
            throw MtpException.malformedFile(where + ": '" + field + "' = " + UntrustedText.digestPrefix(v) + " ("
                    + v.length() + " chars), expected 64 lowercase hex digits");
        }
        return v;
    }

    static int[] ints(JsonNode a, int min, int max, String where) {
        int[] out = new int[a.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = StrictJson.intElement(a.get(i), min, max, where + "[" + i + "]");
        }
        return out;
    }

    static int[][] intRows(JsonNode a, String where) {
        int[][] out = new int[a.size()][];
        for (int i = 0; i < out.length; i++) {
            if (!a.get(i).isArray()) {
                throw MtpException.malformedFile(where + "[" + i + "] must be an array, got "
                        + StrictJson.describe(a.get(i)));
            }
            out[i] = ints(a.get(i), 0, Integer.MAX_VALUE, where + "[" + i + "]");
        }
        return out;
    }

    private static float[][] floatRows(JsonNode a, String where) {
        float[][] out = new float[a.size()][];
        for (int i = 0; i < out.length; i++) {
            JsonNode row = a.get(i);
            if (!row.isArray()) {
                throw MtpException.malformedFile(where + "[" + i + "] must be an array, got "
                        + StrictJson.describe(row));
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
            // StrictJson has bounded the literal's length and its double range, so this conversion cannot fail
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
        throw MtpException.malformedFile(where + " = " + StrictJson.describe(v) + " is not a number");
    }
}
