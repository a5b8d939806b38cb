package org.mtporacle.io;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

import com.fasterxml.jackson.core.JsonProcessingException;

import org.mtporacle.api.LinearWeight;
import org.mtporacle.api.MlpWeights;
import org.mtporacle.api.MtpConfig;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.MtpWeights;

/**
 * Describes a model directory (layout, norm convention, config, quantization, parameter counts, warnings, tensors) or
 * a single safetensors file (metadata and tensor list), as text or JSON.
 */
public final class ModelInspector {
    private ModelInspector() {
    }

    /**
     * The MLP (spec §1.4 step 8, §12): {@code "dense"} or {@code "moe"} with its router and experts.
     *
     * @param kind           {@code "dense"} or {@code "moe"}
     * @param expertLayout   {@code per-expert}, {@code fused} or {@code stacked}; null when dense
     * @param experts        E (0 when dense)
     * @param topK           K (0 when dense)
     * @param normTopK       whether the chosen probabilities are renormalised
     * @param width          I, or the experts' width
     * @param sharedWidth    the shared expert's width (0 when dense)
     * @param expertStorage  each distinct storage of the routed experts' linears with its count, e.g.
     *                       {@code {"affine 4-bit, group 32": 24}}
     * @param routerStorage  the router's storage; null when dense
     * @param tokenBytes     MLP bytes one token reads (router, K experts, shared expert and gate; or the dense MLP)
     */
    public record MlpSummary(String kind, String expertLayout, int experts, int topK, boolean normTopK, int width,
                             int sharedWidth, Map<String, Integer> expertStorage, String routerStorage,
                             long tokenBytes) {
        String toText() {
            if (kind.equals("dense")) {
                return "mlp: dense, I=" + width + "\n";
            }
            return String.format(Locale.ROOT, "mlp: moe, %d experts (%s), top-%d%s, expert I=%d, shared I=%d%n"
                    + "experts: %s%nrouter: %s; %d bytes per token%n", experts, expertLayout, topK,
                    normTopK ? " renormalised" : "", width, sharedWidth, expertStorage, routerStorage, tokenBytes);
        }
    }

    /** One stored tensor. */
    public record TensorRow(String name, String dtype, List<Integer> shape, long bytes, String file) {
    }

    /**
     * What inspection found; model fields are null for a lone safetensors file.
     *
     * @param kind             {@code "model"} or {@code "safetensors"}
     * @param normConvention   how the stored norms were read: zero-centred (+1 folded) or full gain
     * @param mtpParameters    logical parameters of the block (linears as {@code out × in}, norms)
     * @param targetParameters logical parameters of the embedding and, when untied, the head
     */
    public record Report(String path, String kind, String layout, String normConvention, String quantization,
                         MtpConfig config, MlpSummary mlp, String identity, Long mtpParameters,
                         Long targetParameters,
                         Map<String, Long> bytesByDtype, Map<String, String> metadata, List<TensorRow> tensors,
                         List<String> warnings) {

        /** A human-readable summary, one fact per line, then the tensor table. */
        public String toText() {
            StringBuilder sb = new StringBuilder();
            sb.append(kind).append(' ').append(path).append('\n');
            if (kind.equals("model")) {
                sb.append("layout: ").append(layout).append('\n');
                sb.append("norms: ").append(normConvention).append('\n');
                sb.append("quantization: ").append(quantization).append('\n');
                sb.append(String.format(Locale.ROOT, "config: H=%d nH=%d nKV=%d D=%d R=%d theta=%s eps=%s V=%d I=%d%n",
                        config.hiddenSize(), config.numHeads(), config.numKvHeads(), config.headDim(),
                        config.rotaryDims(), config.ropeTheta(), config.rmsNormEps(), config.vocabSize(),
                        config.intermediateSize()));
                sb.append(mlp.toText());
                sb.append("parameters: mtp ").append(mtpParameters).append(", target head ").append(targetParameters)
                        .append('\n');
                sb.append("identity: ").append(identity).append('\n');
            }
            metadata.forEach((k, v) -> sb.append("metadata ").append(k).append(" = ").append(v).append('\n'));
            bytesByDtype.forEach((k, v) -> sb.append("bytes ").append(k).append(": ").append(v).append('\n'));
            for (String w : warnings) {
                sb.append("warning: ").append(w).append('\n');
            }
            sb.append("tensors: ").append(tensors.size()).append('\n');
            for (TensorRow t : tensors) {
                sb.append(String.format(Locale.ROOT, "  %-56s %-5s %-16s %s%n", t.name(), t.dtype(), t.shape(),
                        t.file()));
            }
            return sb.toString();
        }

        /** The report as a JSON object with the record's field names. */
        public String toJson() {
            try {
                return SafetensorsFile.JSON.writerWithDefaultPrettyPrinter().writeValueAsString(this);
            } catch (JsonProcessingException e) {
                throw new IllegalStateException(e);
            }
        }
    }

