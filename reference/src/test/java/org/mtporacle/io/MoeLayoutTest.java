package org.mtporacle.io;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.function.BiConsumer;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import org.mtporacle.api.DType;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.LinearWeight;
import org.mtporacle.api.MlpWeights;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.MtpModel;
import org.mtporacle.reference.kernels.Kernels;

/**
 * The three MoE expert layouts (spec §12.2) load to the same experts: the external reference's fused tensors, the
 * same bytes written per expert, and stacked as MLX's {@code switch_mlp}; quantized per expert and stacked; and bad
 * layouts are refused with the tensor named.
 */
class MoeLayoutTest {
    private static final Path FUSED = Path.of("src/test/data/qwen35-moe-mtp-transformers/float32");
    private static final String MLP = "mtp.layers.0.mlp.";

    @TempDir
    Path tmp;

    /** Rewrites the fused set into {@code dst} with {@code edit} deciding the tensors; config optionally replaced. */
    private static Path rewrite(Path dst, String config, BiConsumer<TensorStore, SafetensorsWriter> edit)
            throws IOException {
        Files.createDirectories(dst);
        Files.writeString(dst.resolve("config.json"), config != null ? config
                : Files.readString(FUSED.resolve("config.json")));
        SafetensorsWriter w = new SafetensorsWriter();
        try (TensorStore s = TensorStore.open(FUSED.resolve("model.safetensors"))) {
            edit.accept(s, w);
            w.write(dst.resolve("model.safetensors"));
        }
        return dst;
    }

    private static boolean fused(String n) {
        return n.equals(MLP + "experts.gate_up_proj") || n.equals(MLP + "experts.down_proj");
    }

    /** Expert {@code e}'s [gate, up, down] as 2-D tensors, read from the fused tensors by plain slicing. */
    private static HostTensor[] expert(TensorStore s, int e) {
        HostTensor gu = s.tensor(MLP + "experts.gate_up_proj");
        HostTensor down = s.tensor(MLP + "experts.down_proj");
        int i = down.dim(2);
        HostTensor g = gu.slice0(e, e + 1).reshape(2 * i, gu.dim(2));
        return new HostTensor[] {g.slice0(0, i).copy(), g.slice0(i, 2 * i).copy(),
                down.slice0(e, e + 1).reshape(down.dim(1), i).copy()};
    }

    private static MlpWeights.Moe moe(MtpModel m) {
        return (MlpWeights.Moe) m.weights().mlp();
    }

    private static void assertSameDense(MlpWeights.Dense a, MlpWeights.Dense b, String what) {
        assertThat(((LinearWeight.Dense) a.gateProj()).weight().contentEquals(((LinearWeight.Dense) b.gateProj()).weight()))
                .as(what + " gate").isTrue();
        assertThat(((LinearWeight.Dense) a.upProj()).weight().contentEquals(((LinearWeight.Dense) b.upProj()).weight()))
                .as(what + " up").isTrue();
        assertThat(((LinearWeight.Dense) a.downProj()).weight().contentEquals(((LinearWeight.Dense) b.downProj()).weight()))
                .as(what + " down").isTrue();
    }

    @Test
    void fusedPerExpertAndStackedLayoutsLoadToTheSameExperts() throws IOException {
        MtpModel fused = ModelLoader.load(FUSED);
        Path perExpert = rewrite(tmp.resolve("per-expert"), null, (s, w) -> {
            s.names().stream().filter(n -> !fused(n)).forEach(n -> w.add(n, s.tensor(n)));
            for (int e = 0; e < 8; e++) {
                HostTensor[] x = expert(s, e);
                w.add(MLP + "experts." + e + ".gate_proj.weight", x[0]);
                w.add(MLP + "experts." + e + ".up_proj.weight", x[1]);
                w.add(MLP + "experts." + e + ".down_proj.weight", x[2]);
            }
        });
        Path stacked = rewrite(tmp.resolve("stacked"), null, (s, w) -> {
            s.names().stream().filter(n -> !fused(n)).forEach(n -> w.add(n, s.tensor(n)));
            String[] proj = {"gate_proj", "up_proj", "down_proj"};
            for (int p = 0; p < 3; p++) {
                List<HostTensor> parts = new java.util.ArrayList<>();
                for (int e = 0; e < 8; e++) {
                    parts.add(expert(s, e)[p]);
                }
                w.add(MLP + "switch_mlp." + proj[p] + ".weight", stack(parts));
            }
        });
        assertThat(MoeLayout.kind(Set.of("layers.0.mlp.experts.gate_up_proj"))).isEqualTo(MoeLayout.Kind.FUSED);
        for (Path dir : List.of(perExpert, stacked)) {
            MtpModel m = ModelLoader.load(dir);
            assertThat(moe(m).numExperts()).isEqualTo(8);
            assertThat(moe(m).topK()).isEqualTo(2);
            assertThat(moe(m).normTopK()).isTrue();
            for (int e = 0; e < 8; e++) {
                assertSameDense(moe(m).experts().get(e), moe(fused).experts().get(e), dir.getFileName() + " " + e);
            }
            assertThat(m.config().intermediateSize()).isEqualTo(32);
        }
    }

