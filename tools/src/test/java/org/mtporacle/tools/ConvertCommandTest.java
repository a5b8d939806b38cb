package org.mtporacle.tools;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.mtporacle.api.DType;
import org.mtporacle.api.LinearWeight;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.MtpWeights;
import org.mtporacle.io.AffineQuantizer;
import org.mtporacle.io.CompanionConverter;
import org.mtporacle.io.ModelLoader;
import org.mtporacle.reference.fixture.FixtureModels;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** {@code mtp convert}: HF fixture → companion that loads to the same weights (dense) or within the quantizer bound. */
class ConvertCommandTest {
    private static final long SEED = 21;

    /**
     * A raw-HF-layout directory whose norms were already folded (a companion's full gains re-saved under the
     * {@code mtp.} names): loading it adds 1 a second time.
     */
    static Path doubleFolded(Path tmp) {
        Path comp = FixtureModels.write("tiny", SEED, tmp.resolve("comp"), FixtureModels.Layout.COMPANION, DType.F32,
                0, 0);
        Path hf = FixtureModels.write("tiny", SEED, tmp.resolve("clean-hf"), FixtureModels.Layout.HF, DType.F32, 0, 0);
        Path bad = tmp.resolve("double-folded");
        org.mtporacle.io.SafetensorsWriter w = new org.mtporacle.io.SafetensorsWriter();
        try (org.mtporacle.io.TensorStore c = org.mtporacle.io.TensorStore.open(comp.resolve("model.safetensors"));
             org.mtporacle.io.TensorStore h = org.mtporacle.io.TensorStore.open(hf.resolve("model.safetensors"))) {
            c.names().forEach(n -> w.add("mtp." + n, c.tensor(n)));
            h.names().stream().filter(n -> !n.startsWith("mtp.")).forEach(n -> w.add(n, h.tensor(n)));
            Files.createDirectories(bad);
            Files.copy(hf.resolve("config.json"), bad.resolve("config.json"));
            w.write(bad.resolve("model.safetensors"));
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
        return bad;
    }

    @Test
    void aSuspiciousFoldStopsConversionUnlessAllowedAndInspectStrictFailsOnIt(@TempDir Path tmp) {
        Path bad = doubleFolded(tmp);
        Cli r = Cli.run("convert", "--from", bad.toString(), "--out", tmp.resolve("out").toString(), "--quiet");
        assertThat(r.exit()).as(r.out()).isEqualTo(MtpCommand.EXIT_ERROR);
        assertThat(r.out()).contains("looks already folded", "pre_fc_norm_hidden", "layers.0.self_attn.q_norm",
                "subtract 1 from each", "give --allow-suspicious-norms");
        assertThat(tmp.resolve("out")).doesNotExist();
        Cli inspect = Cli.run("inspect", bad.toString(), "--strict");
        assertThat(inspect.exit()).as(inspect.out()).isEqualTo(MtpCommand.EXIT_FAILED);
        assertThat(inspect.out()).contains("1 warning (--strict makes a warning a failure)");
        Cli allowed = Cli.run("convert", "--from", bad.toString(), "--out", tmp.resolve("out").toString(), "--quiet",
                "--allow-suspicious-norms");
        assertThat(allowed.exit()).as(allowed.out()).isZero();
        assertThat(Cli.run("inspect", tmp.resolve("clean-hf").toString(), "--strict").exit()).isZero();
    }

    @Test
    void denseConversionLoadsToBitIdenticalWeights(@TempDir Path tmp) {
        Path hf = FixtureModels.write("tiny", SEED, tmp.resolve("hf"), FixtureModels.Layout.HF, DType.BF16, 0, 0);
        Cli r = Cli.run("convert", "--from", hf.toString(), "--out", tmp.resolve("out").toString());
        assertThat(r.exit()).as(r.out()).isZero();
        MtpModel a = ModelLoader.load(hf);
        MtpModel b = ModelLoader.load(tmp.resolve("out"));
        assertThat(b.layout()).isEqualTo("companion");
        assertThat(b.config()).isEqualTo(a.config());
        assertThat(b.warnings()).isEmpty();
        MtpWeights x = a.weights();
        MtpWeights y = b.weights();
        for (int i = 0; i < 2; i++) {
            List<float[]> nx = norms(i == 0 ? x : y);
            if (i == 1) {
                List<float[]> n0 = norms(x);
                for (int k = 0; k < n0.size(); k++) {
                    assertThat(nx.get(k)).as("norm %d", k).containsExactly(n0.get(k));
                }
            }
        }
        List<LinearWeight> lx = linears(x);
        List<LinearWeight> ly = linears(y);
        for (int k = 0; k < lx.size(); k++) {
            assertThat(((LinearWeight.Dense) ly.get(k)).weight().contentEquals(((LinearWeight.Dense) lx.get(k))
                    .weight())).as("linear %d", k).isTrue();
        }
        assertThat(b.identity()).isNotEqualTo(a.identity());
    }

    @Test
    void quantizedConversionIsAcceptedAndWithinTheQuantizerBound(@TempDir Path tmp) throws Exception {
        Path hf = FixtureModels.write("tiny", SEED, tmp.resolve("hf"), FixtureModels.Layout.HF, DType.BF16, 0, 0);
        CompanionConverter.convert(hf, tmp.resolve("dense"), CompanionConverter.Options.dense(), (n, d, t) -> { });
        Cli r = Cli.run("convert", "--from", hf.toString(), "--out", tmp.resolve("q4").toString(), "--quantize", "4",
                "--group-size", "32", "--keep", "layers.0.mlp.down_proj", "--quiet");
        assertThat(r.exit()).as(r.out()).isZero();
        String config = Files.readString(tmp.resolve("q4/config.json"));
        assertThat(config).contains("\"model_type\" : \"qwen3_5_mtp\"", "\"bits\" : 4", "\"group_size\" : 32",
                "\"layers.0.mlp.down_proj\" : false");
        MtpModel dense = ModelLoader.load(tmp.resolve("dense"));
        MtpModel q = ModelLoader.load(tmp.resolve("q4"));
        assertThat(q.identity()).isNotEqualTo(dense.identity());
        assertThat(q.weights().downProj()).isInstanceOf(LinearWeight.Dense.class);
        List<LinearWeight> lx = linears(dense.weights());
        List<LinearWeight> lq = linears(q.weights());
        int quantized = 0;
        for (int k = 0; k < lx.size(); k++) {
            if (lq.get(k) instanceof LinearWeight.Affine aff) {
                withinBound(((LinearWeight.Dense) lx.get(k)).weight().toFloatArray(), aff);
                quantized++;
            }
        }
        assertThat(quantized).isEqualTo(lx.size() - 1);
        assertThat(norms(q.weights()).getFirst()).containsExactly(norms(dense.weights()).getFirst());
    }

    @Test
    void refusesAnInputThatIsNotARawHfCheckpoint(@TempDir Path tmp) {
        Path companion = FixtureModels.write("tiny", SEED, tmp.resolve("c"), FixtureModels.Layout.COMPANION,
                DType.BF16, 0, 0);
        Cli r = Cli.run("convert", "--from", companion.toString(), "--out", tmp.resolve("out").toString());
        assertThat(r.exit()).isEqualTo(MtpCommand.EXIT_ERROR);
        assertThat(r.out()).contains("convert: " + companion + " is already a companion").doesNotContain("at org.");
        assertThatThrownBy(() -> CompanionConverter.convert(tmp, tmp.resolve("x"), CompanionConverter.Options.dense(),
                (n, d, t) -> { })).isInstanceOf(MtpException.class).hasMessageContaining("is not a model directory");
        assertThatThrownBy(() -> CompanionConverter.convert(FixtureModels.write("tiny", SEED, tmp.resolve("h"),
                FixtureModels.Layout.HF, DType.BF16, 0, 0), tmp.resolve("y"),
                new CompanionConverter.Options(4, 32, Set.of("nope")), (n, d, t) -> { }))
                .hasMessageContaining("--keep nope is not a module of this model");
    }

    /** |w − dequant| ≤ scale/2 inside the code range (|scale| at the ends), plus the bf16 rounding of scale and bias. */
    private static void withinBound(float[] w, LinearWeight.Affine a) {
        int in = a.inFeatures();
        for (int o = 0; o < a.outFeatures(); o++) {
            for (int i = 0; i < in; i++) {
                int g = i / a.groupSize();
                float s = a.scales().getFloat((long) o * (in / a.groupSize()) + g);
                float b = a.biases().getFloat((long) o * (in / a.groupSize()) + g);
                int code = AffineQuantizer.code(a.codes(), o, i, a.bits());
                double deq = (double) s * code + b;
                double bound = Math.abs(s) + 0x1p-8 * (Math.abs(s) * code + Math.abs(b));
                assertThat(Math.abs(deq - w[o * in + i])).as("row %d col %d", o, i).isLessThanOrEqualTo(bound);
            }
        }
    }

    private static List<float[]> norms(MtpWeights w) {
        return List.of(w.preFcNormEmbedding(), w.preFcNormHidden(), w.inputNorm(), w.qNorm(), w.kNorm(),
                w.postAttentionNorm(), w.finalNorm());
    }

    private static List<LinearWeight> linears(MtpWeights w) {
        return List.of(w.fc(), w.qProj(), w.kProj(), w.vProj(), w.oProj(), w.gateProj(), w.upProj(), w.downProj(),
                w.embedding(), w.head());
    }
}
