package org.mtporacle.wire;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.mtporacle.api.BackendProfile;
import org.mtporacle.api.DraftModel;
import org.mtporacle.api.DraftRows;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MtpBackend;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.RouterChoices;
import org.mtporacle.api.RowCheckpoint;
import org.mtporacle.api.LoadedTarget;
import org.mtporacle.api.TargetCheckpoint;
import org.mtporacle.api.TargetModel;
import org.mtporacle.api.TargetOutput;
import org.mtporacle.api.TargetRouterChoices;
import org.mtporacle.api.TargetRows;
import org.mtporacle.wire.WireFrame.FramingException;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * The engine side of {@code mtp-oracle-wire/1} for any in-process backend ({@code mtp serve-wire}): reads requests,
 * calls the backend, writes replies. It adds no checks of its own — every argument reaches the backend as sent — so
 * the reference behind the wire answers exactly as in process.
 */
public final class WireServer {
    private final MtpBackend backend;
    private final Function<Path, MtpModel> loader;
    private final PrintStream log;
    private final Map<Integer, DraftModel> models = new HashMap<>();
    private final Map<Integer, DraftRows> groups = new HashMap<>();
    private final Function<Path, TargetModel> targetLoader;
    private final Map<Integer, LoadedTarget> targets = new HashMap<>();
    private final Map<Integer, TargetRows> targetGroups = new HashMap<>();
    private int nextModel = 1;
    private int nextGroup = 1;

    /**
     * @param backend the backend to serve
     * @param loader  reads a model directory ({@code load}); its MtpExceptions are the replies' errors
     * @param log     the engine's log (stderr)
     */
    public WireServer(MtpBackend backend, Function<Path, MtpModel> loader, PrintStream log) {
        this(backend, loader, null, log);
    }

    /**
     * @param targetLoader reads a target directory ({@code loadTarget}, WIRE.md §5.2), or null to serve the drafter
     *                     only; the handshake claims the {@code target} capability when it is set and the backend
     *                     {@linkplain MtpBackend#supportsTarget() supports the target}
     */
    public WireServer(MtpBackend backend, Function<Path, MtpModel> loader, Function<Path, TargetModel> targetLoader,
                      PrintStream log) {
        this.backend = backend;
        this.loader = loader;
        this.targetLoader = targetLoader;
        this.log = log;
    }

    private boolean servesTarget() {
        return targetLoader != null && backend.supportsTarget();
    }

    /** Serves until end of input or {@code shutdown}; closes every model and group it opened. */
    public void serve(InputStream input, OutputStream output) throws IOException {
        InputStream in = new BufferedInputStream(input, 1 << 16);
        OutputStream out = new BufferedOutputStream(output, 1 << 16);
        try {
            for (WireFrame request; (request = WireFrame.read(in)) != null; ) {
                JsonNode id = request.header().get("id");
                JsonNode op = request.header().get("op");
                ObjectNode reply = WireValues.NODES.objectNode();
                reply.set("id", id == null ? WireValues.NODES.nullNode() : id);
                List<HostTensor> tensors = new ArrayList<>();
                String name = op != null && op.isTextual() ? op.asText() : String.valueOf(op);
                try {
                    JsonNode args = request.header().get("args");
                    ObjectNode result = handle(name, args instanceof ObjectNode o ? o
                            : WireValues.NODES.objectNode(), request, tensors);
                    reply.put("ok", true);
                    reply.set("result", result);
                } catch (FramingException e) {
                    tensors.clear();
                    error(reply, MtpException.Kind.INVALID_ARGUMENT, name + ": malformed request: " + e.getMessage(),
                            false);
                } catch (MtpException e) {
                    tensors.clear();
                    error(reply, e.kind(), e.getMessage(), e.kind() == MtpException.Kind.BACKEND_FAILURE);
                } catch (RuntimeException e) {
                    tensors.clear();
                    log.println("serve-wire: " + name + " failed:");
                    e.printStackTrace(log);
                    error(reply, MtpException.Kind.BACKEND_FAILURE, name + ": " + e, true);
                }
                WireFrame.write(out, reply, tensors);
                if (name.equals("shutdown")) {
                    return;
                }
            }
        } finally {
            groups.values().forEach(DraftRows::close);
            models.values().forEach(DraftModel::close);
            targetGroups.values().forEach(TargetRows::close);
            targets.values().forEach(LoadedTarget::close);
            groups.clear();
            models.clear();
            targetGroups.clear();
            targets.clear();
        }
    }

