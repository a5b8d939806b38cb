package org.mtporacle.conformance.trace;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.Tolerance;
import org.mtporacle.conformance.chain.Action;
import org.mtporacle.conformance.chain.BadCall;
import org.mtporacle.conformance.compare.Divergence;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** Reads and writes {@link ChainTrace} JSON; every malformed file fails with MALFORMED_FILE naming the field. */
public final class TraceFiles {
    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
    /** Traces are small; a larger file is refused before parsing. */
    public static final long MAX_BYTES = 16L * 1024 * 1024;

    private TraceFiles() {
    }

    public static void write(ChainTrace t, Path file) throws IOException {
        ObjectNode root = JSON.createObjectNode();
        root.put("format", t.format());
        root.put("fixture", t.fixture());
        root.put("modelIdentity", t.modelIdentity());
        root.put("backend", t.backend());
        root.set("backendOptions", JSON.valueToTree(t.backendOptions()));
        root.put("tolerance", t.tolerance().name());
        root.putObject("thresholds").put("tokenGap", t.tolerance().tokenGap())
                .put("kvNmse", t.tolerance().kvNmse()).put("hiddenNmse", t.tolerance().hiddenNmse());
        root.put("seed", t.seed());
        root.put("originalLength", t.originalLength());
        ArrayNode actions = root.putArray("actions");
        for (Action a : t.actions()) {
            actions.add(toJson(a));
        }
        if (t.divergence() != null) {
            ObjectNode d = root.putObject("divergence");
            d.put("action", t.divergence().actionIndex());
            d.put("kind", t.divergence().kind().name());
            d.put("category", t.divergence().category().name());
            d.put("message", t.divergence().message());
            d.set("details", JSON.valueToTree(t.divergence().details()));
        }
        Files.createDirectories(file.toAbsolutePath().getParent());
        JSON.writeValue(file.toFile(), root);
    }

    public static ChainTrace read(Path file) {
        String where = "trace " + file;
        JsonNode root;
        try {
            if (Files.size(file) > MAX_BYTES) {
                throw MtpException.malformedFile(where + ": " + Files.size(file) + " bytes, more than the "
                        + MAX_BYTES + " a trace may have");
            }
            root = JSON.readTree(file.toFile());
        } catch (IOException e) {
            throw MtpException.malformedFile(where + ": not readable JSON (" + String.valueOf(e.getMessage()).lines()
                    .findFirst().orElse("") + ")");
        }
        if (root == null || !root.isObject()) {
            throw MtpException.malformedFile(where + ": expected a JSON object");
        }
        String format = text(root, "format", where);
        if (!ChainTrace.FORMAT.equals(format)) {
            throw MtpException.malformedFile(where + ": format '" + format + "', expected '" + ChainTrace.FORMAT + "'");
        }
        JsonNode arr = root.get("actions");
        if (arr == null || !arr.isArray()) {
            throw MtpException.malformedFile(where + ": 'actions' must be an array");
        }
        List<Action> actions = new ArrayList<>();
        for (int i = 0; i < arr.size(); i++) {
            actions.add(fromJson(arr.get(i), where + ": actions[" + i + "]"));
        }
        Map<String, String> options = new LinkedHashMap<>();
        JsonNode opts = root.get("backendOptions");
        if (opts != null && opts.isObject()) {
            opts.fields().forEachRemaining(e -> options.put(e.getKey(), e.getValue().asText()));
        }
        Divergence div = null;
        JsonNode d = root.get("divergence");
        if (d != null && d.isObject()) {
            Map<String, Object> details = new LinkedHashMap<>();
            JsonNode det = d.get("details");
            if (det != null && det.isObject()) {
                det.fields().forEachRemaining(e -> details.put(e.getKey(), e.getValue().isNumber()
                        ? e.getValue().numberValue() : e.getValue().asText()));
            }
            Divergence.Kind kind;
            try {
                kind = Divergence.kindOf(d.has("kind") ? text(d, "kind", where + ": divergence") : null,
                        text(d, "category", where + ": divergence"));
            } catch (IllegalArgumentException e) {
                throw MtpException.malformedFile(where + ": divergence.kind or .category is not a known one");
            }
            div = new Divergence(kind, integer(d, "action", where + ": divergence"), "backend",
                    details.get("row") instanceof Integer r ? r : -1,
                    details.get("position") instanceof Integer p ? p : -1,
                    new Divergence.RecordedEvidence(details), text(d, "message", where + ": divergence"));
        }
        return new ChainTrace(format, text(root, "fixture", where), optText(root, "modelIdentity"),
                text(root, "backend", where), options, tolerance(root, where), longValue(root, "seed", where),
                actions, div, root.path("originalLength").asInt(actions.size()));
    }

