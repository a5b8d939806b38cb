package org.mtporacle.io;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.mtporacle.api.DType;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MtpException;

/**
 * Converts a raw Hugging Face Qwen3.5 checkpoint (one file or shards) into a companion directory (spec §11.4, §11.5):
 * the {@code mtp.} prefix stripped, the seven zero-centred norms folded once to F32 full gains ({@link NormFolding}),
 * the target's embedding (and {@code lm_head} when untied) in {@value ShardedTensorStore#TARGET_HEAD_FILE}, and a
 * {@code config.json} with {@code model_type} {@value ModelConfigReader#COMPANION_MODEL_TYPE}. With {@code bits > 0}
 * every linear (and the embedding and head) is MLX affine ({@link AffineQuantizer}) except the modules kept dense,
 * which the config's {@code quantization} block lists as {@code "MODULE": false}. A MoE layer's fused experts are
 * written per expert ({@code layers.0.mlp.experts.{e}.*_proj.weight}), so each expert is quantized on its own; its
 * router and shared-expert gate stay dense (spec §12.2).
 */
public final class CompanionConverter {
    private static final List<String> EMBEDDING_NAMES = List.of("model.language_model.embed_tokens.weight",
            "model.embed_tokens.weight", "language_model.model.embed_tokens.weight");
    private static final List<String> HEAD_NAMES = List.of("lm_head.weight", "language_model.lm_head.weight");
    private static final int CHUNK_ROWS = 256;

    private CompanionConverter() {
    }

    /**
     * What to do: {@code bits} 0 for dense, else 2, 3, 4, 5, 6 or 8 with {@code groupSize} 32, 64 or 128;
     * {@code keep}: companion-relative module paths left dense ({@code layers.0.mlp.down_proj}, {@code lm_head}).
     */
    public record Options(int bits, int groupSize, Set<String> keep) {
        public Options {
            keep = Set.copyOf(keep);
        }

        public static Options dense() {
            return new Options(0, 0, Set.of());
        }
    }

    /** Called after each tensor is written. */
    @FunctionalInterface
    public interface Progress {
        void tensorDone(String name, int done, int total);
    }

    /** What was written: the directory, and each module's storage ({@code "dense"} or the quantization spec). */
    public record Result(Path out, Map<String, String> modules, int tensors) {
    }

