package org.mtporacle.conformance.loop.trace;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.RowContract;
import org.mtporacle.api.UntrustedText;
import org.mtporacle.conformance.chain.BadCall;
import org.mtporacle.conformance.loop.chain.LoopAction;
import org.mtporacle.conformance.target.chain.TargetAction.Acceptance;
import org.mtporacle.conformance.target.chain.TargetBadCall;
import org.mtporacle.conformance.trace.TraceFiles;
import org.mtporacle.io.StrictJson;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeMap;
import java.util.Locale;

/**
 * Reads and writes loop chain traces: one JSON object, {@code "format": "mtp-oracle-loop-chain"}, {@code "version":
 * 2}, then {@code fixture, backend}, {@code backendOptions} (an object of strings, the backend's load options, such
 * as a profile's {@code precision: f32}; absent in older traces of either version, read as none), {@code tolerance,
 * tap} ({@code pre} or {@code post}), {@code kv} ({@code keep} or
 * {@code rebuild}, the declared drafter KV policy), {@code seed}, {@code actions} (each an object with {@code op} =
 * join | leave | prefill | draft | verify | commit | capture | bad and its fields: {@code slots}; {@code seed,
 * keepAll}; {@code length, seed}; {@code depth}; none; {@code acceptance, seed}; {@code seed}; {@code group} ({@code
 * target} or {@code drafter}), {@code call} (the catalogue's name) and {@code seed}), {@code divergence} ({@code group,
 * kind, action, row, position, message}, or null) and optionally {@code modelIdentity}, the target's identity.
 * Version 1, written before the KV policy and bad calls, is read too: it has no {@code kv} ({@code keep}) and no
 * {@code bad} actions. A reader refuses another format or version, naming both, and an action it cannot read, naming
 * the action and what is wrong.
 */
public final class LoopTraceFiles {
    public static final String FORMAT = "mtp-oracle-loop-chain";
    public static final int VERSION = 2;
    /** The first version, still read: no {@code kv} (keep), no {@code bad} actions. */
    public static final int VERSION_1 = 1;
    /** The longest prefill a trace may ask for, in tokens. */
    public static final int MAX_PREFILL = 4096;
    private static final ObjectMapper JSON = new ObjectMapper();

    private LoopTraceFiles() {
    }

    public static void write(Path file, LoopChainTrace t) {
        ObjectNode root = JSON.createObjectNode();
        root.put("format", FORMAT);
        root.put("version", VERSION);
        root.put("fixture", t.fixture());
        root.put("backend", t.backend());
        ObjectNode options = root.putObject("backendOptions");
        new TreeMap<>(t.backendOptions()).forEach(options::put);
        root.put("tolerance", t.tolerance());
        root.put("tap", t.tap());
        root.put("kv", t.kv());
        root.put("seed", t.seed());
        if (!t.modelIdentity().isEmpty()) {
            root.put("modelIdentity", t.modelIdentity());
        }
        ArrayNode actions = root.putArray("actions");
        for (LoopAction a : t.actions()) {
            actions.add(action(a));
        }
        if (t.divergenceKind() == null) {
            root.putNull("divergence");
        } else {
            ObjectNode d = root.putObject("divergence");
            d.put("group", t.divergenceGroup());
            d.put("kind", t.divergenceKind());
            d.put("action", t.divergenceAction());
            d.put("row", t.divergenceRow());
            d.put("position", t.divergencePosition());
            d.put("message", t.divergenceMessage());
        }
        try {
            Files.createDirectories(file.toAbsolutePath().getParent());
            JSON.writerWithDefaultPrettyPrinter().writeValue(file.toFile(), root);
        } catch (IOException e) {
            throw new UncheckedIOException("loop trace: cannot write " + file, e);
        }
    }