    private static void error(ObjectNode reply, MtpException.Kind kind, String message, boolean poisoned) {
        reply.put("ok", false);
        reply.putObject("error").put("kind", kind.name()).put("message", message).put("poisoned", poisoned);
    }

    private ObjectNode handle(String op, ObjectNode a, WireFrame f, List<HostTensor> out) throws FramingException {
        ObjectNode r = WireValues.NODES.objectNode();
        switch (op) {
            case "hello" -> hello(a, r);
            case "ping", "shutdown" -> {
            }
            case "loadTarget" -> {
                if (!servesTarget()) {
                    throw new MtpException(MtpException.Kind.UNAVAILABLE, "loadTarget: this engine serves the "
                            + "drafter only (no target capability, WIRE.md §4)");
                }
                TargetModel m = targetLoader.apply(directory(a, op));
                JsonNode identity = a.get("identity");
                if (identity != null && identity.isTextual() && !identity.asText().equals(m.identity())) {
                    log.println("serve-wire: the runner's target identity " + identity.asText() + " differs from "
                            + m.identity() + " read here; checkpoints carry the runner's (WIRE.md §5.2)");
                    m = new TargetModel(m.config(), m.weights(), identity.asText(), m.source(), m.layout(),
                            m.warnings());
                }
                LoadedTarget t = backend.loadTarget(m, options(a));
                targets.put(nextModel, t);
                r.put("model", nextModel++);
                r.put("numerics", t.numerics());
            }
            case "targetUnload" -> {
                LoadedTarget t = targets.remove(WireValues.integer(a, "model", op));
                if (t != null) {
                    t.close();
                }
            }
            case "targetOpenRows" -> {
                int handle = WireValues.integer(a, "model", op);
                LoadedTarget t = targets.get(handle);
                if (t == null) {
                    throw MtpException.invalidArgument(op + ": no target with handle " + handle);
                }
                TargetRows g = t.openRows(WireValues.readTargetCheckpoints(a.get("checkpoints"), f, "checkpoints"));
                targetGroups.put(nextGroup, g);
                r.put("group", nextGroup++);
            }
            case "targetAppend" -> targetGroup(a, op).append(WireValues.readTargetCheckpoints(a.get("checkpoints"), f,
                    "checkpoints"));
            case "targetFilterRows" -> targetGroup(a, op).filterRows(WireValues.readInts(a.get("keep"), "keep"));
            case "targetPrefill", "targetVerify" -> {
                TargetRows g = targetGroup(a, op);
                HostTensor tokens = f.tensorAt(a.get("tokens"), "tokens");
                TargetOutput o = op.equals("targetPrefill") ? g.prefill(tokens) : g.verify(tokens);
                r.set("logits", WireValues.tensor(o.logits(), out));
                r.set("preNorm", WireValues.tensor(o.preNorm(), out));
                r.set("postNorm", WireValues.tensor(o.postNorm(), out));
                targetExperts(g, r);
            }
            case "targetCommit" -> targetGroup(a, op).commit(WireValues.readInts(a.get("accepted"), "accepted"));
            case "targetCapture" -> {
                TargetCheckpoint cp = targetGroup(a, op).capture(WireValues.integer(a, "row", op));
                r.set("checkpoint", WireValues.targetCheckpoint(cp, out));
            }
            case "targetProcessed" -> r.set("processed", WireValues.ints(targetGroup(a, op).processedTokens()));
            case "targetClose" -> {
                TargetRows g = targetGroups.get(WireValues.integer(a, "group", op));
                if (g != null) {
                    g.close(); // kept: later calls on it fail as the backend says after close
                }
            }
            case "load" -> {
                String named = WireValues.text(a, "directory", "load");
                Path dir;
                try {
                    dir = Path.of(named);
                } catch (java.nio.file.InvalidPathException e) {
                    throw MtpException.invalidArgument("load: directory " + org.mtporacle.api.UntrustedText.quote(named)
                            + " is not a path on this system (" + e.getReason() + ")");
                }
                MtpModel m = loader.apply(dir);
                JsonNode identity = a.get("identity");
                if (identity != null && identity.isTextual() && !identity.asText().equals(m.identity())) {
                    log.println("serve-wire: the runner's model identity " + identity.asText() + " differs from "
                            + m.identity() + " read here; checkpoints carry the runner's (WIRE.md §5)");
                    m = new MtpModel(m.config(), m.weights(), identity.asText(), m.source(), m.layout(), m.warnings());
                }
                Map<String, String> options = new LinkedHashMap<>();
                JsonNode o = a.get("options");
                if (o != null && o.isObject()) {
                    for (var e : o.properties()) {
                        options.put(e.getKey(), e.getValue().asText());
                    }
                }
                DraftModel dm = backend.load(m, options);
                models.put(nextModel, dm);
                r.put("model", nextModel++);
                r.put("numerics", dm.numerics());
            }
            case "unload" -> {
                DraftModel dm = models.remove(WireValues.integer(a, "model", "unload"));
                if (dm != null) {
                    dm.close();
                }
            }
            case "openRows" -> {
                int handle = WireValues.integer(a, "model", "openRows");
                DraftModel dm = models.get(handle);
                if (dm == null) {
                    throw MtpException.invalidArgument("openRows: no model with handle " + handle);
                }
                DraftRows g = dm.openRows(WireValues.readCheckpoints(a.get("checkpoints"), f, "checkpoints"));
                groups.put(nextGroup, g);
                r.put("group", nextGroup++);
            }
            case "append" -> group(a, op).append(WireValues.readCheckpoints(a.get("checkpoints"), f, "checkpoints"));
            case "filterRows" -> group(a, op).filterRows(WireValues.readInts(a.get("keep"), "keep"));
            case "prefill" -> {
                DraftRows g = group(a, op);
                g.prefill(f.tensorAt(a.get("tokens"), "tokens"), f.tensorAt(a.get("context"), "context"));
                experts(g, r);
            }
            case "draft" -> {
                DraftRows g = group(a, op);
                int[][] p = g.draft(WireValues.readInts(a.get("pending"), "pending"),
                        WireValues.integer(a, "depth", "draft"), WireValues.readLongs(a.get("steps"), "steps"),
                        WireValues.readSampling(a.get("sampling"), "sampling"));
                ArrayNode rows = r.putArray("proposals");
                for (int[] row : p) {
                    rows.add(WireValues.ints(row));
                }
                experts(g, r);
            }
            case "commit" -> {
                DraftRows g = group(a, op);
                g.commit(WireValues.readInts(a.get("accepted"), "accepted"), f.tensorAt(a.get("context"), "context"));
                experts(g, r);
            }
            case "capture" -> {
                RowCheckpoint cp = group(a, op).capture(WireValues.integer(a, "row", "capture"));
                r.set("checkpoint", WireValues.checkpoint(cp, out));
            }
            case "rowCount" -> r.put("rows", group(a, op).rowCount());
            case "close" -> {
                int handle = WireValues.integer(a, "group", "close");
                DraftRows g = groups.get(handle); // kept: later calls on it fail as the backend says after close
                if (g != null) {
                    g.close();
                }
            }
            default -> throw new MtpException(MtpException.Kind.UNAVAILABLE, op + ": no such op in "
                    + WireFrame.PROTOCOL + " (WIRE.md §5)");
        }
        return r;
    }

