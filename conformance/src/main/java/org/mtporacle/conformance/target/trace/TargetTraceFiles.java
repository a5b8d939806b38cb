package org.mtporacle.conformance.target.trace;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.UntrustedText;
import org.mtporacle.conformance.target.chain.TargetAction;
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

/**
 * Reads and writes target chain traces: one JSON object, {@code "format": "mtp-oracle-target-chain"}, {@code
 * "version": 1}, then {@code fixture, backend}, {@code backendOptions} (an object of strings, the backend's load
 * options, such as a profile's {@code precision: f32}; absent in older traces, read as none), {@code tolerance,
 * stateLayout, seed}, {@code actions} (each an object with
 * {@code op} = append | filterRows | prefill | verify | commit | capture | bad and the action's fields: {@code slots};
 * {@code seed, keepAll}; {@code length, seed}; {@code depth, seed, truePercent}; {@code acceptance, seed}; {@code
 * seed}; {@code call, seed}) and {@code divergence} ({@code kind, action, row, position, message}, or null), and
 * optionally {@code modelIdentity}, the target's identity. A reader refuses another format or version, naming both,
 * and an action it cannot read, naming the action and the field.
 */
public final class TargetTraceFiles {
    public static final String FORMAT = "mtp-oracle-target-chain";
    public static final int VERSION = 1;
    private static final ObjectMapper JSON = new ObjectMapper();

    private TargetTraceFiles() {
    }

    public static void write(Path file, TargetChainTrace t) {
        ObjectNode root = JSON.createObjectNode();
        root.put("format", FORMAT);
        root.put("version", VERSION);
        root.put("fixture", t.fixture());
        root.put("backend", t.backend());
        ObjectNode options = root.putObject("backendOptions");
        new TreeMap<>(t.backendOptions()).forEach(options::put);
        root.put("tolerance", t.tolerance());
        root.put("stateLayout", t.stateLayout());
        root.put("seed", t.seed());
        if (!t.modelIdentity().isEmpty()) {
            root.put("modelIdentity", t.modelIdentity());
        }
        ArrayNode actions = root.putArray("actions");
        for (TargetAction a : t.actions()) {
            actions.add(action(a));
        }
        if (t.divergenceKind() == null) {
            root.putNull("divergence");
        } else {
            ObjectNode d = root.putObject("divergence");
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
            throw new UncheckedIOException("target trace: cannot write " + file, e);
        }
    }

    public static TargetChainTrace read(Path file) {
        // an untrusted file: at most TraceFiles.MAX_BYTES, strict JSON (StrictJson), before anything is read from it
        JsonNode root = StrictJson.read(file, TraceFiles.MAX_BYTES, "target trace");
        String where = "target trace " + UntrustedText.path(file);
        String format = root.path("format").asText("");
        int version = root.path("version").asInt(-1);
        if (!FORMAT.equals(format) || version != VERSION) {
            throw MtpException.invalidArgument(where + ": format '"
                    + UntrustedText.clip(format) + "' version " + version
                    + ", expected '" + FORMAT + "' version " + VERSION);
        }
        if (!root.path("actions").isArray()) {
            throw MtpException.malformedFile(where + ": 'actions' must be an array");
        }
        List<TargetAction> actions = new ArrayList<>();
        for (JsonNode a : root.path("actions")) {
            try {
                actions.add(action(a));
            } catch (IllegalArgumentException | NullPointerException e) {
                throw MtpException.malformedFile(where + ": action " + actions.size() + " ("
                        + org.mtporacle.api.UntrustedText.clip(a.toString()) + ") cannot be read: " + e.getMessage());
            }
        }
        JsonNode d = root.path("divergence");
        boolean none = d.isNull() || d.isMissingNode();
        return new TargetChainTrace(root.path("fixture").asText(), root.path("backend").asText(),
                TraceFiles.backendOptions(root, "target trace " + UntrustedText.path(file)),
                root.path("tolerance").asText(), root.path("stateLayout").asText(), root.path("seed").asLong(),
                actions, none ? null : d.path("kind").asText(), none ? -1 : d.path("action").asInt(),
                none ? -1 : d.path("row").asInt(), none ? -1 : d.path("position").asInt(),
                none ? null : d.path("message").asText(), root.path("modelIdentity").asText(""));
    }

    /** Whether {@code file} is JSON whose {@code format} is {@value #FORMAT} (false for anything else, unread). */
    public static boolean isTargetTrace(Path file) {
        try {
            return FORMAT.equals(StrictJson.read(file, TraceFiles.MAX_BYTES, "trace").path("format").asText(""));
        } catch (RuntimeException e) {
            return false;
        }
    }

    private static ObjectNode action(TargetAction a) {
        ObjectNode n = JSON.createObjectNode();
        switch (a) {
            case TargetAction.Append ap -> {
                n.put("op", "append");
                ArrayNode slots = n.putArray("slots");
                ap.slots().forEach(slots::add);
            }
            case TargetAction.Filter f -> n.put("op", "filterRows").put("seed", f.seed()).put("keepAll", f.keepAll());
            case TargetAction.Prefill p -> n.put("op", "prefill").put("length", p.length()).put("seed", p.seed());
            case TargetAction.Verify v -> n.put("op", "verify").put("depth", v.depth()).put("seed", v.seed())
                    .put("truePercent", v.truePercent());
            case TargetAction.Commit c -> n.put("op", "commit").put("acceptance", c.acceptance().name().toLowerCase())
                    .put("seed", c.seed());
            case TargetAction.Capture c -> n.put("op", "capture").put("seed", c.seed());
            case TargetAction.Bad b -> n.put("op", "bad").put("call", b.call().name()).put("seed", b.seed());
        }
        return n;
    }

    private static TargetAction action(JsonNode n) {
        String op = n.path("op").asText("");
        long seed = n.path("seed").asLong();
        return switch (op) {
            case "append" -> {
                List<Integer> slots = new ArrayList<>();
                n.path("slots").forEach(s -> slots.add(s.asInt()));
                yield new TargetAction.Append(slots);
            }
            case "filterRows" -> new TargetAction.Filter(seed, n.path("keepAll").asBoolean());
            case "prefill" -> new TargetAction.Prefill(n.path("length").asInt(), seed);
            case "verify" -> new TargetAction.Verify(n.path("depth").asInt(), seed, n.path("truePercent").asInt());
            case "commit" -> new TargetAction.Commit(TargetAction.Acceptance.valueOf(
                    n.path("acceptance").asText().toUpperCase()), seed);
            case "capture" -> new TargetAction.Capture(seed);
            case "bad" -> new TargetAction.Bad(TargetBadCall.valueOf(n.path("call").asText()), seed);
            default -> throw MtpException.invalidArgument("target trace: unknown op '" + op + "'");
        };
    }
}
