package org.mtporacle.tools;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.UntrustedText;
import org.mtporacle.api.RowCheckpoint;
import org.mtporacle.api.TargetCheckpoint;
import org.mtporacle.conformance.chain.Action;
import org.mtporacle.conformance.golden.CheckpointDigest;
import org.mtporacle.conformance.golden.GoldenFiles;
import org.mtporacle.conformance.golden.GoldenTrace;
import org.mtporacle.conformance.trace.ChainTrace;
import org.mtporacle.conformance.trace.TraceFiles;
import org.mtporacle.io.CheckpointFiles;
import org.mtporacle.io.TargetCheckpointFiles;
import org.mtporacle.io.ModelInspector;
import org.mtporacle.io.SafetensorsFile;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Callable;

/** {@code mtp inspect PATH}: what a model, safetensors file, checkpoint file, chain trace or golden trace holds. */
@Command(name = "inspect", mixinStandardHelpOptions = true,
        description = {"Show what a file holds, detecting its kind: a model directory or .safetensors file (layout, "
                + "dtypes, shapes, parameter counts, quantization, norms, warnings), a row checkpoint file (schema, P, "
                + "draftOffset, identity, tensors, digest), a chain trace (fixture, backend, actions, divergence) or "
                + "a golden trace (model, options, steps, checksum status).",
                "A malformed file exits 3 with one line naming the file and what is wrong."})
final class InspectCommand implements Callable<Integer> {
    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

    @Parameters(paramLabel = "PATH", description = "A model directory, .safetensors file, checkpoint file, chain "
            + "trace or golden trace.")
    Path path;

    @Mixin
    Mixins.Json json;

    @Option(names = "--strict", description = "Exit 1 when the model has warnings (a norm that looks folded twice or "
            + "unfolded, an ignored head), so that CI sees them.")
    boolean strict;

    @Override
    public Integer call() throws Exception {
        if (!Files.exists(path)) {
            throw MtpException.invalidArgument(path + ": no such file or directory");
        }
        Map<String, Object> summary = null;
        if (Files.isRegularFile(path) && path.toString().endsWith(".json")) {
            String format = GoldenFiles.parse(path, path.toString()).path("format").asText("");
            summary = switch (format) {
                case GoldenTrace.FORMAT -> golden(path);
                case ChainTrace.FORMAT, ChainTrace.FORMAT_1 -> chain(TraceFiles.read(path));
                case "" -> throw MtpException.malformedFile(path + ": JSON without a \"format\", so neither a chain "
                        + "trace (" + ChainTrace.FORMAT + ") nor a golden trace (" + GoldenTrace.FORMAT + ")"
                        + (path.getFileName().toString().equals("config.json") ? "; for the model give its directory"
                        : ""));
                default -> throw MtpException.malformedFile(path + ": JSON of format '" + format
                        + "', expected a chain trace (" + ChainTrace.FORMAT + ") or a golden trace ("
                        + GoldenTrace.FORMAT + ")");
            };
        } else if (Files.isRegularFile(path) && isCheckpoint(path)) {
            summary = checkpoint(CheckpointFiles.read(path));
        } else if (Files.isRegularFile(path) && TargetCheckpointFiles.isTargetCheckpoint(path)) {
            summary = targetCheckpoint(TargetCheckpointFiles.read(path));
        }
        if (summary == null) {
            requireModelOrSafetensors(path);
            ModelInspector.Report r = ModelInspector.inspect(path);
            System.out.print(json.json ? r.toJson() + "\n" : r.toText());
            if (strict && !r.warnings().isEmpty()) {
                System.out.println("inspect: " + r.warnings().size() + " warning" + (r.warnings().size() == 1 ? "" : "s")
                        + " (--strict makes a warning a failure)");
                return MtpCommand.EXIT_FAILED;
            }
        } else if (json.json) {
            System.out.println(JSON.writeValueAsString(summary));
        } else {
            print(summary, "");
        }
        return MtpCommand.EXIT_OK;
    }

