package org.mtporacle.wire;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.mtporacle.api.DraftSampling;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MtpConfig;
import org.mtporacle.api.RowCheckpoint;
import org.mtporacle.api.RowSampler;
import org.mtporacle.api.TargetCheckpoint;
import org.mtporacle.api.TargetConfig;
import org.mtporacle.wire.WireFrame.FramingException;

import java.util.ArrayList;
import java.util.List;

/**
 * The contract's values as header JSON (WIRE.md §5): checkpoints with their tensors in the frame's payload, samplers,
 * int arrays, the model config. Encoding never checks a value: a malformed argument is sent as it is (null as null).
 */
final class WireValues {
    static final JsonNodeFactory NODES = JsonNodeFactory.instance;

    private WireValues() {
    }

    /** {@code {"tensor": i}} for {@code t} appended to {@code tensors}, or null. */
    static JsonNode tensor(HostTensor t, List<HostTensor> tensors) {
        if (t == null) {
            return NODES.nullNode();
        }
        tensors.add(t);
        return NODES.objectNode().put("tensor", tensors.size() - 1);
    }

    static JsonNode ints(int[] values) {
        if (values == null) {
            return NODES.nullNode();
        }
        ArrayNode a = NODES.arrayNode(values.length);
        for (int v : values) {
            a.add(v);
        }
        return a;
    }

    static JsonNode longs(long[] values) {
        if (values == null) {
            return NODES.nullNode();
        }
        ArrayNode a = NODES.arrayNode(values.length);
        for (long v : values) {
            a.add(v);
        }
        return a;
    }

    static JsonNode checkpoints(List<RowCheckpoint> checkpoints, List<HostTensor> tensors) {
        if (checkpoints == null) {
            return NODES.nullNode();
        }
        ArrayNode a = NODES.arrayNode(checkpoints.size());
        for (RowCheckpoint cp : checkpoints) {
            a.add(checkpoint(cp, tensors));
        }
        return a;
    }

    static JsonNode checkpoint(RowCheckpoint cp, List<HostTensor> tensors) {
        if (cp == null) {
            return NODES.nullNode();
        }
        ObjectNode o = NODES.objectNode();
        o.put("schema", cp.schema());
        o.put("processedTokens", cp.processedTokens());
        o.put("draftOffset", cp.draftOffset());
        o.put("modelIdentity", cp.modelIdentity());
        o.set("keys", tensor(cp.keys(), tensors));
        o.set("values", tensor(cp.values(), tensors));
        o.set("hidden", tensor(cp.hidden(), tensors));
        if (cp.digest() != null) {
            o.put("digest", cp.digest());
        }
        return o;
    }

    static JsonNode targetCheckpoints(List<TargetCheckpoint> checkpoints, List<HostTensor> tensors) {
        if (checkpoints == null) {
            return NODES.nullNode();
        }
        ArrayNode a = NODES.arrayNode(checkpoints.size());
        for (TargetCheckpoint cp : checkpoints) {
            a.add(targetCheckpoint(cp, tensors));
        }
        return a;
    }

    /** A target checkpoint (WIRE.md §5.3), tensors appended to {@code tensors}; null as JSON null. */
    static JsonNode targetCheckpoint(TargetCheckpoint cp, List<HostTensor> tensors) {
        if (cp == null) {
            return NODES.nullNode();
        }
        ObjectNode o = NODES.objectNode();
        o.put("schema", cp.schema());
        o.put("processedTokens", cp.processedTokens());
        o.put("modelIdentity", cp.modelIdentity());
        o.set("convWindows", tensor(cp.convWindows(), tensors));
        o.set("recurrentStates", tensor(cp.recurrentStates(), tensors));
        o.set("keys", tensor(cp.keys(), tensors));
        o.set("values", tensor(cp.values(), tensors));
        if (cp.digest() != null) {
            o.put("digest", cp.digest());
        }
        return o;
    }

