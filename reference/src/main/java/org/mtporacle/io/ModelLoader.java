package org.mtporacle.io;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.mtporacle.api.HostTensor;
import org.mtporacle.api.LinearWeight;
import org.mtporacle.api.MlpWeights;
import org.mtporacle.api.MtpConfig;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.MtpWeights;

/**
 * Loads an MTP model from disk into full-gain {@link MtpWeights} (spec §1.2, §1.6, §2, §11.4). Two layouts:
 * <ul>
 *   <li><b>hf</b>, a raw Hugging Face checkpoint: {@code mtp.*} tensors beside {@code model.language_model.*} (or
 *   {@code model.*}) and {@code lm_head.weight} unless {@code tie_word_embeddings}; zero-centred norms get {@code +1}
 *   in f32, exactly once;</li>
 *   <li><b>companion</b>, config {@code model_type} {@code qwen3_5_mtp}, MTP tensors without prefix and full gains.
 *   The target head comes from {@value ShardedTensorStore#TARGET_HEAD_FILE} beside it ({@code embed_tokens.weight},
 *   optional {@code lm_head.weight}; absent means tied; quantized per the companion's config), or else from a
 *   {@value #TARGET_DIR}/ subdirectory holding the target model (its own {@code config.json} optional).</li>
 * </ul>
 * A linear with {@code <path>.scales} is MLX affine with the spec of its companion-relative module path. Shapes are
 * checked against the config; {@code I} comes from {@code mlp.gate_proj} (for a MoE layer, the experts' width) and
 * {@code V} from the embedding. A MoE MTP layer comes in three layouts ({@link MoeLayout}, spec §12.2).
 */
public final class ModelLoader {
    /** The companion's optional target model subdirectory. */
    public static final String TARGET_DIR = "target";

    private static final List<String> EMBEDDING_NAMES = List.of("model.language_model.embed_tokens.weight",
            "model.embed_tokens.weight", "language_model.model.embed_tokens.weight", "embed_tokens.weight");
    private static final List<String> HEAD_NAMES = List.of("lm_head.weight", "language_model.lm_head.weight");

    private ModelLoader() {
    }

    /** The target's embedding and head, and the files they came from (relative name → path). */
    private record TargetHead(LinearWeight embedding, LinearWeight head, Map<String, Path> files,
                              List<String> warnings) {
    }

    /**
     * Loads the model in directory {@code path} (or the directory of the safetensors file {@code path}, reading only
     * that file).
     *
     * @throws MtpException INCOMPATIBLE_MODEL for a missing config, tensor or quantization spec, a shape mismatch, an
     *                      undeterminable layout, an inconsistent MoE layer (spec §12.2), a NaN or infinite weight
     *                      or finite weights that could overflow the block's f32 arithmetic ({@link BlockBounds});
     *                      MALFORMED_FILE for a
     *                      malformed file
     */
    public static MtpModel load(Path path) {
        if (!Files.exists(path)) {
            throw MtpException.malformedFile("load: " + path + ": no such file or directory");
        }
        boolean isDir = Files.isDirectory(path);
        Path dir = isDir ? path : path.toAbsolutePath().getParent();
        Path configPath = dir.resolve("config.json");
        if (!Files.isRegularFile(configPath)) {
            throw MtpException.incompatibleModel("load: missing config.json in " + dir + " (spec §1.3)");
        }
        ModelConfig cfg = ModelConfigReader.read(configPath);
        TensorStore store = isDir ? ShardedTensorStore.open(dir, true) : SafetensorsFile.open(path, true);
        String layout = detectLayout(cfg, store, dir);
        String prefix = layout.equals("hf") ? "mtp." : "";
        Map<String, HostTensor> mtp = new TreeMap<>();
        for (String name : store.names()) {
            if (name.startsWith(prefix) && (layout.equals("hf") || !isTargetName(name))) {
                mtp.put(name.substring(prefix.length()), store.tensor(name));
            }
        }
        if (layout.equals("hf")) {
            mtp = NormFolding.fold(mtp);
        }
        TargetHead head = layout.equals("hf") ? hfHead(store, cfg, dir) : companionHead(dir, cfg);
        Blocks blocks = new Blocks(mtp, prefix, dir, cfg.quantization());
        MtpWeights weights = assemble(cfg, blocks, head.embedding(), head.head());
        int inter = weights.mlp() instanceof MlpWeights.Moe moe ? moe.expertWidth() : weights.gateProj().outFeatures();
        MtpConfig config = cfg.toMtpConfig(weights.embedding().outFeatures(), inter);
        BlockBounds.require(config, weights, dir);
        List<String> warnings = new ArrayList<>(head.warnings());
        String suspicious = NormFolding.suspiciousNorms(layout, weights);
        if (suspicious != null) {
            warnings.add(suspicious);
        }
        Map<String, Path> files = new TreeMap<>(head.files());
        for (Path f : store.files()) {
            files.put(f.getFileName().toString(), f);
        }
        String identity = identity(cfg.fingerprint(config, weights.mlp()) + ";layout=" + layout, files);
        return new MtpModel(config, weights, identity, path.toString(), layout, warnings);
    }

