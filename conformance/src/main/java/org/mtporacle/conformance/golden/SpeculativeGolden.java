package org.mtporacle.conformance.golden;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.mtporacle.api.HiddenTap;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.RowContract;
import org.mtporacle.api.UntrustedText;
import org.mtporacle.conformance.golden.SpeculativeRun.Round;
import org.mtporacle.conformance.golden.SpeculativeRun.Row;
import org.mtporacle.conformance.golden.SpeculativeRun.State;
import org.mtporacle.io.StrictJson;
import org.mtporacle.reference.target.SpeculativeDecoding.KvPolicy;
import org.mtporacle.reference.target.SpeculativeDecoding.Options;
import org.mtporacle.reference.target.SpeculativeDecoding.Request;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * A golden of a whole speculative run (format {@value #FORMAT}, golden/README.md): the requests and the loop's declared
 * options as concrete values, and what the run must produce: per round, per request, the drafted tokens, the accepted
 * count, the emitted tokens and the target's and drafter's states after the commits; and every request's output, which
 * equals plain decoding's (checked when recorded). One JSON file; its {@code contentSha256} covers everything else.
 *
 * @param depths       the depth asked for at round {@code r}: {@code depths[min(r, n − 1)]} (the loop caps it)
 * @param restoreAfter rounds after which every row is captured and restored in reverse order
 */
public record SpeculativeGolden(String name, String description, String fixture, String targetIdentity,
                                String drafterIdentity, HiddenTap tap, KvPolicy policy, int[] depths,
                                int[] restoreAfter, String engine, Map<String, String> engineOptions, String numerics,
                                String tolerance, List<Request> requests, List<Round> rounds, List<int[]> outputs) {
    public static final String FORMAT = "mtp-oracle-golden-speculative/1";
    /** Limits on what a golden may ask the loop to run (untrusted input). */
    static final int MAX_REQUESTS = 64;
    static final int MAX_TOKENS = 4096;
    static final int MAX_PROMPT = 4096;
    static final int MAX_ROUNDS = 65_536;

    public SpeculativeGolden {
        engineOptions = Map.copyOf(engineOptions);
        requests = List.copyOf(requests);
        rounds = List.copyOf(rounds);
        outputs = List.copyOf(outputs);
    }

    /** The loop's options this golden declares. */
    public Options options() {
        int[] d = depths.clone();
        int[] restore = restoreAfter.clone();
        return new Options(tap, policy, round -> d[Math.min(round, d.length - 1)],
                round -> Arrays.stream(restore).anyMatch(x -> x == round));
    }

    /** True when {@code file}'s JSON {@code format} is {@value #FORMAT} (without verifying anything else). */
    public static boolean isGolden(Path file) {
        try {
            return FORMAT.equals(StrictJson.read(file, GoldenFiles.MAX_JSON_BYTES, "golden").path("format").asText());
        } catch (MtpException e) {
            return false;
        }
    }

    /** Writes {@code NAME.json} into {@code dir}, with its {@code contentSha256}. */
    public Path write(Path dir) {
        ObjectNode root = toJson();
        root.put("contentSha256", JsonText.canonicalSha256(root));
        Path json = dir.resolve(name + ".json");
        try {
            Files.createDirectories(dir);
            Files.writeString(json, JsonText.pretty(root));
        } catch (IOException e) {
            throw new MtpException(MtpException.Kind.MALFORMED_FILE, "golden: cannot write " + json + " ("
                    + org.mtporacle.io.IoErrors.describe(e) + ")", e);
        }
        return json;
    }

    /**
     * Reads {@code file}, its checksum first.
     *
     * @throws MtpException MALFORMED_FILE naming the file and the field for unreadable JSON, another format, a
     *                      checksum mismatch or a field out of its bounds
     */
    public static SpeculativeGolden read(Path file) {
        String where = "golden " + UntrustedText.path(file);
        ObjectNode root = StrictJson.read(file, GoldenFiles.MAX_JSON_BYTES, "golden");
        String format = StrictJson.optText(root, "format", where);
        if (!FORMAT.equals(format)) {
            throw MtpException.malformedFile(where + (format == null ? ": no \"format\"" : ": format "
                    + UntrustedText.quote(format)) + ", expected '" + FORMAT + "'");
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
        return fromJson(root, where);
    }

    /** The golden in {@code file} without checking its checksum (for diff). */
    public static SpeculativeGolden readUnchecked(Path file) {
        String where = "golden " + UntrustedText.path(file);
        return fromJson(StrictJson.read(file, GoldenFiles.MAX_JSON_BYTES, "golden"), where);
    }

    // ---- to JSON ----

    ObjectNode toJson() {
        ObjectNode root = GoldenFiles.JSON.createObjectNode();
        root.put("format", FORMAT);
        root.put("name", name);
        root.put("description", description);
        root.putObject("model").put("fixture", fixture).put("targetIdentity", targetIdentity)
                .put("drafterIdentity", drafterIdentity);
        ObjectNode o = root.putObject("options");
        o.put("tap", tap.label());
        o.put("kvPolicy", policy.label());
        GoldenFiles.ints(o.putArray("depths"), depths);
        GoldenFiles.ints(o.putArray("restoreAfter"), restoreAfter);
        o.put("engine", engine);
        o.set("engineOptions", GoldenFiles.JSON.valueToTree(new TreeMap<>(engineOptions)));
        o.put("numerics", numerics);
        o.put("tolerance", tolerance);
        ArrayNode rq = root.putArray("requests");
        for (Request q : requests) {
            ObjectNode n = rq.addObject();
            GoldenFiles.ints(n.putArray("prompt"), q.prompt());
            n.set("sampler", GoldenFiles.sampler(q.sampler()));
            n.put("maxTokens", q.maxTokens()).put("joinRound", q.joinRound());
        }
        ArrayNode rs = root.putArray("rounds");
        for (Round r : rounds) {
            ObjectNode n = rs.addObject().put("round", r.round()).put("depth", r.depth());
            ArrayNode rows = n.putArray("rows");
            for (Row w : r.rows()) {
                ObjectNode x = rows.addObject().put("request", w.request());
                GoldenFiles.ints(x.putArray("drafted"), w.drafted());
                x.put("accepted", w.accepted());
                GoldenFiles.ints(x.putArray("emitted"), w.emitted());
                x.set("target", state(w.target()));
                x.set("drafter", state(w.drafter()));
            }
        }
        ArrayNode out = root.putArray("outputs");
        for (int[] o2 : outputs) {
            GoldenFiles.ints(out.addArray(), o2);
        }
        return root;
    }

    private static ObjectNode state(State s) {
        ObjectNode n = GoldenFiles.JSON.createObjectNode().put("P", s.processedTokens()).put("sha256", s.sha256());
        ArrayNode a = n.putArray("norms");
        for (double v : s.norms()) {
            a.add(v);
        }
        return n;
    }

    // ---- from JSON: every field present with its type and within its bounds ----

    private static SpeculativeGolden fromJson(ObjectNode root, String where) {
        JsonNode m = StrictJson.object(root, "model", where);
        String mw = where + ": model";
        JsonNode o = StrictJson.object(root, "options", where);
        String ow = where + ": options";
        HiddenTap tap;
        KvPolicy policy;
        try {
            tap = HiddenTap.of(StrictJson.text(o, "tap", ow));
            policy = KvPolicy.of(StrictJson.text(o, "kvPolicy", ow));
        } catch (MtpException e) {
            throw e.kind() == MtpException.Kind.MALFORMED_FILE ? e : MtpException.malformedFile(ow + ": "
                    + e.getMessage());
        }
        int[] depths = GoldenFiles.ints(StrictJson.array(o, "depths", MAX_ROUNDS, ow), 0, RowContract.MAX_DEPTH,
                ow + ".depths");
        if (depths.length == 0) {
            throw MtpException.malformedFile(ow + ".depths is empty, expected at least one depth");
        }
        int[] restore = GoldenFiles.ints(StrictJson.array(o, "restoreAfter", MAX_ROUNDS, ow), 0, MAX_ROUNDS,
                ow + ".restoreAfter");
        JsonNode rq = StrictJson.array(root, "requests", MAX_REQUESTS, where);
        List<Request> requests = new ArrayList<>();
        for (int i = 0; i < rq.size(); i++) {
            String w = where + ": requests[" + i + "]";
            JsonNode n = rq.get(i);
            if (n == null || !n.isObject()) {
                throw MtpException.malformedFile(w + " = " + StrictJson.describe(n) + ", expected an object");
            }
            int[] prompt = GoldenFiles.ints(StrictJson.array(n, "prompt", MAX_PROMPT, w), 0, Integer.MAX_VALUE,
                    w + ".prompt");
            if (prompt.length == 0) {
                throw MtpException.malformedFile(w + ".prompt is empty, expected at least one token");
            }
            requests.add(new Request(prompt, GoldenFiles.sampler(StrictJson.object(n, "sampler", w), w + ".sampler"),
                    StrictJson.integer(n, "maxTokens", 1, MAX_TOKENS, w),
                    StrictJson.integer(n, "joinRound", 0, MAX_ROUNDS, w)));
        }
        JsonNode rs = StrictJson.array(root, "rounds", MAX_ROUNDS, where);
        List<Round> rounds = new ArrayList<>();
        for (int k = 0; k < rs.size(); k++) {
            rounds.add(round(rs.get(k), where + ": rounds[" + k + "]", requests.size()));
        }
        JsonNode out = StrictJson.array(root, "outputs", MAX_REQUESTS, where);
        List<int[]> outputs = new ArrayList<>();
        for (int q = 0; q < out.size(); q++) {
            String w = where + ": outputs[" + q + "]";
            if (!out.get(q).isArray()) {
                throw MtpException.malformedFile(w + " must be an array, got " + StrictJson.describe(out.get(q)));
            }
            outputs.add(GoldenFiles.ints(out.get(q), 0, Integer.MAX_VALUE, w));
            if (q < requests.size() && outputs.get(q).length != requests.get(q).maxTokens()) {
                throw MtpException.malformedFile(w + " has " + outputs.get(q).length + " tokens, expected requests["
                        + q + "].maxTokens = " + requests.get(q).maxTokens());
            }
        }
        if (outputs.size() != requests.size()) {
            throw MtpException.malformedFile(where + ": outputs has " + outputs.size() + " entries, expected one per "
                    + "request (" + requests.size() + ")");
        }
        return new SpeculativeGolden(StrictJson.text(root, "name", where),
                StrictJson.optText(root, "description", where), StrictJson.optText(m, "fixture", mw),
                GoldenFiles.sha256Text(m, "targetIdentity", mw), GoldenFiles.sha256Text(m, "drafterIdentity", mw),
                tap, policy, depths, restore, StrictJson.text(o, "engine", ow),
                StrictJson.stringMap(o, "engineOptions", ow), StrictJson.optText(o, "numerics", ow),
                StrictJson.text(o, "tolerance", ow), requests, rounds, outputs);
    }

    private static Round round(JsonNode n, String where, int requests) {
        if (n == null || !n.isObject()) {
            throw MtpException.malformedFile(where + " = " + StrictJson.describe(n) + ", expected an object");
        }
        int depth = StrictJson.integer(n, "depth", 0, RowContract.MAX_DEPTH, where);
        JsonNode a = StrictJson.array(n, "rows", MAX_REQUESTS, where);
        List<Row> rows = new ArrayList<>();
        for (int i = 0; i < a.size(); i++) {
            String w = where + ".rows[" + i + "]";
            JsonNode x = a.get(i);
            if (x == null || !x.isObject()) {
                throw MtpException.malformedFile(w + " = " + StrictJson.describe(x) + ", expected an object");
            }
            int[] drafted = GoldenFiles.ints(StrictJson.array(x, "drafted", RowContract.MAX_DEPTH, w), 0,
                    Integer.MAX_VALUE, w + ".drafted");
            if (drafted.length != depth) {
                throw MtpException.malformedFile(w + ".drafted has " + drafted.length + " tokens, expected the "
                        + "round's depth " + depth);
            }
            rows.add(new Row(StrictJson.integer(x, "request", 0, requests - 1, w), drafted,
                    StrictJson.integer(x, "accepted", 0, depth, w),
                    GoldenFiles.ints(StrictJson.array(x, "emitted", RowContract.MAX_DEPTH + 1, w), 0,
                            Integer.MAX_VALUE, w + ".emitted"),
                    state(StrictJson.object(x, "target", w), w + ".target", State.TARGET.size()),
                    state(StrictJson.object(x, "drafter", w), w + ".drafter", State.DRAFTER.size())));
        }
        return new Round(StrictJson.integer(n, "round", 0, MAX_ROUNDS, where), depth, rows);
    }

    private static State state(JsonNode n, String where, int tensors) {
        JsonNode a = StrictJson.array(n, "norms", tensors, where);
        if (a.size() != tensors) {
            throw MtpException.malformedFile(where + ".norms has " + a.size() + " values, expected " + tensors);
        }
        double[] norms = new double[tensors];
        for (int i = 0; i < tensors; i++) {
            JsonNode v = a.get(i);
            norms[i] = v.isNumber() ? v.doubleValue() : -1;
            if (!(norms[i] >= 0) || Double.isInfinite(norms[i])) {
                throw MtpException.malformedFile(where + ".norms[" + i + "] = " + StrictJson.describe(v)
                        + ", expected a finite number ≥ 0");
            }
        }
        return new State(StrictJson.integer(n, "P", 1, Integer.MAX_VALUE, where),
                GoldenFiles.sha256Text(n, "sha256", where), norms);
    }
}
