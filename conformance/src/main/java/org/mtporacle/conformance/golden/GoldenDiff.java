package org.mtporacle.conformance.golden;

import org.mtporacle.api.HostTensor;
import org.mtporacle.conformance.golden.GoldenTrace.Expect;
import org.mtporacle.conformance.golden.GoldenTrace.RowState;
import org.mtporacle.conformance.golden.GoldenTrace.Step;
import org.mtporacle.conformance.compare.Nmse;
import org.mtporacle.io.DocumentFiles;
import org.mtporacle.io.SafetensorsFile;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;

/**
 * What changed between two golden traces, step by step, in readable lines: header fields (model, options), then per
 * step the inputs (values, and context tensors by NMSE) and the observables (tokens by position, log-probs and gaps
 * by largest change, row states by P/offset/digest and, when both hold tensors, NMSE). Reads without checking the
 * checksums, so a damaged golden can be compared with a good one.
 */
public final class GoldenDiff {
    private GoldenDiff() {
    }

    /** The differences; empty when the traces say the same thing. */
    public static List<String> diff(Path a, Path b) {
        Loaded x = load(a);
        Loaded y = load(b);
        List<String> out = new ArrayList<>();
        ObjectNode hx = GoldenFiles.toJson(x.trace);
        ObjectNode hy = GoldenFiles.toJson(y.trace);
        for (String section : List.of("model", "options")) {
            fields(section, hx.get(section), hy.get(section), out);
        }
        if (!Objects.equals(x.trace.name(), y.trace.name())) {
            out.add("name: " + x.trace.name() + " → " + y.trace.name());
        }
        List<Step> sx = x.trace.steps();
        List<Step> sy = y.trace.steps();
        for (int i = 0; i < Math.max(sx.size(), sy.size()); i++) {
            if (i >= sx.size()) {
                out.add("step " + i + ": only in B: " + sy.get(i).describe());
                continue;
            }
            if (i >= sy.size()) {
                out.add("step " + i + ": only in A: " + sx.get(i).describe());
                continue;
            }
            List<String> lines = new ArrayList<>();
            step(sx.get(i), sy.get(i), x, y, lines);
            if (!lines.isEmpty()) {
                out.add("step " + i + " " + sx.get(i).describe() + (sx.get(i).op().equals(sy.get(i).op()) ? ""
                        : " → " + sy.get(i).describe()) + ":");
                lines.forEach(l -> out.add("  " + l));
            }
        }
        return out;
    }

    /**
     * The differences between two speculative-run goldens ({@link SpeculativeGolden}): header fields and requests,
     * then per round entry its index, depth and rows, and per row the drafted, accepted and emitted values and each
     * state's P, digest and norms; then the outputs. Empty when they say the same thing.
     */
    public static List<String> diffSpeculative(Path a, Path b) {
        ObjectNode x = SpeculativeGolden.readUnchecked(a).toJson();
        ObjectNode y = SpeculativeGolden.readUnchecked(b).toJson();
        List<String> out = new ArrayList<>();
        for (String section : List.of("name", "model", "options", "requests")) {
            nested(section, x.get(section), y.get(section), out);
        }
        JsonNode rx = x.get("rounds");
        JsonNode ry = y.get("rounds");
        for (int k = 0; k < Math.max(rx.size(), ry.size()); k++) {
            if (k >= rx.size() || k >= ry.size()) {
                out.add("round entry " + k + ": only in " + (k >= rx.size() ? "B" : "A") + " (round "
                        + (k >= rx.size() ? ry : rx).get(k).get("round") + ")");
                continue;
            }
            List<String> lines = new ArrayList<>();
            nested("", rx.get(k), ry.get(k), lines);
            if (!lines.isEmpty()) {
                out.add("round " + rx.get(k).get("round") + ":");
                lines.forEach(l -> out.add("  " + l.substring(1)));
            }
        }
        fields("outputs", x.get("outputs"), y.get("outputs"), out);
        return out;
    }