    public static LoopChainTrace read(Path file) {
        // an untrusted file: at most TraceFiles.MAX_BYTES, strict JSON (StrictJson), before anything is read from it
        JsonNode root = StrictJson.read(file, TraceFiles.MAX_BYTES, "loop trace");
        String where = "loop trace " + UntrustedText.path(file);
        String format = root.path("format").asText("");
        int version = root.path("version").asInt(-1);
        if (!FORMAT.equals(format) || (version != VERSION && version != VERSION_1)) {
            throw MtpException.invalidArgument(where + ": format '" + UntrustedText.clip(format)
                    + "' version " + version + ", expected '" + FORMAT + "' version " + VERSION_1 + " or "
                    + VERSION);
        }
        if (!root.path("actions").isArray()) {
            throw MtpException.malformedFile(where + ": 'actions' must be an array");
        }
        String tap = root.path("tap").asText("");
        if (!tap.equals("pre") && !tap.equals("post")) {
            throw MtpException.malformedFile(where + ": tap '" + UntrustedText.clip(tap)
                    + "', expected pre or post");
        }
        String kv = version == VERSION_1 ? "keep" : root.path("kv").asText("");
        if (!kv.equals("keep") && !kv.equals("rebuild")) {
            throw MtpException.malformedFile(where + ": kv '" + UntrustedText.clip(kv)
                    + "', expected keep or rebuild");
        }
        List<LoopAction> actions = new ArrayList<>();
        for (JsonNode a : root.path("actions")) {
            try {
                if (version == VERSION_1 && a.path("op").asText("").equals("bad")) {
                    throw MtpException.invalidArgument("op 'bad' is not in version " + VERSION_1);
                }
                actions.add(action(a));
            } catch (IllegalArgumentException | NullPointerException | MtpException e) {
                throw MtpException.malformedFile(where + ": action " + actions.size() + " ("
                        + UntrustedText.clip(a.toString()) + ") cannot be read: " + e.getMessage());
            }
        }
        JsonNode d = root.path("divergence");
        boolean none = d.isNull() || d.isMissingNode();
        return new LoopChainTrace(root.path("fixture").asText(), root.path("backend").asText(),
                TraceFiles.backendOptions(root, "loop trace " + UntrustedText.path(file)),
                root.path("tolerance").asText(), tap, kv, root.path("seed").asLong(), actions,
                none ? null : d.path("group").asText(), none ? null : d.path("kind").asText(),
                none ? -1 : d.path("action").asInt(), none ? -1 : d.path("row").asInt(),
                none ? -1 : d.path("position").asInt(), none ? null : d.path("message").asText(),
                root.path("modelIdentity").asText(""));
    }

    /** Whether {@code file} is JSON whose {@code format} is {@value #FORMAT} (false for anything else, unread). */
    public static boolean isLoopTrace(Path file) {
        try {
            return FORMAT.equals(StrictJson.read(file, TraceFiles.MAX_BYTES, "trace").path("format").asText(""));
        } catch (RuntimeException e) {
            return false;
        }
    }

    /** A field's value, refused outside {@code [min, max]}. */
    private static int within(JsonNode n, String field, int min, int max) {
        int v = n.path(field).asInt(-1);
        if (v < min || v > max) {
            throw MtpException.invalidArgument("'" + field + "' = " + UntrustedText.clip(n.path(field).toString())
                    + ", expected " + min + " … " + max);
        }
        return v;
    }

    private static ObjectNode action(LoopAction a) {
        ObjectNode n = JSON.createObjectNode();
        switch (a) {
            case LoopAction.Join j -> {
                n.put("op", "join");
                ArrayNode slots = n.putArray("slots");
                j.slots().forEach(slots::add);
            }
            case LoopAction.Leave l -> n.put("op", "leave").put("seed", l.seed()).put("keepAll", l.keepAll());
            case LoopAction.Prefill p -> n.put("op", "prefill").put("length", p.length()).put("seed", p.seed());
            case LoopAction.Draft d -> n.put("op", "draft").put("depth", d.depth());
            case LoopAction.Verify v -> n.put("op", "verify");
            case LoopAction.Commit c -> n.put("op", "commit").put("acceptance",
                    c.acceptance().name().toLowerCase(Locale.ROOT)).put("seed", c.seed());
            case LoopAction.Capture c -> n.put("op", "capture").put("seed", c.seed());
            case LoopAction.BadTarget b -> n.put("op", "bad").put("group", "target").put("call", b.call().name())
                    .put("seed", b.seed());
            case LoopAction.BadDrafter b -> n.put("op", "bad").put("group", "drafter").put("call", b.call().name())
                    .put("seed", b.seed());
        }
        return n;
    }

    private static LoopAction action(JsonNode n) {
        String op = n.path("op").asText("");
        long seed = n.path("seed").asLong();
        return switch (op) {
            case "join" -> {
                List<Integer> slots = new ArrayList<>();
                n.path("slots").forEach(s -> slots.add(s.asInt()));
                yield new LoopAction.Join(slots);
            }
            case "leave" -> new LoopAction.Leave(seed, n.path("keepAll").asBoolean());
            case "prefill" -> new LoopAction.Prefill(within(n, "length", 1, MAX_PREFILL), seed);
            case "draft" -> new LoopAction.Draft(within(n, "depth", 0, RowContract.MAX_DEPTH));
            case "verify" -> new LoopAction.Verify();
            case "commit" -> new LoopAction.Commit(Acceptance.valueOf(n.path("acceptance").asText()
                    .toUpperCase(Locale.ROOT)), seed);
            case "capture" -> new LoopAction.Capture(seed);
            case "bad" -> switch (n.path("group").asText("")) {
                case "target" -> new LoopAction.BadTarget(TargetBadCall.valueOf(n.path("call").asText("")), seed);
                case "drafter" -> new LoopAction.BadDrafter(BadCall.valueOf(n.path("call").asText("")), seed);
                default -> throw MtpException.invalidArgument("bad call group '" + UntrustedText.clip(
                        n.path("group").asText("")) + "', expected target or drafter");
            };
            default -> throw MtpException.invalidArgument("unknown op '" + UntrustedText.clip(op) + "'");
        };
    }
}