    private static HostTensor stack(List<HostTensor> parts) {
        HostTensor first = parts.getFirst();
        int[] shape = {parts.size(), first.dim(0), first.dim(1)};
        java.lang.foreign.MemorySegment seg = java.lang.foreign.Arena.ofAuto().allocate(first.byteSize() * parts.size());
        for (int i = 0; i < parts.size(); i++) {
            seg.asSlice(i * first.byteSize(), first.byteSize()).copyFrom(parts.get(i).data());
        }
        return HostTensor.view(first.dtype(), shape, seg);
    }

    @Test
    void fourBitStackedExpertsAreQuantizedPerExpertWithTheModuleSpec() throws IOException {
        String config = Files.readString(FUSED.resolve("config.json")).replaceFirst("\\{",
                "{\n  \"quantization\": {\"bits\": 4, \"group_size\": 32},");
        Path dir = rewrite(tmp.resolve("q4"), config, (s, w) -> {
            s.names().stream().filter(n -> !fused(n)).forEach(n -> w.add(n, s.tensor(n)));
            String[] proj = {"gate_proj", "up_proj", "down_proj"};
            for (int p = 0; p < 3; p++) {
                List<HostTensor> codes = new java.util.ArrayList<>();
                List<HostTensor> scales = new java.util.ArrayList<>();
                List<HostTensor> biases = new java.util.ArrayList<>();
                for (int e = 0; e < 8; e++) {
                    LinearWeight.Affine q = AffineQuantizer.quantize(expert(s, e)[p], 4, 32);
                    codes.add(q.codes());
                    scales.add(q.scales());
                    biases.add(q.biases());
                }
                w.add(MLP + "switch_mlp." + proj[p] + ".weight", stack(codes));
                w.add(MLP + "switch_mlp." + proj[p] + ".scales", stack(scales));
                w.add(MLP + "switch_mlp." + proj[p] + ".biases", stack(biases));
            }
        });
        MtpModel m = ModelLoader.load(dir);
        try (TensorStore s = TensorStore.open(FUSED.resolve("model.safetensors"))) {
            for (int e = 0; e < 8; e++) {
                LinearWeight.Affine want = AffineQuantizer.quantize(expert(s, e)[2], 4, 32);
                LinearWeight.Affine got = (LinearWeight.Affine) moe(m).experts().get(e).downProj();
                assertThat(got.codes().contentEquals(want.codes()) && got.scales().contentEquals(want.scales())
                        && got.biases().contentEquals(want.biases())).as("expert %d down_proj", e).isTrue();
                assertThat(got.bits()).isEqualTo(4);
            }
        }
        assertThat(moe(m).router()).as("router without .scales stays dense").isInstanceOf(LinearWeight.Dense.class);
        assertThat(Kernels.offHeap(m.weights()).isMoe()).isTrue();
    }