    /**
     * What is left for the model inspector must be a model directory or a safetensors file; anything else is named for
     * what it is not, with what inspect reads (not "safetensors" for a README, not "missing config.json" for a folder
     * of golden traces).
     */
    private static void requireModelOrSafetensors(Path p) {
        String reads = "inspect reads a model directory, a .safetensors file, a checkpoint, a chain trace or a golden "
                + "trace";
        if (Files.isDirectory(p) && !Files.isRegularFile(p.resolve("config.json"))) {
            boolean json;
            try (java.util.stream.Stream<Path> s = Files.list(p)) {
                json = s.anyMatch(f -> f.getFileName().toString().endsWith(".json"));
            } catch (java.io.IOException e) {
                json = false;
            }
            throw MtpException.invalidArgument(p + ": a directory without config.json, so not a model directory; "
                    + reads + (json ? " (give one of its .json files)" : ""));
        }
        if (Files.isRegularFile(p) && !p.getFileName().toString().endsWith(".safetensors")) {
            try (SafetensorsFile f = SafetensorsFile.open(p)) {
                return; // safetensors under another name
            } catch (MtpException e) {
                throw MtpException.invalidArgument(p + ": not a safetensors file, checkpoint, chain trace or golden "
                        + "trace; " + reads);
            }
        }
    }

    private static boolean isCheckpoint(Path file) {
        try (SafetensorsFile f = SafetensorsFile.open(file)) {
            return CheckpointFiles.FORMAT.equals(f.metadata().get("format"));
        } catch (MtpException e) {
            return false; // not safetensors; the model inspector reports it
        }
    }