    /**
     * Builds full-gain weights from companion-relative tensors whose norms are already full gains ({@link
     * NormFolding#fold} applied for the hf layout), checking every shape against {@code cfg} (spec §1.2).
     */
    public static MtpWeights assemble(ModelConfig cfg, Map<String, HostTensor> fullGainTensors,
                                      LinearWeight embedding, LinearWeight head) {
        return assemble(cfg, new Blocks(fullGainTensors, "", null, cfg.quantization()), embedding, head);
    }

    private static MtpWeights assemble(ModelConfig cfg, Blocks b, LinearWeight embedding, LinearWeight head) {
        int h = cfg.hiddenSize();
        int nh = cfg.numHeads();
        int nkv = cfg.numKvHeads();
        int d = cfg.headDim();
        MlpWeights mlp = MoeLayout.isMoe(b.tensors().keySet()) ? MoeLayout.load(cfg, b) : denseMlp(b, h);
        int v = embedding.outFeatures();
        if (cfg.vocabSize() != null && cfg.vocabSize() != v) {
            throw MtpException.incompatibleModel("load: embedding has " + v + " rows, expected vocab_size = "
                    + cfg.vocabSize() + " from config (spec §1.7)");
        }
        checkShape("embedding", embedding, v, h);
        checkShape("head", head, v, h);
        return new MtpWeights(
                b.linear("fc", h, 2 * h),
                b.norm("pre_fc_norm_embedding.weight", h),
                b.norm("pre_fc_norm_hidden.weight", h),
                b.norm("layers.0.input_layernorm.weight", h),
                b.linear("layers.0.self_attn.q_proj", nh * 2 * d, h),
                b.linear("layers.0.self_attn.k_proj", nkv * d, h),
                b.linear("layers.0.self_attn.v_proj", nkv * d, h),
                b.linear("layers.0.self_attn.o_proj", h, nh * d),
                b.norm("layers.0.self_attn.q_norm.weight", d),
                b.norm("layers.0.self_attn.k_norm.weight", d),
                b.norm("layers.0.post_attention_layernorm.weight", h),
                mlp,
                b.norm("norm.weight", h),
                embedding,
                head);
    }

    private static MlpWeights.Dense denseMlp(Blocks b, int h) {
        int inter = b.linear("layers.0.mlp.gate_proj").outFeatures();
        return new MlpWeights.Dense(b.linear("layers.0.mlp.gate_proj", inter, h),
                b.linear("layers.0.mlp.up_proj", inter, h), b.linear("layers.0.mlp.down_proj", h, inter));
    }

    /**
     * Tensors by relative name; messages show the stored name ({@code prefix} + name) and cite {@code section}
     * ({@code "§1.2"} for the MTP block, {@code "§13.1"} for a target layer).
     */
    record Blocks(Map<String, HostTensor> tensors, String prefix, Path dir, QuantizationConfig quant, String section) {
        /** The MTP block's tensors (spec §1.2). */
        Blocks(Map<String, HostTensor> tensors, String prefix, Path dir, QuantizationConfig quant) {
            this(tensors, prefix, dir, quant, "§1.2");
        }

        HostTensor require(String name) {
            HostTensor t = tensors.get(name);
            if (t == null) {
                throw MtpException.incompatibleModel("load: missing tensor '" + prefix + name + "'"
                        + (dir == null ? "" : " in " + dir) + " (spec " + section + ")");
            }
            return t;
        }

        float[] norm(String name, int size) {
            HostTensor t = require(name);
            if (t.rank() != 1 || t.dim(0) != size || !t.dtype().isFloating()) {
                throw MtpException.incompatibleModel("load: tensor '" + prefix + name + "' is " + t.describe()
                        + ", expected a float vector [" + size + "] (spec " + section + ")");
            }
            FiniteWeights.require(prefix + name, t, dir);
            return t.toFloatArray();
        }

        LinearWeight linear(String path, int out, int in) {
            LinearWeight w = linear(path);
            checkShape(prefix + path + ".weight", w, out, in, section);
            return w;
        }