    /** As {@link #fields}, also into arrays of objects of the same length, element by element ({@code path[i]}). */
    private static void nested(String path, JsonNode a, JsonNode b, List<String> out) {
        if (a != null && b != null && a.isArray() && b.isArray() && a.size() == b.size() && a.size() > 0
                && a.get(0).isObject()) {
            for (int i = 0; i < a.size(); i++) {
                nested(path + "[" + i + "]", a.get(i), b.get(i), out);
            }
        } else if (a != null && b != null && a.isObject() && b.isObject()) {
            List<String> names = new ArrayList<>();
            a.fieldNames().forEachRemaining(names::add);
            b.fieldNames().forEachRemaining(n -> {
                if (!names.contains(n)) {
                    names.add(n);
                }
            });
            for (String n : names) {
                nested(path + "." + n, a.get(n), b.get(n), out);
            }
        } else {
            fields(path, a, b, out);
        }
    }

    private record Loaded(GoldenTrace trace, Map<String, HostTensor> tensors) {
    }

    private static Loaded load(Path file) {
        String where = "golden " + file;
        GoldenTrace t = GoldenFiles.fromJson(GoldenFiles.parse(file, where), where);
        Map<String, HostTensor> tensors = new LinkedHashMap<>();
        Path st = file.toAbsolutePath().resolveSibling(t.tensorsFile()); // a plain file name: fromJson checked it
        if (Files.isRegularFile(st)) {
            SafetensorsFile f = SafetensorsFile.open(DocumentFiles.sibling(file, t.tensorsFile(),
                    GoldenFiles.MAX_TENSOR_BYTES, where + ": tensors.file"), true); // mapped, not copied
            for (String n : f.names()) {
                tensors.put(n, f.tensor(n));
            }
        }
        return new Loaded(t, tensors);
    }

    private static void fields(String path, JsonNode a, JsonNode b, List<String> out) {
        if (a != null && b != null && a.isObject() && b.isObject()) {
            List<String> names = new ArrayList<>();
            a.fieldNames().forEachRemaining(names::add);
            b.fieldNames().forEachRemaining(n -> {
                if (!names.contains(n)) {
                    names.add(n);
                }
            });
            for (String n : names) {
                fields(path + "." + n, a.get(n), b.get(n), out);
            }
        } else if (!Objects.equals(a, b)) {
            out.add(path + ": " + a + " → " + b);
        }
    }

    private static void step(Step a, Step b, Loaded x, Loaded y, List<String> out) {
        ObjectNode ja = GoldenFiles.toJson(a);
        ObjectNode jb = GoldenFiles.toJson(b);
        ja.remove("expect");
        jb.remove("expect");
        for (String f : List.of("context")) {
            if (ja.has(f) && jb.has(f)) {
                tensor("input " + f, x.tensors.get(ja.get(f).asText()), y.tensors.get(jb.get(f).asText()), out);
                ja.remove(f);
                jb.remove(f);
            }
        }
        fields("input", ja, jb, out);
        Expect ea = a.expect();
        Expect eb = b.expect();
        if (!Objects.equals(ea.error(), eb.error())) {
            out.add("error: " + ea.error() + " → " + eb.error());
        }
        if (ea.rowCount() != eb.rowCount()) {
            out.add("rowCount: " + ea.rowCount() + " → " + eb.rowCount());
        }
        if (ea.tokens() != null && eb.tokens() != null) {
            draft(ea, eb, out);
        }
        if (ea.rows() != null && eb.rows() != null) {
            for (int r = 0; r < Math.max(ea.rows().size(), eb.rows().size()); r++) {
                RowState ra = r < ea.rows().size() ? ea.rows().get(r) : null;
                RowState rb = r < eb.rows().size() ? eb.rows().get(r) : null;
                row("row " + r, ra, rb, x, y, out);
            }
        }
        row("checkpoint", ea.checkpoint(), eb.checkpoint(), x, y, out);
        experts(ea.experts(), eb.experts(), out);
    }

    /** Router choices (MoE): recorded on one side only, or a row's entries changed. */
    private static void experts(int[][][] a, int[][][] b, List<String> out) {
        if (a == null || b == null) {
            if (a != b) {
                out.add("experts: recorded in " + (a == null ? "B" : "A") + " only");
            }
            return;
        }
        for (int r = 0; r < Math.max(a.length, b.length); r++) {
            int[][] ra = r < a.length ? a[r] : new int[0][];
            int[][] rb = r < b.length ? b[r] : new int[0][];
            if (!Arrays.deepEquals(ra, rb)) {
                out.add("experts row " + r + ": " + Arrays.deepToString(ra) + " → " + Arrays.deepToString(rb));
            }
        }
    }