    private static Map<String, Object> checkpoint(RowCheckpoint cp) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("kind", "checkpoint");
        m.put("schema", cp.schema());
        m.put("processedTokens", cp.processedTokens());
        m.put("draftOffset", cp.draftOffset());
        m.put("aligned", cp.draftOffset() == cp.processedTokens() - 1);
        m.put("modelIdentity", cp.modelIdentity());
        Map<String, Object> t = new LinkedHashMap<>();
        for (Map.Entry<String, HostTensor> e : new TreeMap<>(tensors(cp)).entrySet()) {
            t.put(e.getKey(), e.getValue().describe());
        }
        m.put("tensors", t);
        m.put("goldenDigest", CheckpointDigest.of(cp));
        String content = cp.contentDigest();
        m.put("contentDigest", content);
        // the recorded value is the file's: never printed beyond a short prefix (it only has to be told apart)
        m.put("recordedDigest", cp.digest() == null ? "none (written before digests; restore refuses it, "
                + "`mtp checkpoint --seal` vouches for it)" : content.equals(cp.digest()) ? "matches"
                : "DOES NOT MATCH (recorded " + UntrustedText.clip(cp.digest().substring(0, Math.min(12,
                cp.digest().length()))) + "…): the label or the tensors were changed after capture; restore "
                + "refuses it");
        return m;
    }

    private static Map<String, Object> targetCheckpoint(TargetCheckpoint cp) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("kind", "target checkpoint");
        m.put("schema", UntrustedText.clip(cp.schema()));
        m.put("processedTokens", cp.processedTokens());
        m.put("modelIdentity", UntrustedText.clip(cp.modelIdentity()));
        Map<String, Object> t = new LinkedHashMap<>();
        HostTensor[] tensors = {cp.convWindows(), cp.recurrentStates(), cp.keys(), cp.values()};
        String[] names = {"convWindows", "recurrentStates", "keys", "values"};
        for (int i = 0; i < names.length; i++) {
            t.put(names[i], tensors[i] == null ? "none" : tensors[i].describe());
        }
        m.put("tensors", t);
        String content = cp.contentDigest();
        m.put("contentDigest", content);
        m.put("recordedDigest", cp.digest() == null ? "none (restore refuses it)" : content.equals(cp.digest())
                ? "matches" : "DOES NOT MATCH: the label or the tensors were changed after capture; restore refuses it");
        return m;
    }

    private static Map<String, HostTensor> tensors(RowCheckpoint cp) {
        Map<String, HostTensor> t = new LinkedHashMap<>();
        if (cp.keys() != null) {
            t.put("keys", cp.keys());
            t.put("values", cp.values());
        }
        t.put("hidden", cp.hidden());
        return t;
    }

    private static Map<String, Object> chain(ChainTrace t) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("kind", "chain trace");
        m.put("format", t.format());
        m.put("fixture", t.fixture());
        m.put("modelIdentity", t.modelIdentity());
        m.put("backend", t.backend());
        m.put("backendOptions", t.backendOptions());
        m.put("tolerance", t.tolerance().describe());
        m.put("contexts", t.contexts().describe());
        m.put("seed", t.seed());
        m.put("actions", t.actions().size() + " (shrunk from " + t.originalLength() + ")");
        m.put("steps", t.actions().stream().map(Action::describe).toList());
        if (t.divergence() != null) {
            Map<String, Object> d = new LinkedHashMap<>();
            d.put("action", t.divergence().actionIndex());
            d.put("kind", t.divergence().kind().name());
            d.put("category", t.divergence().category().name());
            d.put("message", t.divergence().message());
            d.put("details", t.divergence().details());
            m.put("divergence", d);
        }
        m.put("replay", "mtp replay <this file> --backend NAME");
        return m;
    }

    private static Map<String, Object> golden(Path file) {
        String where = "golden " + file;
        GoldenTrace t = GoldenFiles.fromJsonUnchecked(file);
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("kind", "golden trace");
        m.put("format", GoldenTrace.FORMAT);
        m.put("name", t.name());
        m.put("description", t.description());
        m.put("model", t.model().fixture() != null ? "fixture " + t.model().fixture() : "directory "
                + t.model().path());
        m.put("modelIdentity", t.model().identity());
        m.put("config", describe(t.model().config()));
        m.put("contexts", t.options().contexts() + (t.options().tap() == null ? "" : ", tap " + t.options().tap()));
        m.put("sampling", t.options().sampling());
        m.put("engine", t.options().engine() + " " + t.options().engineOptions());
        m.put("numerics", t.options().numerics());
        m.put("tolerance", t.options().tolerance());
        m.put("tensors", t.tensorsFile());
        String checks;
        try {
            GoldenFiles.Golden g = GoldenFiles.read(file);
            checks = "valid (JSON " + g.jsonBytes() + " bytes, tensors " + g.tensorBytes() + " bytes, "
                    + g.tensors().size() + " tensors)";
        } catch (MtpException e) {
            checks = "INVALID: " + e.getMessage().replace(where + ": ", "");
        }
        m.put("checksums", checks);
        Map<String, Integer> ops = new LinkedHashMap<>();
        t.steps().forEach(s -> ops.merge(s.op(), 1, Integer::sum));
        m.put("stepCounts", ops);
        long routed = t.steps().stream().filter(s -> s.expect().experts() != null)
                .flatMap(s -> java.util.Arrays.stream(s.expect().experts())).mapToLong(r -> r.length).sum();
        if (routed > 0) {
            m.put("routerChoices", routed + " recorded (MoE experts per forward row, spec §12.5)");
        }
        List<String> steps = new java.util.ArrayList<>();
        for (int i = 0; i < t.steps().size(); i++) {
            GoldenTrace.Step s = t.steps().get(i);
            steps.add(i + ": " + s.describe() + (s.expect().error() != null ? " → " + s.expect().error() : ""));
        }
        m.put("steps", steps);
        return m;
    }

    /** "hidden 256, heads 4/2 × 64 (rotary 16, θ 1e+07), vocab 4096, intermediate 512, eps 1e-06". */
    static String describe(org.mtporacle.api.MtpConfig c) {
        return String.format(java.util.Locale.ROOT, "hidden %d, heads %d/%d × %d (rotary %d, θ %.3g), vocab %d, "
                        + "intermediate %d, eps %.3g", c.hiddenSize(), c.numHeads(), c.numKvHeads(), c.headDim(),
                c.rotaryDims(), c.ropeTheta(), c.vocabSize(), c.intermediateSize(), c.rmsNormEps());
    }

    /** Prints the summary; every key and value may come from the file, so each is kept to one line. */
    private static void print(Map<String, Object> m, String indent) {
        for (Map.Entry<String, Object> e : m.entrySet()) {
            Object v = e.getValue();
            String key = UntrustedText.line(e.getKey());
            if (v instanceof Map<?, ?> sub && !sub.isEmpty() && !e.getKey().endsWith("Options")) {
                System.out.println(indent + key + ":");
                @SuppressWarnings("unchecked")
                Map<String, Object> s = (Map<String, Object>) sub;
                print(s, indent + "  ");
            } else if (v instanceof List<?> list) {
                System.out.println(indent + key + ":");
                list.forEach(x -> System.out.println(indent + "  " + UntrustedText.line(String.valueOf(x))));
            } else {
                System.out.println(indent + key + ": " + UntrustedText.line(String.valueOf(v)));
            }
        }
    }
}
