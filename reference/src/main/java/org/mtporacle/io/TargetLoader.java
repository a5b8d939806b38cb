package org.mtporacle.io;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.AbstractMap;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

import org.mtporacle.api.HostTensor;
import org.mtporacle.api.LinearWeight;
import org.mtporacle.api.MlpWeights;
import org.mtporacle.api.MtpConfig;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.TargetConfig;
import org.mtporacle.api.TargetModel;
import org.mtporacle.api.TargetWeights;

/**
 * Loads the hybrid target of a raw Hugging Face release directory, sharded or not (spec §13.1): the text model's
 * tensors under {@code model.language_model.} (Qwen3.5) or {@code model.} (Qwen3-Next), and {@code lm_head.weight}
 * unless {@code tie_word_embeddings}. The vision tower ({@code model.visual.*}), the MTP head ({@code mtp.*}, which
 * {@link ModelLoader} loads from the same directory) and anything else outside the text model are skipped.
 * <ul>
 *   <li>Every RMSNorm gets its full gain {@code 1 + w} in f32, exactly once; the GDN output norm keeps its plain
 *   gain, {@code A_log} and {@code dt_bias} their values, {@code conv1d.weight [C, 1, K]} becomes {@code [C, K]}.</li>
 *   <li>Qwen3-Next's interleaved {@code in_proj_qkvz} / {@code in_proj_ba} are reordered into the flat
 *   {@code in_proj_qkv/z/b/a} ({@link GdnProjections}), dense or MLX affine alike.</li>
 *   <li>A dense MLP is {@code mlp.{gate,up,down}_proj}; a MoE one is read by {@link MoeLayout} under the layer's
 *   {@code mlp.} path (fused, per-expert or stacked experts).</li>
 *   <li>Linears are dense or MLX affine per the config's quantization block, as for the MTP block; every float
 *   tensor is checked finite ({@link FiniteWeights}).</li>
 *   <li>A tensor under a layer that the layer does not read (a bias, the other mixer's weights, a layer index past
 *   {@code num_hidden_layers}) is an error: the file means a computation the reference would not do. A tensor of the
 *   text model outside its layers that it does not read is a warning.</li>
 * </ul>
 */
public final class TargetLoader {
    private static final String SECTION = "§13.1";

    private TargetLoader() {
    }

    /**
     * Loads the target in directory {@code path} (or the directory of the safetensors file {@code path}, reading
     * only that file).
     *
     * @throws MtpException INCOMPATIBLE_MODEL for a missing or inconsistent config key, a missing, misshapen,
     *                      unknown or non-finite tensor; MALFORMED_FILE for a malformed file
     */
    public static TargetModel load(Path path) {
        if (!Files.exists(path)) {
            throw MtpException.malformedFile("load: " + path + ": no such file or directory");
        }
        boolean isDir = Files.isDirectory(path);
        Path dir = isDir ? path : path.toAbsolutePath().getParent();
        Path configPath = dir.resolve("config.json");
        if (!Files.isRegularFile(configPath)) {
            throw MtpException.incompatibleModel("load: missing config.json in " + dir + " (spec " + SECTION + ")");
        }
        TargetReleaseConfig rc = TargetConfigReader.read(configPath);
        TensorStore store = isDir ? ShardedTensorStore.open(dir, true) : SafetensorsFile.open(path, true);
        Grouped g = group(store, rc, dir);
        List<TargetWeights.Layer> layers = new ArrayList<>();
        for (int i = 0; i < rc.config().layerCount(); i++) {
            layers.add(assembleLayer(rc, g.layers().getOrDefault(i, Map.of()), i, dir));
        }
        List<String> warnings = new ArrayList<>(rc.warnings());
        TargetWeights weights = withHead(rc, g.rest(), store, layers, dir, warnings);
        Map<String, Path> files = new TreeMap<>();
        for (Path f : store.files()) {
            files.put(f.getFileName().toString(), f);
        }
        String identity = ModelLoader.identity(rc.fingerprint() + ";tied=" + weights.tied(), files);
        return new TargetModel(rc.config(), weights, identity, path.toString(), rc.layout(), warnings);
    }

    /** The text model's tensors: per layer, and the rest (embedding, final norm, anything else). */
    private record Grouped(Map<Integer, Map<String, HostTensor>> layers, Map<String, HostTensor> rest) {
    }

    private static Grouped group(TensorStore store, TargetReleaseConfig rc, Path dir) {
        String prefix = rc.tensorPrefix();
        Grouped g = new Grouped(new TreeMap<>(), new TreeMap<>());
        for (String name : store.names()) {
            if (!name.startsWith(prefix) || name.startsWith("model.visual.")) {
                continue; // the vision tower, the MTP head, lm_head (read apart) and anything else
            }
            String local = name.substring(prefix.length());
            if (local.startsWith("layers.")) {
                g.layers().computeIfAbsent(layerIndex(name, local, rc.config().layerCount(), dir),
                        i -> new TreeMap<>()).put(name, store.tensor(name));
            } else {
                g.rest().put(name, store.tensor(name));
            }
        }
        return g;
    }