    private static void draft(Expect a, Expect b, List<String> out) {
        float maxLp = 0;
        String whereLp = "";
        float maxGap = 0;
        String whereGap = "";
        for (int r = 0; r < Math.min(a.tokens().length, b.tokens().length); r++) {
            if (!Arrays.equals(a.tokens()[r], b.tokens()[r])) {
                int first = Arrays.mismatch(a.tokens()[r], b.tokens()[r]);
                out.add("tokens row " + r + ": " + Arrays.toString(a.tokens()[r]) + " → "
                        + Arrays.toString(b.tokens()[r]) + " (first change at position " + first + ")");
            }
            for (int p = 0; p < Math.min(a.logprobs()[r].length, b.logprobs()[r].length); p++) {
                float d = Math.abs(a.logprobs()[r][p] - b.logprobs()[r][p]);
                if (d > maxLp) {
                    maxLp = d;
                    whereLp = "row " + r + " position " + p + ": " + a.logprobs()[r][p] + " → " + b.logprobs()[r][p];
                }
                float g = Math.abs(a.top2Gaps()[r][p] - b.top2Gaps()[r][p]);
                if (g > maxGap) {
                    maxGap = g;
                    whereGap = "row " + r + " position " + p + ": " + a.top2Gaps()[r][p] + " → " + b.top2Gaps()[r][p];
                }
            }
        }
        if (a.tokens().length != b.tokens().length) {
            out.add("tokens: " + a.tokens().length + " rows → " + b.tokens().length);
        }
        if (maxLp > 0) {
            out.add(String.format(Locale.ROOT, "logprobs: max |Δ| %.3g at %s", maxLp, whereLp));
        }
        if (maxGap > 0) {
            out.add(String.format(Locale.ROOT, "top2Gaps: max |Δ| %.3g at %s", maxGap, whereGap));
        }
    }

    private static void row(String what, RowState a, RowState b, Loaded x, Loaded y, List<String> out) {
        if (a == null && b == null) {
            return;
        }
        if (a == null || b == null) {
            out.add(what + ": " + (a == null ? "cold" : "P=" + a.processedTokens()) + " → "
                    + (b == null ? "cold" : "P=" + b.processedTokens()));
            return;
        }
        if (a.processedTokens() != b.processedTokens() || a.draftOffset() != b.draftOffset()) {
            out.add(String.format(Locale.ROOT, "%s: P=%d draftOffset=%d → P=%d draftOffset=%d", what,
                    a.processedTokens(), a.draftOffset(), b.processedTokens(), b.draftOffset()));
            return;
        }
        if (!a.sha256().equals(b.sha256())) {
            List<String> nm = new ArrayList<>();
            if (a.tensors() != null && b.tensors() != null) {
                for (String t : List.of("keys", "values", "hidden")) {
                    HostTensor ta = x.tensors.get(a.tensors() + "." + t);
                    HostTensor tb = y.tensors.get(b.tensors() + "." + t);
                    if (ta != null && tb != null && Arrays.equals(ta.shape(), tb.shape())) {
                        nm.add(String.format(Locale.ROOT, "%s NMSE %.3g", t, Nmse.of(tb, ta)));
                    }
                }
            }
            out.add(what + ": digest " + a.sha256().substring(0, 12) + "… → " + b.sha256().substring(0, 12) + "… (P="
                    + a.processedTokens() + ")" + (nm.isEmpty() ? "" : "; " + String.join(", ", nm)));
        }
    }

    private static void tensor(String what, HostTensor a, HostTensor b, List<String> out) {
        if (a == null || b == null) {
            if (a != b) {
                out.add(what + ": present in " + (a == null ? "B" : "A") + " only");
            }
            return;
        }
        if (!Arrays.equals(a.shape(), b.shape())) {
            out.add(what + ": " + a.describe() + " → " + b.describe());
        } else if (!a.contentEquals(b)) {
            out.add(String.format(Locale.ROOT, "%s: values changed, NMSE %.3g", what, Nmse.of(b, a)));
        }
    }
}