        /** A linear from explicit tensors (a slice of a stacked expert tensor), quantized per {@code path}'s spec. */
        LinearWeight linear(String path, HostTensor weight, HostTensor scales, HostTensor biases) {
            Map<String, HostTensor> one = new TreeMap<>();
            one.put(path + ".weight", weight);
            if (scales != null) {
                one.put(path + ".scales", scales);
            }
            if (biases != null) {
                one.put(path + ".biases", biases);
            }
            return ModelLoader.linear(one::get, path, prefix, dir, quant, section);
        }

        LinearWeight linear(String path) {
            return ModelLoader.linear(tensors::get, path, prefix, dir, quant, section);
        }
    }

    private static LinearWeight linear(java.util.function.Function<String, HostTensor> lookup, String path,
                                       String prefix, Path dir, QuantizationConfig quant) {
        return linear(lookup, path, prefix, dir, quant, "§1.2");
    }

    /**
     * The linear {@code path} ({@code path.weight}, and {@code path.scales}/{@code path.biases} when MLX affine with
     * {@code quant}'s spec for {@code path}), finite; messages show {@code prefix + path} and cite {@code section}.
     */
    static LinearWeight linear(java.util.function.Function<String, HostTensor> lookup, String path,
                               String prefix, Path dir, QuantizationConfig quant, String section) {
        HostTensor weight = lookup.apply(path + ".weight");
        if (weight == null) {
            throw MtpException.incompatibleModel("load: missing tensor '" + prefix + path + ".weight'"
                    + (dir == null ? "" : " in " + dir) + " (spec " + section + ")");
        }
        HostTensor scales = lookup.apply(path + ".scales");
        HostTensor biases = lookup.apply(path + ".biases");
        FiniteWeights.require(prefix + path + ".weight", weight, dir); // codes (integers) pass untouched
        if (scales != null) {
            FiniteWeights.require(prefix + path + ".scales", scales, dir);
        }
        if (scales != null && biases != null) {
            FiniteWeights.require(prefix + path + ".biases", biases, dir);
        }
        try {
            if (scales == null) {
                return new LinearWeight.Dense(weight);
            }
            QuantizationConfig.Spec spec = quant == null ? null : quant.specFor(path);
            if (spec == null) {
                throw MtpException.incompatibleModel("load: linear '" + prefix + path + "' is quantized ('"
                        + prefix + path + ".scales' present) but the config has no quantization spec for '"
                        + ModelConfigReader.stripMtp(path) + "' (spec §2)");
            }
            if (!spec.mode().equals("affine")) {
                throw MtpException.incompatibleModel("load: linear '" + prefix + path + "' uses quantization mode '"
                        + spec.mode() + "', expected 'affine' (spec §2)");
            }
            return new LinearWeight.Affine(weight, scales, biases, spec.bits(), spec.groupSize());
        } catch (MtpException e) {
            if (e.getMessage().startsWith("linear:")) {
                throw MtpException.incompatibleModel("load: '" + prefix + path + "': " + e.getMessage());
            }
            throw e;
        }
    }

    static void checkShape(String name, LinearWeight w, int out, int in) {
        checkShape(name, w, out, in, "§1.2");
    }

    static void checkShape(String name, LinearWeight w, int out, int in, String section) {
        if (w.outFeatures() != out || w.inFeatures() != in) {
            throw MtpException.incompatibleModel("load: tensor '" + name + "' has logical shape [" + w.outFeatures()
                    + ", " + w.inFeatures() + "], expected [" + out + ", " + in + "] (spec " + section + ")");
        }
    }

    private static String detectLayout(ModelConfig cfg, TensorStore store, Path dir) {
        List<String> prefixed = store.names().stream().filter(n -> n.startsWith("mtp.")).toList();
        if (cfg.layout().equals("companion")) {
            if (!prefixed.isEmpty()) {
                throw MtpException.incompatibleModel("load: cannot determine the layout of " + dir + ": config "
                        + "model_type is " + ModelConfigReader.COMPANION_MODEL_TYPE + " (companion, full gains) but "
                        + prefixed.size() + " tensors carry the raw HF 'mtp.' prefix, e.g. '" + prefixed.get(0)
                        + "' (spec §11.4)");
            }
            return "companion";
        }
        if (prefixed.isEmpty()) {
            throw MtpException.incompatibleModel("load: cannot determine the layout of " + dir + ": config model_type "
                    + "is '" + cfg.modelType() + "', not " + ModelConfigReader.COMPANION_MODEL_TYPE
                    + ", and no tensor has the 'mtp.' prefix of a raw HF checkpoint (spec §11.4)");
        }
        return "hf";
    }

    private static boolean isTargetName(String name) {
        return EMBEDDING_NAMES.stream().anyMatch(e -> name.startsWith(e.substring(0, e.length() - ".weight".length())))
                || HEAD_NAMES.stream().anyMatch(e -> name.startsWith(e.substring(0, e.length() - ".weight".length())));
    }