    @Test
    void convertWritesFusedExpertsPerExpertQuantizesEachAndKeepsTheRouterDense() throws IOException {
        // the external set's hf directory lacks nothing convert needs: config, mtp.*, embed_tokens, lm_head
        CompanionConverter.Result r = CompanionConverter.convert(FUSED, tmp.resolve("c4"),
                new CompanionConverter.Options(4, 32, Set.of()), (n, d, t) -> { });
        assertThat(r.modules()).containsEntry("layers.0.mlp.experts.7.up_proj", "affine 4-bit, group 32")
                .containsEntry("layers.0.mlp.gate", "dense").containsEntry("layers.0.mlp.shared_expert_gate", "dense");
        MtpModel m = ModelLoader.load(r.out());
        assertThat(m.layout()).isEqualTo("companion");
        assertThat(moe(m).experts().get(3).gateProj()).isInstanceOf(LinearWeight.Affine.class);
        assertThat(moe(m).router()).isInstanceOf(LinearWeight.Dense.class);
        MtpModel dense = ModelLoader.load(CompanionConverter.convert(FUSED, tmp.resolve("c0"),
                CompanionConverter.Options.dense(), (n, d, t) -> { }).out());
        assertSameDense(moe(dense).experts().get(5), moe(ModelLoader.load(FUSED)).experts().get(5), "dense convert");
    }

    private static void assertRefused(Path dir, String... parts) {
        assertThatThrownBy(() -> ModelLoader.load(dir)).isInstanceOfSatisfying(MtpException.class, e -> {
            assertThat(e.kind()).isEqualTo(MtpException.Kind.INCOMPATIBLE_MODEL);
            assertThat(e.getMessage()).contains(parts);
        });
    }

    @Test
    void inconsistentMoeLayersAreRefusedNamingWhatIsWrong() throws IOException {
        String cfg = Files.readString(FUSED.resolve("config.json"));
        BiConsumer<TensorStore, SafetensorsWriter> copy = (s, w) -> s.names().forEach(n -> w.add(n, s.tensor(n)));
        assertRefused(rewrite(tmp.resolve("k"), cfg.replace("\"num_experts_per_tok\": 2,", ""), copy),
                "no num_experts_per_tok", "§12.1");
        assertRefused(rewrite(tmp.resolve("e"), cfg.replace("\"num_experts\": 8,", "\"num_experts\": 16,"), copy),
                "8 experts stored (fused), expected num_experts = 16");
        assertRefused(rewrite(tmp.resolve("i"), cfg.replace("\"moe_intermediate_size\": 32",
                "\"moe_intermediate_size\": 64"), copy), "experts are 32 wide, expected moe_intermediate_size = 64");
        assertRefused(rewrite(tmp.resolve("top"), cfg.replace("\"num_experts_per_tok\": 2",
                "\"num_experts_per_tok\": 9"), copy), "num_experts_per_tok = 9 outside [1, 8]");
        assertRefused(rewrite(tmp.resolve("mixed"), null, (s, w) -> {
            copy.accept(s, w);
            w.add(MLP + "experts.0.gate_proj.weight", expert(s, 0)[0]);
        }), "mixes expert layouts");
        assertRefused(rewrite(tmp.resolve("gap"), null, (s, w) -> {
            s.names().stream().filter(n -> !fused(n)).forEach(n -> w.add(n, s.tensor(n)));
            for (int e : new int[] {0, 1, 3}) {
                HostTensor[] x = expert(s, e);
                w.add(MLP + "experts." + e + ".gate_proj.weight", x[0]);
                w.add(MLP + "experts." + e + ".up_proj.weight", x[1]);
                w.add(MLP + "experts." + e + ".down_proj.weight", x[2]);
            }
        }), "expert indices run 0 … 3 over 3 experts");
        assertRefused(rewrite(tmp.resolve("nogate"), null, (s, w) -> s.names().stream()
                .filter(n -> !n.equals(MLP + "shared_expert_gate.weight")).forEach(n -> w.add(n, s.tensor(n)))),
                "missing tensor 'mtp.layers.0.mlp.shared_expert_gate.weight'");
        assertRefused(rewrite(tmp.resolve("shape"), null, (s, w) -> s.names().forEach(n -> w.add(n,
                n.equals(MLP + "experts.down_proj") ? HostTensor.ofFloats(new float[8 * 64 * 16], 8, 64, 16)
                        : s.tensor(n)))), "fused experts", "expected [E, 2I, 64] and [E, 64, I]");
    }
}