    /**
     * Converts {@code hfDir} into {@code outDir} (created; existing files of the same names are replaced).
     *
     * @throws MtpException INCOMPATIBLE_MODEL when the input is not a loadable raw HF MTP checkpoint (already a
     *                      companion, no {@code mtp.} tensors, already quantized); INVALID_ARGUMENT for bad options
     *                      or an unknown {@code keep} module
     */
    public static Result convert(Path hfDir, Path outDir, Options o, Progress progress) {
        if (!Files.exists(hfDir)) {
            throw MtpException.invalidArgument("convert: " + hfDir + ": no such directory");
        }
        if (!Files.isDirectory(hfDir)) {
            throw MtpException.invalidArgument("convert: " + hfDir + ": not a directory (--from takes a model "
                    + "directory)");
        }
        if (!Files.isRegularFile(hfDir.resolve("config.json"))) {
            throw MtpException.incompatibleModel("convert: " + hfDir + " is not a model directory (no config.json)");
        }
        ModelConfig cfg = ModelConfigReader.read(hfDir.resolve("config.json"));
        if (cfg.layout().equals("companion")) {
            throw MtpException.incompatibleModel("convert: " + hfDir + " is already a companion (model_type "
                    + ModelConfigReader.COMPANION_MODEL_TYPE + "); convert reads a raw Hugging Face checkpoint");
        }
        if (o.bits() != 0) {
            AffineQuantizer.quantizeRows(new float[o.groupSize()], 1, o.groupSize(), o.bits(), o.groupSize(),
                    new int[o.groupSize() * o.bits() / 32], new float[1], new float[1]); // validates bits and group
        }
        try (ShardedTensorStore store = ShardedTensorStore.open(hfDir)) {
            List<String> mtpNames = store.names().stream().filter(n -> n.startsWith("mtp.")).toList();
            if (mtpNames.isEmpty()) {
                throw MtpException.incompatibleModel("convert: " + hfDir + " is not a raw Hugging Face Qwen3.5 MTP "
                        + "checkpoint: none of its " + store.names().size() + " tensors has the 'mtp.' prefix"
                        + (store.names().isEmpty() ? "" : " (e.g. '" + store.names().getFirst() + "')"));
            }
            ModelLoader.load(hfDir); // every shape, the MoE check and the head, before anything is written
            for (String n : mtpNames) {
                if (n.endsWith(".scales")) {
                    throw MtpException.incompatibleModel("convert: " + hfDir + " is already quantized ('" + n
                            + "'); convert expects dense weights");
                }
            }
            Map<String, HostTensor> mtp = new LinkedHashMap<>();
            for (String n : mtpNames) {
                mtp.put(n.substring(4), store.tensor(n));
            }
            mtp = MoeLayout.splitFused(NormFolding.fold(mtp));
            Set<String> keep = new TreeSet<>(o.keep());
            if (o.bits() != 0) {
                keep.addAll(MoeLayout.keptDense(mtp.keySet()));
            }
            Map<String, HostTensor> head = new LinkedHashMap<>();
            String emb = EMBEDDING_NAMES.stream().filter(store::contains).findFirst().orElseThrow();
            head.put("embed_tokens.weight", store.tensor(emb));
            String lm = HEAD_NAMES.stream().filter(store::contains).findFirst().orElse(null);
            boolean tied = Boolean.TRUE.equals(cfg.tieWordEmbeddings()) || lm == null;
            if (!tied) {
                head.put("lm_head.weight", store.tensor(lm));
            }
            Set<String> modules = new TreeSet<>();
            for (Map<String, HostTensor> m : List.of(mtp, head)) {
                m.forEach((n, t) -> {
                    if (n.endsWith(".weight") && t.rank() == 2) {
                        modules.add(n.substring(0, n.length() - ".weight".length()));
                    }
                });
            }
            o = new Options(o.bits(), o.groupSize(), keep);
            for (String k : o.keep()) {
                if (!modules.contains(k)) {
                    throw MtpException.invalidArgument("convert: --keep " + k + " is not a module of this model "
                            + "(modules: " + String.join(", ", modules) + ")");
                }
            }
            Files.createDirectories(outDir);
            Map<String, String> storage = new TreeMap<>();
            int total = mtp.size() + head.size();
            int[] done = {0};
            SafetensorsWriter model = writer(hfDir);
            SafetensorsWriter target = writer(hfDir);
            add(model, mtp, o, storage, progress, done, total);
            add(target, head, o, storage, progress, done, total);
            model.write(outDir.resolve("model.safetensors"));
            target.write(outDir.resolve(ShardedTensorStore.TARGET_HEAD_FILE));
            writeConfig(hfDir.resolve("config.json"), outDir.resolve("config.json"), tied, o, storage);
            return new Result(outDir, storage, total);
        } catch (IOException e) {
            throw new MtpException(MtpException.Kind.MALFORMED_FILE, "convert: cannot write " + outDir + " ("
                    + IoErrors.describe(e) + ")", e);
        }
    }

    private static SafetensorsWriter writer(Path source) {
        return new SafetensorsWriter().metadata("format", "mlx").metadata("converted_from",
                source.toAbsolutePath().getFileName().toString()).metadata("layout", "companion");
    }

