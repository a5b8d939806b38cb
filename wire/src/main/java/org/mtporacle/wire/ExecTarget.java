package org.mtporacle.wire;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.LoadedTarget;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.TargetCheckpoint;
import org.mtporacle.api.TargetModel;
import org.mtporacle.api.TargetRows;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * A hybrid target loaded into an engine process ({@code loadTarget}, WIRE.md §5.2). Its process life is the drafter
 * model's ({@link ExecDraftModel}): started or reused at load, restarted by the next {@link #openRows} after a
 * failure, ended when the target and its last group are closed.
 */
final class ExecTarget implements LoadedTarget {
    private final ExecBackend backend;
    private final TargetModel model;
    private final Map<String, String> options;
    private EngineProcess engine;
    private int handle;
    private String numerics;
    private boolean closed;

    ExecTarget(ExecBackend backend, TargetModel model, Map<String, String> options, EngineProcess first) {
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
            throw MtpException.incompatibleModel(backend.name() + ": an engine loads a target directory; this target "
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
        args.set("config", WireValues.targetConfig(model.config()));
        ObjectNode r = ExecDraftModel.result(e.call("loadTarget", args, List.of(), backend.startTimeout()));
        JsonNode m = r.get("model");
        if (m == null || !m.isIntegralNumber() || !m.canConvertToInt()) {
            throw e.violation("loadTarget", "result.model is " + m + ", expected the target handle, an int "
                    + "(WIRE.md §5.2)");
        }
        handle = m.asInt();
        JsonNode n = r.get("numerics");
        Hello h = backend.hello();
        numerics = n != null && n.isTextual() ? n.asText() : h != null && h.numerics() != null ? h.numerics()
                : h != null ? h.engineName() + " " + h.engineVersion() : backend.name();
    }

    @Override
    public TargetModel model() {
        return model;
    }

    @Override
    public String numerics() {
        return numerics;
    }

    @Override
    public synchronized TargetRows openRows(List<TargetCheckpoint> checkpoints) {
        if (closed) {
            throw MtpException.illegalState("openRows: the target is closed");
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
                return ExecTargetRows.lost(engine, backend.name() + ": the engine failed (" + before
                        + ") and could not be restarted: " + ex.getMessage());
            }
        }
        ObjectNode args = WireValues.NODES.objectNode();
        List<HostTensor> tensors = new ArrayList<>();
        args.put("model", handle);
        args.set("checkpoints", WireValues.targetCheckpoints(checkpoints, tensors));
        WireFrame reply;
        try {
            reply = engine.call("targetOpenRows", args, tensors);
        } catch (MtpException ex) {
            if (engine.failure() != null) {
                return ExecTargetRows.lost(engine, ex.getMessage());
            }
            throw ex;
        }
        JsonNode g = ExecDraftModel.result(reply).get("group");
        if (g == null || !g.isIntegralNumber() || !g.canConvertToInt()) {
            return ExecTargetRows.lost(engine, engine.violation("targetOpenRows", "result.group is " + g
                    + ", expected the group handle, an int (WIRE.md §5.2)").getMessage());
        }
        engine.groupOpened();
        Hello h = backend.hello();
        return h != null && h.capabilities().targetRouterChoices() ? new ExecTargetRows.Routed(engine, g.asInt())
                : new ExecTargetRows(engine, g.asInt(), null);
    }

    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        if (engine.alive()) {
            try {
                engine.call("targetUnload", WireValues.NODES.objectNode().put("model", handle), List.of());
            } catch (MtpException ignored) {
                // the process is shut down either way
            }
        }
        engine.release();
    }
}
