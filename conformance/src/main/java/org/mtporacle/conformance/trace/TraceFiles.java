package org.mtporacle.conformance.trace;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.mtporacle.api.HiddenTap;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.RowContract;
import org.mtporacle.api.Tolerance;
import org.mtporacle.api.UntrustedText;
import org.mtporacle.conformance.chain.Action;
import org.mtporacle.conformance.chain.BadCall;
import org.mtporacle.conformance.chain.ContextSource;
import org.mtporacle.conformance.chain.GroupShape;
import org.mtporacle.conformance.chain.ShapeRules;
import org.mtporacle.conformance.compare.Divergence;
import org.mtporacle.io.StrictJson;

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
    /** At most this many actions. */
    public static final int MAX_ACTIONS = 100_000;
    /** At most this many rows in the group at any time (and slots in one append). */
    public static final int MAX_ROWS = 64;
    /** The longest prefill. */
    public static final int MAX_PREFILL = 4096;
    /** The most (token, cached position) pairs a replay may compute: about 2^27 (seconds on the fixtures). */
    public static final long MAX_WORK = 1L << 27;
    /** At most this many backend options (a profile has a handful). */
    public static final int MAX_OPTIONS = 64;
    /** The longest backend option key or value, in characters. */
    public static final int MAX_OPTION_LENGTH = 1024;

    private TraceFiles() {
    }

    /**
     * The optional {@code backendOptions} object of a trace (drafter, target or loop): strings only, at most {@value
     * #MAX_OPTIONS} entries, keys and values at most {@value #MAX_OPTION_LENGTH} characters; empty when absent or
     * null. Anything else is MALFORMED_FILE naming the field ({@code where} names the file).
     */
    public static Map<String, String> backendOptions(JsonNode root, String where) {
        JsonNode v = root.get("backendOptions");
        if (v != null && v.isObject() && v.size() > MAX_OPTIONS) {
            throw MtpException.malformedFile(where + ": 'backendOptions' has " + v.size() + " entries, at most "
                    + MAX_OPTIONS);
        }
        Map<String, String> options = StrictJson.stringMap(root, "backendOptions", where);
        for (Map.Entry<String, String> e : options.entrySet()) {
            if (e.getKey().isEmpty()) {
                throw MtpException.malformedFile(where + ": 'backendOptions' has an empty key");
            }
            if (e.getKey().length() > MAX_OPTION_LENGTH || e.getValue().length() > MAX_OPTION_LENGTH) {
                throw MtpException.malformedFile(where + ": 'backendOptions." + UntrustedText.clip(e.getKey())
                        + "': the key or its value is longer than " + MAX_OPTION_LENGTH + " characters");
            }
        }
        return options;
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
        root.put("contexts", t.contexts().label());
        root.put("tap", t.contexts().tap() == null ? null : t.contexts().tap().label());
        root.put("seed", t.seed());
        root.put("originalLength", t.originalLength());
        if (t.workingDirectory() != null) {
            root.put("workingDirectory", t.workingDirectory());
        }
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

    /**
     * Reads a chain trace through {@link StrictJson} and checks its actions against the limits, so that no trace
     * this accepts can make a replay allocate or compute more than {@link #MAX_WORK} allows.
     *
     * @throws MtpException MALFORMED_FILE naming the file and the field
     */
    public static ChainTrace read(Path file) {
        String where = "trace " + UntrustedText.path(file);
        JsonNode root = StrictJson.read(file, MAX_BYTES, "trace");
        String format = StrictJson.text(root, "format", where);
        if (!ChainTrace.FORMAT.equals(format) && !ChainTrace.FORMAT_1.equals(format)) {
            throw MtpException.malformedFile(where + ": format " + UntrustedText.quote(format) + ", expected '"
                    + ChainTrace.FORMAT + "' (or '" + ChainTrace.FORMAT_1 + "')");
        }
        ContextSource contexts = ChainTrace.FORMAT_1.equals(format) ? ContextSource.SYNTHETIC
                : contexts(root, where);
        JsonNode arr = StrictJson.array(root, "actions", MAX_ACTIONS, where);
        List<Action> actions = new ArrayList<>();
        for (int i = 0; i < arr.size(); i++) {
            actions.add(fromJson(arr.get(i), where + ": actions[" + i + "]"));
        }
        checkWork(actions, where);
        Map<String, String> options = new LinkedHashMap<>(backendOptions(root, where));
        Divergence div = null;
        JsonNode d = root.get("divergence");
        if (d != null && !d.isNull()) {
            String dw = where + ": divergence";
            d = StrictJson.object(root, "divergence", where);
            Map<String, Object> details = new LinkedHashMap<>();
            JsonNode det = d.get("details");
            if (det != null && det.isObject()) {
                // StrictJson keeps fractions as exact decimals; details carry them as doubles, as written
                det.properties().forEach(e -> details.put(e.getKey(), e.getValue().isIntegralNumber()
                        ? e.getValue().numberValue() : e.getValue().isNumber() ? (Object) e.getValue().doubleValue()
                        : e.getValue().asText()));
            }
            String kindName = StrictJson.optText(d, "kind", dw);
            String category = StrictJson.text(d, "category", dw);
            Divergence.Kind kind;
            try {
                kind = Divergence.kindOf(kindName, category);
            } catch (IllegalArgumentException e) {
                throw MtpException.malformedFile(dw + ".kind " + UntrustedText.quote(kindName) + " or .category "
                        + UntrustedText.quote(category) + " is not a known one");
            }
            div = new Divergence(kind, StrictJson.integer(d, "action", -1, Math.max(0, actions.size()), dw),
                    "backend", details.get("row") instanceof Integer r ? r : -1,
                    details.get("position") instanceof Integer p ? p : -1,
                    new Divergence.RecordedEvidence(details), StrictJson.text(d, "message", dw));
        }
        int originalLength = root.has("originalLength")
                ? StrictJson.integer(root, "originalLength", 0, Integer.MAX_VALUE, where) : actions.size();
        String identity = StrictJson.optText(root, "modelIdentity", where);
        return new ChainTrace(format, StrictJson.text(root, "fixture", where), identity == null ? "" : identity,
                StrictJson.text(root, "backend", where), options, tolerance(root, where), contexts,
                StrictJson.longValue(root, "seed", where), actions, div, originalLength,
                StrictJson.optText(root, "workingDirectory", where));
    }

    /** {@code contexts} ({@code synthetic} or {@code target}) and {@code tap} ({@code pre}, {@code post} or null). */
    private static ContextSource contexts(JsonNode root, String where) {
        String label = StrictJson.text(root, "contexts", where);
        String tap = StrictJson.optText(root, "tap", where);
        return switch (label) {
            case "synthetic" -> {
                if (tap != null) {
                    throw MtpException.malformedFile(where + ": tap " + UntrustedText.quote(tap)
                            + " with contexts 'synthetic', expected null");
                }
                yield ContextSource.SYNTHETIC;
            }
            case "target" -> {
                if (!"pre".equals(tap) && !"post".equals(tap)) {
                    throw MtpException.malformedFile(where + ": tap " + (tap == null ? "missing"
                            : UntrustedText.quote(tap)) + " with contexts 'target', expected pre or post");
                }
                yield new ContextSource.Target(HiddenTap.of(tap));
            }
            default -> throw MtpException.malformedFile(where + ": contexts " + UntrustedText.quote(label)
                    + ", expected synthetic or target");
        };
    }

    /**
     * Bounds what replaying {@code actions} costs, following the group's shape ({@link ShapeRules}): at most
     * {@link #MAX_ROWS} rows at any time, and at most {@link #MAX_WORK} (token, cached position) pairs in all, where a
     * prefill of length L on B rows is B·L tokens, a draft of depth d is B·d tokens, and the cached positions are
     * bounded by every position consumed so far (a row holds at most that many, restored rows included).
     */
    static void checkWork(List<Action> actions, String where) {
        GroupShape s = GroupShape.empty();
        long positions = 0;
        long work = 0;
        for (int i = 0; i < actions.size(); i++) {
            Action a = actions.get(i);
            GroupShape next = ShapeRules.next(s, a);
            long tokens = switch (a) {
                case Action.Prefill p -> (long) s.rows() * p.length();
                case Action.Draft d -> (long) s.rows() * d.depth();
                case Action.Commit c -> (long) s.rows() * (s.depth() + 1);
                default -> 0;
            };
            if (a instanceof Action.Prefill p) {
                positions += p.length();
            } else if (a instanceof Action.Commit) {
                positions += s.depth() + 1;
            }
            work += tokens * Math.max(1, positions);
            if (next.rows() > MAX_ROWS) {
                throw MtpException.malformedFile(where + ": actions[" + i + "] makes " + next.rows() + " rows, more "
                        + "than the " + MAX_ROWS + " a trace may have");
            }
            if (work > MAX_WORK) {
                throw MtpException.malformedFile(where + ": actions[" + i + "] takes the replay past " + MAX_WORK
                        + " (token, cached position) pairs, the most a trace may ask for");
            }
            s = next;
        }
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
            throw MtpException.malformedFile(where + ": expected an object, got " + StrictJson.describe(n));
        }
        String op = StrictJson.text(n, "op", where);
        return switch (op) {
            case "append" -> {
                JsonNode s = StrictJson.array(n, "slots", MAX_ROWS, where);
                List<Integer> slots = new ArrayList<>();
                for (int i = 0; i < s.size(); i++) {
                    slots.add(StrictJson.intElement(s.get(i), -1, Integer.MAX_VALUE, where + ".slots[" + i + "]"));
                }
                yield new Action.Append(slots, StrictJson.bool(n, "crossFeed", false, where));
            }
            case "filter" -> new Action.Filter(StrictJson.longValue(n, "seed", where),
                    StrictJson.bool(n, "keepAll", false, where));
            case "prefill" -> new Action.Prefill(StrictJson.integer(n, "length", 1, MAX_PREFILL, where),
                    StrictJson.longValue(n, "seed", where));
            case "draft" -> new Action.Draft(StrictJson.integer(n, "depth", 0, RowContract.MAX_DEPTH, where),
                    StrictJson.longValue(n, "seed", where), StrictJson.bool(n, "stochastic", false, where));
            case "commit" -> {
                String acc = StrictJson.text(n, "acceptance", where);
                Action.Acceptance a = switch (acc) {
                    case "none" -> Action.Acceptance.NONE;
                    case "full" -> Action.Acceptance.FULL;
                    case "random" -> Action.Acceptance.RANDOM;
                    default -> throw MtpException.malformedFile(where + ": acceptance " + UntrustedText.quote(acc)
                            + ", expected none, full or random");
                };
                yield new Action.Commit(a, StrictJson.longValue(n, "seed", where));
            }
            case "capture" -> new Action.Capture(StrictJson.longValue(n, "seed", where));
            case "bad" -> {
                String call = StrictJson.text(n, "call", where);
                BadCall b = null;
                for (BadCall c : BadCall.values()) {
                    if (c.name().toLowerCase(Locale.ROOT).equals(call)) {
                        b = c;
                    }
                }
                if (b == null) {
                    throw MtpException.malformedFile(where + ": unknown bad call " + UntrustedText.quote(call));
                }
                yield new Action.Bad(b, StrictJson.longValue(n, "seed", where));
            }
            default -> throw MtpException.malformedFile(where + ": unknown op " + UntrustedText.quote(op));
        };
    }

    /** The trace's profile: {@code thresholds} when present (any profile), else the built-in one it names. */
    private static Tolerance tolerance(JsonNode root, String where) {
        String name = StrictJson.text(root, "tolerance", where);
        try {
            if (root.get("thresholds") == null) {
                return Tolerance.named(name);
            }
            JsonNode th = StrictJson.object(root, "thresholds", where);
            String w = where + ": thresholds";
            return new Tolerance(name, StrictJson.number(th, "tokenGap", w), StrictJson.number(th, "kvNmse", w),
                    StrictJson.number(th, "hiddenNmse", w));
        } catch (MtpException e) {
            throw e.kind() == MtpException.Kind.MALFORMED_FILE ? e : MtpException.malformedFile(where + ": "
                    + e.getMessage());
        }
    }
}