    private static void add(SafetensorsWriter w, Map<String, HostTensor> tensors, Options o,
                            Map<String, String> storage, Progress progress, int[] done, int total) {
        for (Map.Entry<String, HostTensor> e : tensors.entrySet()) {
            String name = e.getKey();
            HostTensor t = e.getValue();
            String module = name.endsWith(".weight") && t.rank() == 2
                    ? name.substring(0, name.length() - ".weight".length()) : null;
            Runnable tick = () -> progress.tensorDone(name, ++done[0], total);
            boolean quantize = module != null && o.bits() != 0 && !o.keep().contains(module)
                    && t.dim(1) % o.groupSize() == 0 && t.dtype().isFloating();
            if (module != null) {
                storage.put(module, quantize ? "affine " + o.bits() + "-bit, group " + o.groupSize() : "dense");
            }
            if (!quantize) {
                w.add(name, t.dtype(), t.shape(), out -> {
                    SafetensorsWriter.writeFully(out, t.data().asByteBuffer());
                    tick.run();
                });
                continue;
            }
            int rows = t.dim(0);
            int in = t.dim(1);
            DType sd = t.dtype() == DType.F64 ? DType.F32 : t.dtype();
            int words = in * o.bits() / 32;
            int groups = in / o.groupSize();
            w.add(module + ".weight", DType.U32, new int[] {rows, words}, out -> chunks(t, o, out, 0, null));
            w.add(module + ".scales", sd, new int[] {rows, groups}, out -> chunks(t, o, out, 1, sd));
            w.add(module + ".biases", sd, new int[] {rows, groups}, out -> {
                chunks(t, o, out, 2, sd);
                tick.run();
            });
        }
    }

    /** Quantizes {@code t} chunk by chunk and streams part {@code part} (0 codes, 1 scales, 2 biases). */
    private static void chunks(HostTensor t, Options o, java.nio.channels.WritableByteChannel out, int part,
                               DType dtype) throws IOException {
        int rows = t.dim(0);
        int in = t.dim(1);
        for (int r0 = 0; r0 < rows; r0 += CHUNK_ROWS) {
            int n = Math.min(CHUNK_ROWS, rows - r0);
            float[] v = t.slice0(r0, r0 + n).toFloatArray();
            int[] codes = new int[n * in * o.bits() / 32];
            float[] scales = new float[n * in / o.groupSize()];
            float[] biases = new float[scales.length];
            AffineQuantizer.quantizeRows(v, n, in, o.bits(), o.groupSize(), codes, scales, biases);
            HostTensor chunk = switch (part) {
                case 0 -> HostTensor.view(DType.U32, new int[] {codes.length}, AffineQuantizer.wordsOf(codes));
                case 1 -> HostTensor.ofFloats(dtype, scales, scales.length);
                default -> HostTensor.ofFloats(dtype, biases, biases.length);
            };
            SafetensorsWriter.writeFully(out, chunk.data().asByteBuffer());
        }
    }

    private static void writeConfig(Path in, Path out, boolean tied, Options o, Map<String, String> storage)
            throws IOException {
        JsonNode src = StrictJson.read(in, ModelConfigReader.MAX_CONFIG_BYTES, "config");
        JsonNode text = src.has("text_config") && src.get("text_config").isObject() ? src.get("text_config") : src;
        ObjectMapper json = new ObjectMapper();
        ObjectNode root = json.createObjectNode();
        root.putArray("architectures").add("Qwen3_5MTP");
        root.put("model_type", ModelConfigReader.COMPANION_MODEL_TYPE);
        root.put("tie_word_embeddings", tied);
        text.properties().forEach(e -> {
            if (!e.getKey().equals("model_type") && !e.getKey().equals("architectures")
                    && !e.getKey().equals("tie_word_embeddings") && !e.getKey().startsWith("quantization")) {
                root.set(e.getKey(), e.getValue());
            }
        });
        if (!root.has("vocab_size") && src.has("vocab_size")) {
            root.set("vocab_size", src.get("vocab_size"));
        }
        if (o.bits() != 0) {
            ObjectNode q = root.putObject("quantization");
            q.put("group_size", o.groupSize());
            q.put("bits", o.bits());
            q.put("mode", "affine");
            List<String> dense = new ArrayList<>();
            storage.forEach((m, s) -> {
                if (s.equals("dense")) {
                    dense.add(m);
                }
            });
            dense.forEach(m -> q.put(m, false));
        }
        Files.writeString(out, json.writerWithDefaultPrettyPrinter().writeValueAsString(root) + "\n");
    }
}