    /** The weights of {@code layers} with the embedding, the final norm and the head. */
    private static TargetWeights withHead(TargetReleaseConfig rc, Map<String, HostTensor> rest, TensorStore store,
                                          List<TargetWeights.Layer> layers, Path dir, List<String> warnings) {
        String prefix = rc.tensorPrefix();
        Used used = new Used(rest);
        ModelLoader.Blocks b = new ModelLoader.Blocks(used, "", dir, rc.common().quantization(), SECTION);
        MtpConfig s = rc.config().shape();
        LinearWeight embedding = b.linear(prefix + "embed_tokens", s.vocabSize(), s.hiddenSize());
        float[] finalNorm = gain(b, prefix + "norm.weight", s.hiddenSize());
        List<String> ignored = used.keySet().stream().filter(n -> !used.read.contains(n)).toList();
        if (!ignored.isEmpty()) {
            warnings.add("load: " + ignored.size() + " tensor(s) of the text model outside its layers are not read, "
                    + "e.g. '" + ignored.getFirst() + "' (spec " + SECTION + ")");
        }
        return new TargetWeights(embedding, layers, finalNorm, lmHead(store, rc, dir, embedding, warnings));
    }

    private static int layerIndex(String name, String local, int layerCount, Path dir) {
        int dot = local.indexOf('.', "layers.".length());
        String id = dot < 0 ? "" : local.substring("layers.".length(), dot);
        if (id.isEmpty() || id.length() > 6 || !id.chars().allMatch(Character::isDigit)
                || Integer.parseInt(id) >= layerCount) {
            throw MtpException.incompatibleModel("load: unknown tensor '" + name + "' in " + dir + ": not under a "
                    + "layer 0 … " + (layerCount - 1) + " of num_hidden_layers = " + layerCount + " (spec "
                    + SECTION + ")");
        }
        return Integer.parseInt(id);
    }

    /**
     * Builds layer {@code layer} from its tensors by stored name (mapped from a file or built in memory) as
     * {@link #load} does: shapes checked against {@code rc}, norms as full gains, Qwen3-Next projections reordered.
     *
     * @param dir the directory for messages, or null
     * @throws MtpException INCOMPATIBLE_MODEL for a missing, misshapen, non-finite or unread tensor
     */
    public static TargetWeights.Layer assembleLayer(TargetReleaseConfig rc, Map<String, HostTensor> tensors, int layer,
                                                    Path dir) {
        Used used = new Used(tensors);
        TargetWeights.Layer l = layer(rc, new ModelLoader.Blocks(used, "", dir, rc.common().quantization(), SECTION),
                layer);
        for (String name : used.keySet()) {
            if (!used.read.contains(name)) {
                throw MtpException.incompatibleModel("load: unknown tensor '" + name + "'" + (dir == null ? ""
                        : " in " + dir) + ": layer " + layer + " (" + rc.config().layers().get(layer).configName()
                        + ", " + (rc.isMoe(layer) ? "MoE" : "dense") + " MLP) reads no such tensor (spec " + SECTION
                        + ")");
            }
        }
        return l;
    }

    private static TargetWeights.Layer layer(TargetReleaseConfig rc, ModelLoader.Blocks b, int i) {
        TargetConfig c = rc.config();
        int h = c.shape().hiddenSize();
        String p = rc.tensorPrefix() + "layers." + i + ".";
        float[] inputNorm = gain(b, p + "input_layernorm.weight", h);
        TargetWeights.Mixer mixer = c.layers().get(i) == TargetConfig.LayerType.LINEAR_ATTENTION
                ? gdn(rc, b, p + "linear_attn.") : attention(c.shape(), b, p + "self_attn.");
        float[] postNorm = gain(b, p + "post_attention_layernorm.weight", h);
        MlpWeights mlp;
        if (rc.isMoe(i)) {
            mlp = MoeLayout.load(rc.common(), b, p + "mlp.");
        } else {
            int w = rc.denseWidth();
            mlp = new MlpWeights.Dense(b.linear(p + "mlp.gate_proj", w, h), b.linear(p + "mlp.up_proj", w, h),
                    b.linear(p + "mlp.down_proj", h, w));
        }
        return new TargetWeights.Layer(inputNorm, mixer, postNorm, mlp);
    }