    private TargetRows targetGroup(ObjectNode a, String op) throws FramingException {
        int handle = WireValues.integer(a, "group", op);
        TargetRows g = targetGroups.get(handle);
        if (g == null) {
            throw MtpException.invalidArgument(op + ": no target group with handle " + handle);
        }
        return g;
    }

    private static Path directory(ObjectNode a, String op) throws FramingException {
        String named = WireValues.text(a, "directory", op);
        try {
            return Path.of(named);
        } catch (java.nio.file.InvalidPathException e) {
            throw MtpException.invalidArgument(op + ": directory " + org.mtporacle.api.UntrustedText.quote(named)
                    + " is not a path on this system (" + e.getReason() + ")");
        }
    }

    private static Map<String, String> options(ObjectNode a) {
        Map<String, String> options = new LinkedHashMap<>();
        JsonNode o = a.get("options");
        if (o != null && o.isObject()) {
            for (var e : o.properties()) {
                options.put(e.getKey(), e.getValue().asText());
            }
        }
        return options;
    }

    private DraftRows group(ObjectNode a, String op) throws FramingException {
        int handle = WireValues.integer(a, "group", op);
        DraftRows g = groups.get(handle);
        if (g == null) {
            throw MtpException.invalidArgument(op + ": no group with handle " + handle);
        }
        return g;
    }

