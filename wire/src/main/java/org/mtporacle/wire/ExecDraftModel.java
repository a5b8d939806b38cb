package org.mtporacle.wire;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.mtporacle.api.DraftModel;
import org.mtporacle.api.DraftRows;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.RowCheckpoint;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * A model loaded into an engine process. The process is started (or reused from the backend's probe) at load; when
 * it fails, the groups opened on it are lost, and the next {@link #openRows} — the next chain — starts a fresh one
 * and loads the model again (WIRE.md §6). An engine failure while opening a group is reported by that group's first
 * call, so a caller that opens groups in a loop never sees {@code openRows} itself fail for it.
 */
final class ExecDraftModel implements DraftModel {
    private final ExecBackend backend;
    private final MtpModel model;
    private final Map<String, String> options;
    private EngineProcess engine;
    private int handle;
    private String numerics;
    private boolean closed;

    /** Loads {@code model} into {@code first} (or a new process); load errors of the engine are thrown as they are. */
    ExecDraftModel(ExecBackend backend, MtpModel model, Map<String, String> options, EngineProcess first) {
        this.backend = backend;
        this.model = model;
        this.options = options == null ? null : Map.copyOf(options);
        EngineProcess e = first != null && first.alive() ? first : backend.start();
        try {
            loadInto(e);
        } catch (RuntimeException ex) {
            e.close();
            throw ex;
        }
        engine = e;
    }

    private void loadInto(EngineProcess e) {
        String source = model.source();
        Path dir = source == null ? null : Path.of(source).toAbsolutePath();
        if (dir == null || !Files.isDirectory(dir)) {
            throw MtpException.incompatibleModel(backend.name() + ": an engine loads a model directory; this model "
                    + "came from '" + source + "'");
        }
        ObjectNode args = WireValues.NODES.objectNode();
        args.put("directory", dir.toString());
        args.put("layout", model.layout());
        args.put("identity", model.identity());
        ObjectNode opts = args.putObject("options");
        if (options != null) {
            options.forEach(opts::put);
        }
        args.set("config", WireValues.config(model.config()));
        ObjectNode r = result(e.call("load", args, List.of(), backend.startTimeout()));
        JsonNode m = r.get("model");
        if (m == null || !m.isIntegralNumber() || !m.canConvertToInt()) {
            throw e.violation("load", "result.model is " + m + ", expected the model handle, an int (WIRE.md §5)");
        }
        handle = m.asInt();
        JsonNode n = r.get("numerics");
        Hello h = backend.hello();
        numerics = n != null && n.isTextual() ? n.asText() : h != null && h.numerics() != null ? h.numerics()
                : h != null ? h.engineName() + " " + h.engineVersion() : backend.name();
    }

    static ObjectNode result(WireFrame reply) {
        return (ObjectNode) reply.header().get("result");
    }

    @Override
    public MtpModel model() {
        return model;
    }

    @Override
    public String numerics() {
        return numerics;
    }

    @Override
    public synchronized DraftRows openRows(List<RowCheckpoint> checkpoints) {
        if (closed) {
            throw MtpException.illegalState("openRows: the model is closed");
        }
        if (!engine.alive()) {
            String before = engine.failure();
            engine.close();
            try {
                EngineProcess fresh = backend.start();
                try {
                    loadInto(fresh);
                } catch (RuntimeException ex) {
                    fresh.close();
                    throw ex;
                }
                engine = fresh;
            } catch (MtpException ex) {
                return ExecDraftRows.lost(engine, backend.name() + ": the engine failed (" + before
                        + ") and could not be restarted: " + ex.getMessage());
            }
        }
        ObjectNode args = WireValues.NODES.objectNode();
        List<HostTensor> tensors = new ArrayList<>();
        args.put("model", handle);
        args.set("checkpoints", WireValues.checkpoints(checkpoints, tensors));
        WireFrame reply;
        try {
            reply = engine.call("openRows", args, tensors);
        } catch (MtpException ex) {
            if (engine.failure() != null) {
                return ExecDraftRows.lost(engine, ex.getMessage());
            }
            throw ex;
        }
        JsonNode g = result(reply).get("group");
        if (g == null || !g.isIntegralNumber() || !g.canConvertToInt()) {
            return ExecDraftRows.lost(engine, engine.violation("openRows", "result.group is " + g
                    + ", expected the group handle, an int (WIRE.md §5)").getMessage());
        }
        engine.groupOpened();
        Hello h = backend.hello();
        return h != null && h.capabilities().routerChoices() ? new ExecDraftRows.Routed(engine, g.asInt())
                : new ExecDraftRows(engine, g.asInt());
    }

    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        if (engine.alive()) {
            try {
                engine.call("unload", WireValues.NODES.objectNode().put("model", handle), List.of());
            } catch (MtpException ignored) {
                // the process is shut down either way
            }
        }
        engine.release(); // open groups keep it up: they must answer ILLEGAL_STATE, not vanish (spec §11.11)
    }
}