    private static TargetHead hfHead(TensorStore store, ModelConfig cfg, Path dir) {
        return head(store, cfg.tieWordEmbeddings(), cfg.quantization(), dir, "", Map.of());
    }

    private static TargetHead companionHead(Path dir, ModelConfig cfg) {
        Path file = dir.resolve(ShardedTensorStore.TARGET_HEAD_FILE);
        Path target = dir.resolve(TARGET_DIR);
        if (Files.isRegularFile(file)) {
            SafetensorsFile f = SafetensorsFile.open(file, true);
            return head(f, null, cfg.quantization(), dir, "", Map.of(file.getFileName().toString(), file));
        }
        if (Files.isDirectory(target)) {
            Path tc = target.resolve("config.json");
            ModelConfig tcfg = Files.isRegularFile(tc) ? ModelConfigReader.read(tc) : null;
            ShardedTensorStore s = ShardedTensorStore.open(target, true);
            Map<String, Path> files = new TreeMap<>();
            s.files().forEach(p -> files.put(TARGET_DIR + "/" + p.getFileName(), p));
            return head(s, tcfg == null ? null : tcfg.tieWordEmbeddings(),
                    tcfg == null || tcfg.quantization() == null ? cfg.quantization() : tcfg.quantization(),
                    target, TARGET_DIR + "/", files);
        }
        throw MtpException.incompatibleModel("load: companion " + dir + " has no target head: put the target's "
                + "embed_tokens.weight (and lm_head.weight when untied) in " + ShardedTensorStore.TARGET_HEAD_FILE
                + ", or the target model in " + TARGET_DIR + "/ (spec §1.7)");
    }

    private static TargetHead head(TensorStore store, Boolean tie, QuantizationConfig quant, Path dir, String where,
                                   Map<String, Path> files) {
        String embName = EMBEDDING_NAMES.stream().filter(store::contains).findFirst().orElseThrow(() ->
                MtpException.incompatibleModel("load: missing tensor '" + EMBEDDING_NAMES.get(0) + "' (or any of "
                        + EMBEDDING_NAMES.subList(1, EMBEDDING_NAMES.size()) + ") in " + dir + " (spec §1.7)"));
        String headName = HEAD_NAMES.stream().filter(store::contains).findFirst().orElse(null);
        LinearWeight embedding = linear(n -> store.contains(n) ? store.tensor(n) : null,
                strip(embName), where, dir, quant);
        List<String> warnings = new ArrayList<>();
        LinearWeight head;
        if (Boolean.TRUE.equals(tie)) {
            head = embedding;
            if (headName != null) {
                warnings.add("head: tie_word_embeddings is true, so '" + where + headName + "' is ignored and the "
                        + "embedding is the head (spec §1.7)");
            }
        } else if (headName != null) {
            head = linear(n -> store.contains(n) ? store.tensor(n) : null, strip(headName), where, dir, quant);
        } else if (Boolean.FALSE.equals(tie)) {
            throw MtpException.incompatibleModel("load: missing tensor 'lm_head.weight' in " + dir
                    + " (tie_word_embeddings is false, spec §1.7)");
        } else {
            head = embedding;
        }
        return new TargetHead(embedding, head, files, warnings);
    }

    private static String strip(String weightName) {
        return weightName.substring(0, weightName.length() - ".weight".length());
    }

    /**
     * SHA-256 hex over {@code fingerprint} (UTF-8) then, for each file sorted by relative name, the name (UTF-8) and
     * the file's bytes, streamed (spec §6).
     */
    public static String identity(String fingerprint, Map<String, Path> filesByRelativeName) {
        MessageDigest md;
        try {
            md = MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
        md.update(fingerprint.getBytes(StandardCharsets.UTF_8));
        ByteBuffer buf = ByteBuffer.allocateDirect(1 << 22);
        for (Map.Entry<String, Path> e : new TreeMap<>(filesByRelativeName).entrySet()) {
            md.update(e.getKey().getBytes(StandardCharsets.UTF_8));
            try (FileChannel ch = FileChannel.open(e.getValue(), StandardOpenOption.READ)) {
                while (ch.read(buf.clear()) > 0) {
                    md.update(buf.flip());
                }
            } catch (IOException ex) {
                throw new MtpException(MtpException.Kind.MALFORMED_FILE, "identity: cannot read " + e.getValue()
                        + ": " + ex, ex);
            }
        }
        return HexFormat.of().formatHex(md.digest());
    }

    static String describe(int[] shape) {
        return Arrays.toString(shape);
    }
}