    /**
     * Inspects a model directory, a safetensors file with a {@code config.json} beside it (as a model), or a lone
     * safetensors file (its tensors only).
     */
    public static Report inspect(Path path) {
        boolean dir = Files.isDirectory(path);
        Path parent = dir ? path : path.toAbsolutePath().getParent();
        if (!dir && !Files.isRegularFile(parent.resolve("config.json"))) {
            return inspectFile(path);
        }
        MtpModel model = ModelLoader.load(path);
        ModelConfig cfg = ModelConfigReader.read(parent.resolve("config.json"));
        List<TensorRow> rows = new ArrayList<>();
        Map<String, Long> bytes = new TreeMap<>();
        Map<String, String> metadata = new TreeMap<>();
        try (TensorStore store = TensorStore.open(path)) {
            addRows(store, parent, rows, bytes, metadata);
        }
        MtpWeights w = model.weights();
        long mtp = linear(w.fc()) + linear(w.qProj()) + linear(w.kProj()) + linear(w.vProj()) + linear(w.oProj())
                + parameters(w.mlp()) + w.preFcNormEmbedding().length
                + w.preFcNormHidden().length + w.inputNorm().length + w.qNorm().length + w.kNorm().length
                + w.postAttentionNorm().length + w.finalNorm().length;
        long target = linear(w.embedding()) + (w.head() == w.embedding() ? 0 : linear(w.head()));
        String norms = model.layout().equals("hf") ? "zero-centred (stored w, gain 1 + w folded in f32)"
                : "full gain (stored as used)";
        String quant = cfg.quantization() == null ? "none" : "default " + cfg.quantization().defaults()
                + (cfg.quantization().overrides().isEmpty() ? "" : ", overrides " + String.join(", ",
                cfg.quantization().overrides().entrySet().stream().map(e -> e.getKey() + " "
                        + (e.getValue() == null ? "dense" : e.getValue())).toList()));
        Set<String> names = new java.util.TreeSet<>();
        rows.forEach(r -> names.add(r.name().startsWith("mtp.") ? r.name().substring(4) : r.name()));
        return new Report(path.toString(), "model", model.layout(), norms, quant, model.config(),
                summary(w.mlp(), names), model.identity(), mtp, target, bytes, metadata, rows, model.warnings());
    }

    /** Inspects one safetensors file: metadata, tensors and bytes per dtype. */
    public static Report inspectFile(Path file) {
        List<TensorRow> rows = new ArrayList<>();
        Map<String, Long> bytes = new TreeMap<>();
        Map<String, String> metadata = new TreeMap<>();
        try (SafetensorsFile f = SafetensorsFile.open(file)) {
            addRows(f, file.toAbsolutePath().getParent(), rows, bytes, metadata);
        }
        return new Report(file.toString(), "safetensors", null, null, null, null, null, null, null, null, bytes,
                metadata, rows, List.of());
    }

    private static void addRows(TensorStore store, Path base, List<TensorRow> rows, Map<String, Long> bytes,
                                Map<String, String> metadata) {
        if (store instanceof SafetensorsFile f) {
            metadata.putAll(f.metadata());
        }
        for (String name : store.names()) {
            var t = store.tensor(name);
            rows.add(new TensorRow(name, t.dtype().safetensorsName(), Arrays.stream(t.shape()).boxed().toList(),
                    t.byteSize(), base.toAbsolutePath().relativize(store.fileOf(name).toAbsolutePath()).toString()));
            bytes.merge(t.dtype().safetensorsName(), t.byteSize(), Long::sum);
        }
    }

    private static MlpSummary summary(MlpWeights mlp, Set<String> names) {
        return switch (mlp) {
            case MlpWeights.Dense d -> new MlpSummary("dense", null, 0, 0, false, d.width(), 0, Map.of(), null,
                    d.tokenBytes());
            case MlpWeights.Moe m -> {
                Map<String, Integer> storage = new TreeMap<>();
                for (MlpWeights.Dense e : m.experts()) {
                    for (LinearWeight l : List.of(e.gateProj(), e.upProj(), e.downProj())) {
                        storage.merge(storage(l), 1, Integer::sum);
                    }
                }
                yield new MlpSummary("moe", String.valueOf(MoeLayout.kind(names)), m.numExperts(), m.topK(),
                        m.normTopK(), m.expertWidth(), m.sharedExpert().width(), storage, storage(m.router()),
                        m.tokenBytes());
            }
        };
    }

    private static String storage(LinearWeight w) {
        return switch (w) {
            case LinearWeight.Dense d -> "dense " + d.weight().dtype().safetensorsName();
            case LinearWeight.Affine a -> "affine " + a.bits() + "-bit, group " + a.groupSize();
        };
    }

    private static long parameters(MlpWeights mlp) {
        return switch (mlp) {
            case MlpWeights.Dense d -> linear(d.gateProj()) + linear(d.upProj()) + linear(d.downProj());
            case MlpWeights.Moe m -> {
                long sum = linear(m.router()) + parameters(m.sharedExpert()) + linear(m.sharedExpertGate());
                for (MlpWeights.Dense e : m.experts()) {
                    sum += parameters(e);
                }
                yield sum;
            }
        };
    }

    private static long linear(LinearWeight w) {
        return (long) w.outFeatures() * w.inFeatures();
    }
}