    private void hello(ObjectNode a, ObjectNode r) {
        JsonNode protocols = a.get("protocols");
        boolean speaks = false;
        if (protocols != null && protocols.isArray()) {
            for (JsonNode p : protocols) {
                speaks |= WireFrame.PROTOCOL.equals(p.asText());
            }
        }
        if (!speaks) {
            throw new MtpException(MtpException.Kind.UNAVAILABLE, "hello: this engine speaks " + WireFrame.PROTOCOL
                    + ", the runner offered " + protocols);
        }
        r.put("protocol", WireFrame.PROTOCOL);
        r.putObject("engine").put("name", "mtp-oracle " + backend.name()).put("version", ExecBackend.version());
        r.put("description", backend.description() + " (mtp serve-wire)");
        var availability = backend.availability();
        if (!availability.available()) {
            r.put("unavailable", availability.reason());
        }
        ArrayNode ps = r.putArray("profiles");
        for (BackendProfile p : backend.profiles()) {
            ObjectNode o = ps.addObject().put("label", p.label() + "@wire");
            ObjectNode opts = o.putObject("options");
            p.options().forEach(opts::put);
            o.putObject("tolerance").put("name", p.tolerance().name()).put("tokenGap", p.tolerance().tokenGap())
                    .put("kvNmse", p.tolerance().kvNmse()).put("hiddenNmse", p.tolerance().hiddenNmse());
        }
        ObjectNode c = r.putObject("capabilities");
        var caps = backend.capabilities();
        c.put("seededSampling", caps.seededSampling());
        c.putArray("tapDtypes").add("F32").add("F16").add("BF16");
        c.putArray("weightDtypes").add("F32").add("F16").add("BF16");
        ArrayNode q = c.putArray("quantization");
        for (int bits : new int[] {2, 3, 4, 5, 6, 8}) {
            q.addObject().put("bits", bits).putArray("groupSizes").add(32).add(64).add(128);
        }
        c.putArray("layouts").add("hf").add("companion");
        c.put("maxRows", Math.min(caps.maxRows(), 1 << 20));
        c.put("maxDepth", caps.maxDepth());
        c.put("routerChoices", true);
        if (servesTarget()) {
            c.put("target", true);
            c.put("targetRouterChoices", true);
        }
    }

    /**
     * The target's router choices of the forward just made, when the backend's target rows report them (WIRE.md
     * §5.2, spec §12.5): {@code [row, position, layer, e_0, …]} per (row, token, MoE layer), in the order computed.
     */
    private static void targetExperts(TargetRows g, ObjectNode r) {
        if (!(g instanceof TargetRouterChoices rc)) {
            return;
        }
        List<TargetRouterChoices.Choice> choices = rc.lastRouterChoices();
        if (choices.isEmpty()) {
            return;
        }
        ArrayNode list = r.putArray("experts");
        for (TargetRouterChoices.Choice ch : choices) {
            ArrayNode one = list.addArray().add(ch.row()).add(ch.position()).add(ch.layer());
            for (int e : ch.experts()) {
                one.add(e);
            }
        }
    }

    /** The router choices of the call just made, when the backend's rows report them (WIRE.md §5, spec §12.5). */
    private static void experts(DraftRows g, ObjectNode r) {
        if (!(g instanceof RouterChoices rc)) {
            return;
        }
        List<RouterChoices.Choice> choices = rc.lastRouterChoices();
        if (choices.isEmpty()) {
            return;
        }
        ArrayNode list = r.putArray("experts");
        for (RouterChoices.Choice ch : choices) {
            ArrayNode one = list.addArray().add(ch.row()).add(ch.position());
            for (int e : ch.experts()) {
                one.add(e);
            }
        }
    }
}