    /** The target's shape for {@code loadTarget} (WIRE.md §5.2); an engine may read {@code config.json} instead. */
    static ObjectNode targetConfig(TargetConfig c) {
        ObjectNode o = config(c.shape());
        ArrayNode types = o.putArray("layerTypes");
        for (TargetConfig.LayerType t : c.layers()) {
            types.add(t.configName());
        }
        TargetConfig.Gdn g = c.gdn();
        o.putObject("gdn").put("numKeyHeads", g.numKeyHeads()).put("numValueHeads", g.numValueHeads())
                .put("keyHeadDim", g.keyHeadDim()).put("valueHeadDim", g.valueHeadDim())
                .put("convKernel", g.convKernel());
        return o;
    }

    static JsonNode sampling(DraftSampling sampling) {
        if (sampling == null) {
            return NODES.nullNode();
        }
        ArrayNode a = NODES.arrayNode(sampling.rowCount());
        for (RowSampler s : sampling.rows()) {
            a.addObject().put("temperature", s.temperature()).put("topK", s.topK()).put("topP", s.topP())
                    .put("seed", Long.toUnsignedString(s.seed()));
        }
        return a;
    }

    static ObjectNode config(MtpConfig c) {
        return NODES.objectNode().put("hiddenSize", c.hiddenSize()).put("numHeads", c.numHeads())
                .put("numKvHeads", c.numKvHeads()).put("headDim", c.headDim()).put("rotaryDims", c.rotaryDims())
                .put("ropeTheta", c.ropeTheta()).put("rmsNormEps", c.rmsNormEps()).put("vocabSize", c.vocabSize())
                .put("intermediateSize", c.intermediateSize());
    }

    // ---- decoding (strict: a value of the wrong JSON type is a framing fault of the sender) ----

    static RowCheckpoint readCheckpoint(JsonNode n, WireFrame f, String field) throws FramingException {
        if (n == null || n.isNull()) {
            return null;
        }
        if (!n.isObject()) {
            throw new FramingException(field + " is " + n.getNodeType() + ", expected a checkpoint object");
        }
        HostTensor hidden = f.tensorAt(n.get("hidden"), field + ".hidden");
        if (hidden == null) {
            throw new FramingException(field + ".hidden is missing (every checkpoint carries its hidden)");
        }
        JsonNode digest = n.get("digest");
        if (digest != null && !digest.isNull() && !digest.isTextual()) {
            throw new FramingException(field + ".digest is " + digest.getNodeType() + ", expected a string");
        }
        return new RowCheckpoint(text(n, "schema", field), integer(n, "processedTokens", field),
                integer(n, "draftOffset", field), text(n, "modelIdentity", field),
                f.tensorAt(n.get("keys"), field + ".keys"), f.tensorAt(n.get("values"), field + ".values"), hidden,
                digest == null || digest.isNull() ? null : digest.asText());
    }

    static List<RowCheckpoint> readCheckpoints(JsonNode n, WireFrame f, String field) throws FramingException {
        if (n == null || n.isNull()) {
            return null;
        }
        if (!n.isArray()) {
            throw new FramingException(field + " is " + n.getNodeType() + ", expected an array");
        }
        List<RowCheckpoint> out = new ArrayList<>();
        for (int i = 0; i < n.size(); i++) {
            out.add(readCheckpoint(n.get(i), f, field + "[" + i + "]"));
        }
        return out;
    }

    static TargetCheckpoint readTargetCheckpoint(JsonNode n, WireFrame f, String field) throws FramingException {
        if (n == null || n.isNull()) {
            return null;
        }
        if (!n.isObject()) {
            throw new FramingException(field + " is " + n.getNodeType() + ", expected a target checkpoint object");
        }
        JsonNode digest = n.get("digest");
        if (digest != null && !digest.isNull() && !digest.isTextual()) {
            throw new FramingException(field + ".digest is " + digest.getNodeType() + ", expected a string");
        }
        return new TargetCheckpoint(text(n, "schema", field), integer(n, "processedTokens", field),
                text(n, "modelIdentity", field), f.tensorAt(n.get("convWindows"), field + ".convWindows"),
                f.tensorAt(n.get("recurrentStates"), field + ".recurrentStates"),
                f.tensorAt(n.get("keys"), field + ".keys"), f.tensorAt(n.get("values"), field + ".values"),
                digest == null || digest.isNull() ? null : digest.asText());
    }

