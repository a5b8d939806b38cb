package org.mtporacle.io;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import org.mtporacle.api.DType;
import org.mtporacle.reference.fixture.FixtureModels;

class ModelInspectorTest {
    @TempDir
    Path tmp;

    @Test
    void modelReportNamesLayoutNormsQuantizationAndCountsParameters() throws Exception {
        Path m = FixtureModels.write("tiny", 3, tmp.resolve("m"), FixtureModels.Layout.HF, DType.BF16, 4, 32);
        ModelInspector.Report r = ModelInspector.inspect(m);
        assertThat(r.layout()).isEqualTo("hf");
        assertThat(r.normConvention()).startsWith("zero-centred");
        assertThat(r.quantization()).contains("4-bit, group 32");
        // H=64, nH=4, nKV=2, D=16, I=128: fc 64·128 + q 128·64 + k,v 32·64 each + o 64·64 + 3 MLP 128·64
        // + norms 5·64 + 2·16
        long expected = 64 * 128 + 128 * 64 + 2 * 32 * 64 + 64 * 64 + 3 * 128 * 64 + 5 * 64 + 2 * 16;
        assertThat(r.mtpParameters()).isEqualTo(expected);
        assertThat(r.targetParameters()).isEqualTo(2L * 512 * 64); // untied: embedding + head
        assertThat(r.toText()).contains("layout: hf", "mtp.fc.scales", "U32");
        JsonNode json = SafetensorsFile.JSON.readTree(r.toJson());
        assertThat(json.get("config").get("hiddenSize").intValue()).isEqualTo(64);
        assertThat(json.get("tensors").size()).isEqualTo(r.tensors().size());
    }

    @Test
    void moeFixturesInEveryLayoutShowExpertsTopKAndPerExpertQuantization() throws Exception {
        // tiny-moe: H=64, E=8, K=2, expert I=32, shared I=32
        long moeParams = 8 * 64 + 8 * 3 * 32 * 64 + 3 * 32 * 64 + 64;
        long attention = 64 * 128 + 128 * 64 + 2 * 32 * 64 + 64 * 64 + 5 * 64 + 2 * 16;
        Object[][] cases = {
                {FixtureModels.Layout.HF, 0, "fused", "dense BF16"},
                {FixtureModels.Layout.HF, 4, "per-expert", "affine 4-bit, group 32"},
                {FixtureModels.Layout.COMPANION, 4, "stacked", "affine 4-bit, group 32"},
                {FixtureModels.Layout.COMPANION, 0, "stacked", "dense BF16"}};
        for (Object[] c : cases) {
            Path m = FixtureModels.write("tiny-moe", 3, tmp.resolve("moe-" + c[0] + c[1]),
                    (FixtureModels.Layout) c[0], DType.BF16, (Integer) c[1], 32);
            ModelInspector.Report r = ModelInspector.inspect(m);
            ModelInspector.MlpSummary mlp = r.mlp();
            assertThat(mlp.kind()).isEqualTo("moe");
            assertThat(mlp.expertLayout()).as("%s", c[0]).isEqualTo(c[2]);
            assertThat(mlp.experts()).isEqualTo(8);
            assertThat(mlp.topK()).isEqualTo(2);
            assertThat(mlp.width()).isEqualTo(32);
            assertThat(mlp.sharedWidth()).isEqualTo(32);
            assertThat(mlp.expertStorage()).as("%s", c[0]).containsExactly(java.util.Map.entry((String) c[3], 24));
            assertThat(mlp.routerStorage()).isEqualTo("dense BF16");
            assertThat(r.mtpParameters()).isEqualTo(attention + moeParams);
            assertThat(r.toText()).contains("mlp: moe, 8 experts (" + c[2] + "), top-2 renormalised",
                    "experts: {" + c[3] + "=24}");
            assertThat(SafetensorsFile.JSON.readTree(r.toJson()).get("mlp").get("topK").intValue()).isEqualTo(2);
        }
    }

    @Test
    void loneSafetensorsFileReportListsTensorsOnly() {
        Path m = FixtureModels.write("tiny", 3, tmp.resolve("c"), FixtureModels.Layout.COMPANION, DType.F32, 0, 32);
        ModelInspector.Report r = ModelInspector.inspectFile(m.resolve("target_head.safetensors"));
        assertThat(r.kind()).isEqualTo("safetensors");
        assertThat(r.tensors()).extracting(ModelInspector.TensorRow::name)
                .containsExactly("embed_tokens.weight", "lm_head.weight");
        assertThat(r.metadata()).containsEntry("mtp_oracle_fixture", "tiny");
        assertThat(r.bytesByDtype()).containsEntry("F32", 2L * 512 * 64 * 4);
    }
}