    static ObjectNode toJson(Action a) {
        ObjectNode n = JSON.createObjectNode();
        // names are cased with Locale.ROOT: in a Turkish locale "FILTER_NULL".toLowerCase() is "fılter_null"
        switch (a) {
            case Action.Append x -> {
                n.put("op", "append");
                ArrayNode s = n.putArray("slots");
                x.slots().forEach(s::add);
                n.put("crossFeed", x.crossFeed());
            }
            case Action.Filter x -> n.put("op", "filter").put("seed", x.seed()).put("keepAll", x.keepAll());
            case Action.Prefill x -> n.put("op", "prefill").put("length", x.length()).put("seed", x.seed());
            case Action.Draft x -> n.put("op", "draft").put("depth", x.depth()).put("seed", x.seed())
                    .put("stochastic", x.stochastic());
            case Action.Commit x -> n.put("op", "commit")
                    .put("acceptance", x.acceptance().name().toLowerCase(Locale.ROOT))
                    .put("seed", x.seed());
            case Action.Capture x -> n.put("op", "capture").put("seed", x.seed());
            case Action.Bad x -> n.put("op", "bad").put("call", x.call().name().toLowerCase(Locale.ROOT))
                    .put("seed", x.seed());
        }
        return n;
    }

    static Action fromJson(JsonNode n, String where) {
        if (n == null || !n.isObject()) {
            throw MtpException.malformedFile(where + ": expected an object");
        }
        String op = text(n, "op", where);
        return switch (op) {
            case "append" -> {
                JsonNode s = n.get("slots");
                if (s == null || !s.isArray() || s.size() > 4096) {
                    throw MtpException.malformedFile(where + ": 'slots' must be an array of at most 4096 integers");
                }
                List<Integer> slots = new ArrayList<>();
                for (JsonNode v : s) {
                    if (!v.canConvertToInt()) {
                        throw MtpException.malformedFile(where + ": slot " + v + " is not an integer");
                    }
                    slots.add(v.asInt());
                }
                yield new Action.Append(slots, n.path("crossFeed").asBoolean(false));
            }
            case "filter" -> new Action.Filter(longValue(n, "seed", where), n.path("keepAll").asBoolean(false));
            case "prefill" -> new Action.Prefill(bounded(n, "length", 1, 1 << 20, where), longValue(n, "seed", where));
            case "draft" -> new Action.Draft(bounded(n, "depth", 0, 1024, where), longValue(n, "seed", where),
                    n.path("stochastic").asBoolean(false));
            case "commit" -> {
                String acc = text(n, "acceptance", where);
                try {
                    yield new Action.Commit(Action.Acceptance.valueOf(acc.toUpperCase(Locale.ROOT)),
                            longValue(n, "seed", where));
                } catch (IllegalArgumentException e) {
                    throw MtpException.malformedFile(where + ": acceptance '" + acc
                            + "', expected none, full or random");
                }
            }
            case "capture" -> new Action.Capture(longValue(n, "seed", where));
            case "bad" -> {
                String call = text(n, "call", where);
                try {
                    yield new Action.Bad(BadCall.valueOf(call.toUpperCase(Locale.ROOT).replace('-', '_')),
                            longValue(n, "seed", where));
                } catch (IllegalArgumentException e) {
                    throw MtpException.malformedFile(where + ": unknown bad call '" + call + "'");
                }
            }
            default -> throw MtpException.malformedFile(where + ": unknown op '" + op + "'");
        };
    }

    /** The trace's profile: {@code thresholds} when present (any profile), else the built-in one it names. */
    private static Tolerance tolerance(JsonNode root, String where) {
        String name = text(root, "tolerance", where);
        JsonNode th = root.get("thresholds");
        try {
            if (th == null) {
                return Tolerance.named(name);
            }
            if (!th.isObject()) {
                throw MtpException.malformedFile(where + ": 'thresholds' must be an object");
            }
            return new Tolerance(name, number(th, "tokenGap", where + ": thresholds"),
                    number(th, "kvNmse", where + ": thresholds"), number(th, "hiddenNmse", where + ": thresholds"));
        } catch (MtpException e) {
            throw e.kind() == MtpException.Kind.MALFORMED_FILE ? e : MtpException.malformedFile(where + ": "
                    + e.getMessage());
        }
    }

    private static double number(JsonNode n, String field, String where) {
        JsonNode v = n.get(field);
        if (v == null || !v.isNumber()) {
            throw MtpException.malformedFile(where + ": '" + field + "' must be a number");
        }
        return v.doubleValue();
    }

    private static String text(JsonNode n, String field, String where) {
        JsonNode v = n.get(field);
        if (v == null || !v.isTextual()) {
            throw MtpException.malformedFile(where + ": '" + field + "' must be a string");
        }
        return v.asText();
    }

    private static String optText(JsonNode n, String field) {
        JsonNode v = n.get(field);
        return v == null || v.isNull() ? "" : v.asText();
    }

    private static long longValue(JsonNode n, String field, String where) {
        JsonNode v = n.get(field);
        if (v == null || !v.canConvertToLong()) {
            throw MtpException.malformedFile(where + ": '" + field + "' must be an integer");
        }
        return v.asLong();
    }

    private static int integer(JsonNode n, String field, String where) {
        JsonNode v = n.get(field);
        if (v == null || !v.canConvertToInt()) {
            throw MtpException.malformedFile(where + ": '" + field + "' must be an integer");
        }
        return v.asInt();
    }

    private static int bounded(JsonNode n, String field, int min, int max, String where) {
        int v = integer(n, field, where);
        if (v < min || v > max) {
            throw MtpException.malformedFile(where + ": '" + field + "' = " + v + " outside [" + min + ", " + max + "]");
        }
        return v;
    }
}
