package org.mtporacle.wire;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.mtporacle.api.BackendProfile;
import org.mtporacle.api.DType;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.Tolerance;
import org.mtporacle.wire.WireFrame.FramingException;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * What an engine said in its handshake (WIRE.md §4): protocol, identity, the profiles it claims and what it can do.
 *
 * @param unavailable null when the engine can run here, else its reason
 */
record Hello(String protocol, String engineName, String engineVersion, String description, String numerics,
             String unavailable, List<Claim> profiles, Capabilities capabilities) {

    /** One claimed profile: label, load options and the tolerance thresholds it holds itself to. */
    record Claim(String label, Map<String, String> options, Tolerance tolerance) {
        BackendProfile toBackendProfile() {
            return new BackendProfile(label, options, tolerance);
        }
    }

    /** The capabilities, with WIRE.md's defaults for what the engine left out. */
    record Capabilities(boolean seededSampling, Set<String> tapDtypes, Set<String> weightDtypes,
                        Map<Integer, Set<Integer>> quantization, Set<String> layouts, int maxRows, int maxDepth,
                        boolean routerChoices, boolean target, boolean targetRouterChoices) {
        /** Null when the engine says it loads {@code dtype} weights quantized as given, else why not. */
        String refuses(String layout, Set<DType> dense, Set<Integer[]> affine) {
            if (!layouts.contains(layout)) {
                return "layout " + layout + " (it loads " + layouts + ")";
            }
            for (DType d : dense) {
                if (!weightDtypes.contains(d.safetensorsName())) {
                    return d + " weights (it loads " + weightDtypes + ")";
                }
            }
            for (Integer[] q : affine) {
                Set<Integer> groups = quantization.get(q[0]);
                if (groups == null || !groups.contains(q[1])) {
                    return q[0] + "-bit affine weights with group size " + q[1] + " (it loads " + quantization + ")";
                }
            }
            return null;
        }
    }

    /** Reads a {@code hello} result; a malformed one is the engine's protocol fault. */
    static Hello parse(ObjectNode r) throws FramingException {
        String protocol = WireValues.text(r, "protocol", "hello");
        JsonNode engine = r.get("engine");
        String name = WireValues.text(engine, "name", "hello.engine");
        String version = WireValues.text(engine, "version", "hello.engine");
        String unavailable = optionalText(r, "unavailable");
        List<Claim> claims = new ArrayList<>();
        JsonNode ps = r.get("profiles");
        if (unavailable == null && (ps == null || !ps.isArray() || ps.isEmpty())) {
            throw new FramingException("hello.profiles is " + ps + ", expected an array of at least one profile");
        }
        if (ps != null && ps.isArray()) {
            for (int i = 0; i < ps.size(); i++) {
                claims.add(claim(ps.get(i), "hello.profiles[" + i + "]"));
            }
        }
        return new Hello(protocol, name, version, optionalText(r, "description"), optionalText(r, "numerics"),
                unavailable, List.copyOf(claims), capabilities(r.get("capabilities")));
    }

    private static Claim claim(JsonNode p, String where) throws FramingException {
        String label = WireValues.text(p, "label", where);
        Map<String, String> options = new LinkedHashMap<>();
        JsonNode o = p.get("options");
        if (o != null && !o.isNull()) {
            if (!o.isObject()) {
                throw new FramingException(where + ".options is " + o.getNodeType() + ", expected an object");
            }
            for (var e : o.properties()) {
                if (!e.getValue().isTextual()) {
                    throw new FramingException(where + ".options." + e.getKey() + " is not a string");
                }
                options.put(e.getKey(), e.getValue().asText());
            }
        }
        JsonNode t = p.get("tolerance");
        String tw = where + ".tolerance";
        String tname = WireValues.text(t, "name", tw);
        Tolerance tolerance;
        try {
            tolerance = new Tolerance(tname, WireValues.number(t, "tokenGap", tw), WireValues.number(t, "kvNmse", tw),
                    WireValues.number(t, "hiddenNmse", tw)).checkDeclarable("engine profile " + label);
        } catch (MtpException e) {
            throw new FramingException(tw + ": " + e.getMessage() + " (WIRE.md §4)");
        }
        return new Claim(label, Map.copyOf(options), tolerance);
    }

    private static Capabilities capabilities(JsonNode c) throws FramingException {
        if (c != null && !c.isNull() && !c.isObject()) {
            throw new FramingException("hello.capabilities is " + c.getNodeType() + ", expected an object");
        }
        JsonNode none = WireValues.NODES.objectNode();
        JsonNode n = c == null || c.isNull() ? none : c;
        JsonNode seeded = n.get("seededSampling");
        JsonNode routed = n.get("routerChoices");
        JsonNode target = n.get("target");
        JsonNode targetRouted = n.get("targetRouterChoices");
        Map<Integer, Set<Integer>> quant = new java.util.TreeMap<>();
        JsonNode q = n.get("quantization");
        if (q != null && q.isArray()) {
            for (int i = 0; i < q.size(); i++) {
                String w = "hello.capabilities.quantization[" + i + "]";
                int bits = WireValues.integer(q.get(i), "bits", w);
                int[] groups = WireValues.readInts(q.get(i).get("groupSizes"), w + ".groupSizes");
                Set<Integer> g = new TreeSet<>();
                for (int x : groups == null ? new int[0] : groups) {
                    g.add(x);
                }
                quant.put(bits, g);
            }
        }
        return new Capabilities(seeded != null && seeded.asBoolean(false), names(n, "tapDtypes", Set.of("F32")),
                names(n, "weightDtypes", Set.of("BF16", "F32")), quant, names(n, "layouts", Set.of("hf", "companion")),
                atLeastOne(n, "maxRows"), atLeastOne(n, "maxDepth"), routed != null && routed.asBoolean(false),
                target != null && target.asBoolean(false), targetRouted != null && targetRouted.asBoolean(false));
    }

    /**
     * A row or depth limit of at least 1: a claim of 0 would make every chain vacuous (no draft token compared, no
     * row run), so an engine cannot pass conformance by claiming it.
     */
    private static int atLeastOne(JsonNode n, String key) throws FramingException {
        int v = count(n, key, 64);
        if (v < 1) {
            throw new FramingException("hello.capabilities." + key + " = " + v + ": a claim below 1 would leave "
                    + "nothing to compare (no " + (key.equals("maxDepth") ? "draft token" : "row") + " checked); "
                    + "claim at least 1 (WIRE.md §4)");
        }
        return v;
    }

    private static Set<String> names(JsonNode n, String key, Set<String> fallback) throws FramingException {
        JsonNode a = n.get(key);
        if (a == null || a.isNull()) {
            return fallback;
        }
        if (!a.isArray()) {
            throw new FramingException("hello.capabilities." + key + " is " + a.getNodeType() + ", expected an array");
        }
        Set<String> out = new TreeSet<>();
        a.forEach(x -> out.add(x.asText()));
        return out;
    }

    private static int count(JsonNode n, String key, int fallback) throws FramingException {
        return n.has(key) ? WireValues.integer(n, key, "hello.capabilities") : fallback;
    }

    private static String optionalText(JsonNode n, String key) {
        JsonNode v = n.get(key);
        return v == null || !v.isTextual() ? null : v.asText();
    }
}