    private static TargetWeights.Gdn gdn(TargetReleaseConfig rc, ModelLoader.Blocks b, String p) {
        TargetConfig.Gdn g = rc.config().gdn();
        int h = rc.config().shape().hiddenSize();
        int conv = g.convDim();
        int vd = g.valueDim();
        int hv = g.numValueHeads();
        LinearWeight qkv;
        LinearWeight z;
        LinearWeight beta;
        LinearWeight alpha;
        if (rc.layout().equals(TargetReleaseConfig.QWEN3_NEXT)) {
            LinearWeight qkvz = b.linear(p + "in_proj_qkvz", conv + vd, h);
            LinearWeight ba = b.linear(p + "in_proj_ba", 2 * hv, h);
            int[] rows = GdnProjections.qkvzSourceRows(g);
            int[] baRows = GdnProjections.baSourceRows(g);
            qkv = GdnProjections.rows(qkvz, rows, 0, conv);
            z = GdnProjections.rows(qkvz, rows, conv, conv + vd);
            beta = GdnProjections.rows(ba, baRows, 0, hv);
            alpha = GdnProjections.rows(ba, baRows, hv, 2 * hv);
        } else {
            qkv = b.linear(p + "in_proj_qkv", conv, h);
            z = b.linear(p + "in_proj_z", vd, h);
            beta = b.linear(p + "in_proj_b", hv, h);
            alpha = b.linear(p + "in_proj_a", hv, h);
        }
        return new TargetWeights.Gdn(qkv, z, beta, alpha, conv(b, p + "conv1d.weight", g), b.norm(p + "A_log", hv),
                b.norm(p + "dt_bias", hv), b.norm(p + "norm.weight", g.valueHeadDim()),
                b.linear(p + "out_proj", h, vd));
    }

    private static TargetWeights.Attention attention(MtpConfig s, ModelLoader.Blocks b, String p) {
        int h = s.hiddenSize();
        int d = s.headDim();
        return new TargetWeights.Attention(b.linear(p + "q_proj", s.numHeads() * 2 * d, h),
                b.linear(p + "k_proj", s.numKvHeads() * d, h), b.linear(p + "v_proj", s.numKvHeads() * d, h),
                b.linear(p + "o_proj", h, s.numHeads() * d), gain(b, p + "q_norm.weight", d),
                gain(b, p + "k_norm.weight", d));
    }

    /** The full gain {@code 1 + w} of the zero-centred norm {@code name} (spec §1.6). */
    private static float[] gain(ModelLoader.Blocks b, String name, int size) {
        return NormFolding.fullGain(b.norm(name, size));
    }

    /** {@code conv1d.weight [C, 1, K]} as {@code [C, K]}: the same row-major values. */
    private static float[] conv(ModelLoader.Blocks b, String name, TargetConfig.Gdn g) {
        HostTensor t = b.require(name);
        if (t.rank() != 3 || t.dim(0) != g.convDim() || t.dim(1) != 1 || t.dim(2) != g.convKernel()
                || !t.dtype().isFloating()) {
            throw MtpException.incompatibleModel("load: tensor '" + name + "' is " + t.describe() + ", expected a "
                    + "float tensor [" + g.convDim() + ", 1, " + g.convKernel() + "]"
                    + (b.dir() == null ? "" : " in " + b.dir()) + " (spec " + SECTION + ")");
        }
        FiniteWeights.require(name, t, b.dir());
        return t.toFloatArray();
    }

    /** {@code lm_head.weight}, or the embedding itself when tied (spec §1.7). */
    private static LinearWeight lmHead(TensorStore store, TargetReleaseConfig rc, Path dir, LinearWeight embedding,
                                       List<String> warnings) {
        boolean present = store.contains("lm_head.weight");
        Boolean tie = rc.tieWordEmbeddings();
        if (Boolean.TRUE.equals(tie) || (tie == null && !present)) {
            if (present) {
                warnings.add("head: tie_word_embeddings is true, so 'lm_head.weight' is ignored and the embedding is "
                        + "the head (spec §1.7)");
            }
            return embedding;
        }
        if (!present) {
            throw MtpException.incompatibleModel("load: missing tensor 'lm_head.weight' in " + dir
                    + " (tie_word_embeddings is false, spec " + SECTION + ")");
        }
        MtpConfig s = rc.config().shape();
        Map<String, HostTensor> one = new TreeMap<>();
        for (String n : List.of("lm_head.weight", "lm_head.scales", "lm_head.biases")) {
            if (store.contains(n)) {
                one.put(n, store.tensor(n));
            }
        }
        return new ModelLoader.Blocks(one, "", dir, rc.common().quantization(), SECTION)
                .linear("lm_head", s.vocabSize(), s.hiddenSize());
    }

    /** A read-only tensor map that remembers which names were looked up with {@link #get}. */
    private static final class Used extends AbstractMap<String, HostTensor> {
        private final Map<String, HostTensor> tensors;
        private final Set<String> read = new HashSet<>();

        Used(Map<String, HostTensor> tensors) {
            this.tensors = tensors;
        }

        @Override
        public HostTensor get(Object key) {
            read.add((String) key);
            return tensors.get(key);
        }

        @Override
        public boolean containsKey(Object key) {
            return tensors.containsKey(key);
        }

        @Override
        public Set<Entry<String, HostTensor>> entrySet() {
            return java.util.Collections.unmodifiableMap(tensors).entrySet();
        }
    }
}