    static List<TargetCheckpoint> readTargetCheckpoints(JsonNode n, WireFrame f, String field)
            throws FramingException {
        if (n == null || n.isNull()) {
            return null;
        }
        if (!n.isArray()) {
            throw new FramingException(field + " is " + n.getNodeType() + ", expected an array");
        }
        List<TargetCheckpoint> out = new ArrayList<>();
        for (int i = 0; i < n.size(); i++) {
            out.add(readTargetCheckpoint(n.get(i), f, field + "[" + i + "]"));
        }
        return out;
    }

    static int[] readInts(JsonNode n, String field) throws FramingException {
        if (n == null || n.isNull()) {
            return null;
        }
        if (!n.isArray()) {
            throw new FramingException(field + " is " + n.getNodeType() + ", expected an array of ints");
        }
        int[] out = new int[n.size()];
        for (int i = 0; i < out.length; i++) {
            JsonNode v = n.get(i);
            if (!v.isIntegralNumber() || !v.canConvertToInt()) {
                throw new FramingException(field + "[" + i + "] = " + v + ", expected an int");
            }
            out[i] = v.asInt();
        }
        return out;
    }

    static long[] readLongs(JsonNode n, String field) throws FramingException {
        if (n == null || n.isNull()) {
            return null;
        }
        if (!n.isArray()) {
            throw new FramingException(field + " is " + n.getNodeType() + ", expected an array of ints");
        }
        long[] out = new long[n.size()];
        for (int i = 0; i < out.length; i++) {
            JsonNode v = n.get(i);
            if (!v.isIntegralNumber() || !v.canConvertToLong()) {
                throw new FramingException(field + "[" + i + "] = " + v + ", expected a 64-bit int");
            }
            out[i] = v.asLong();
        }
        return out;
    }

    static DraftSampling readSampling(JsonNode n, String field) throws FramingException {
        if (n == null || n.isNull()) {
            return null;
        }
        if (!n.isArray()) {
            throw new FramingException(field + " is " + n.getNodeType() + ", expected an array of samplers");
        }
        List<RowSampler> rows = new ArrayList<>();
        for (int i = 0; i < n.size(); i++) {
            JsonNode s = n.get(i);
            String where = field + "[" + i + "]";
            String seed = text(s, "seed", where);
            long seedBits;
            try {
                seedBits = Long.parseUnsignedLong(seed);
            } catch (NumberFormatException e) {
                throw new FramingException(where + ".seed = '" + seed + "', expected an unsigned 64-bit decimal");
            }
            rows.add(new RowSampler(number(s, "temperature", where), integer(s, "topK", where),
                    number(s, "topP", where), seedBits));
        }
        return new DraftSampling(rows);
    }

    static int[][] readProposals(JsonNode n, String field) throws FramingException {
        if (n == null || !n.isArray()) {
            throw new FramingException(field + " is " + (n == null ? "missing" : n.getNodeType())
                    + ", expected an array of arrays of ints");
        }
        int[][] out = new int[n.size()][];
        for (int b = 0; b < out.length; b++) {
            out[b] = readInts(n.get(b), field + "[" + b + "]");
            if (out[b] == null) {
                throw new FramingException(field + "[" + b + "] is null, expected an array of ints");
            }
        }
        return out;
    }

    static String text(JsonNode n, String key, String where) throws FramingException {
        JsonNode v = n == null ? null : n.get(key);
        if (v == null || !v.isTextual()) {
            throw new FramingException(where + "." + key + " is " + (v == null ? "missing" : v.getNodeType())
                    + ", expected a string");
        }
        return v.asText();
    }

    static int integer(JsonNode n, String key, String where) throws FramingException {
        JsonNode v = n == null ? null : n.get(key);
        if (v == null || !v.isIntegralNumber() || !v.canConvertToInt()) {
            throw new FramingException(where + "." + key + " is " + (v == null ? "missing" : v)
                    + ", expected an int");
        }
        return v.asInt();
    }

    static double number(JsonNode n, String key, String where) throws FramingException {
        JsonNode v = n == null ? null : n.get(key);
        if (v == null || !v.isNumber()) {
            throw new FramingException(where + "." + key + " is " + (v == null ? "missing" : v)
                    + ", expected a number");
        }
        return v.asDouble();
    }
}
