package org.mtporacle.tools;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.Arrays;
import java.util.stream.Collectors;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;
import org.mtporacle.io.SafetensorsFile;

/**
 * {@code mtp spec} on the external transformers reference's tiny release checkpoint: its tokens and accepted counts
 * per round are the ones transformers' own classes computed (not the reference's), for a tap and policy pair; its
 * text report says so plainly; bad arguments name themselves.
 */
class SpecCommandTest {
    private static final Path DATA = Path.of(System.getProperty("mtp.repo.root", ".."))
            .resolve("reference/src/test/data/qwen35-target-transformers/float32");

    @Test
    void reproducesTheExternalSpeculativeRunAsJson() throws Exception {
        try (SafetensorsFile x = SafetensorsFile.open(DATA.resolve("inputs-and-expected.safetensors"))) {
            int[] prompt = x.tensor("row1_prompt").toIntArray();
            Cli r = Cli.run("spec", "--model", DATA.toString(), "--prompt", Arrays.stream(prompt)
                    .mapToObj(Integer::toString).collect(Collectors.joining(",")), "--tokens", "24", "--depth", "3",
                    "--tap", "pre", "--kv", "rebuild", "--json");
            assertThat(r.exit()).as(r.out()).isZero();
            JsonNode j = new ObjectMapper().readTree(r.out());
            assertThat(ints(j.get("speculative"))).containsExactly(x.tensor("mtp_pre_rebuild_row1_emitted").toIntArray());
            assertThat(ints(j.get("plain"))).containsExactly(x.tensor("row1_greedy").toIntArray());
            assertThat(ints(j.get("acceptedPerRound")))
                    .containsExactly(x.tensor("mtp_pre_rebuild_row1_round_accepted").toIntArray());
            assertThat(j.get("speculativeEqualsPlain").asBoolean()).isTrue();
            assertThat(j.get("tap").asText()).isEqualTo("pre");
            assertThat(j.get("kvPolicy").asText()).isEqualTo("rebuild");
        }
    }

    @Test
    void textReportStatesTheVerdictAndTheCounters() {
        Cli r = Cli.run("spec", "--model", DATA.toString(), "--random-prompt", "5", "--tokens", "12", "--depth", "0");
        assertThat(r.exit()).as(r.out()).isZero();
        assertThat(r.out()).contains("speculative == plain: yes, all 12 tokens", "run: depth 0, tap post, drafter KV keep",
                "rounds 11, drafts 0, draft tokens 0, accepted 0");
    }

    @Test
    void savesTheTargetStateThatInspectReadsAndRefusesToOverwriteIt(@org.junit.jupiter.api.io.TempDir Path dir) {
        Path file = dir.resolve("state.safetensors");
        Cli r = Cli.run("spec", "--model", DATA.toString(), "--prompt", "3,4", "--tokens", "5", "--save-state",
                file.toString());
        assertThat(r.exit()).as(r.out()).isZero();
        Cli i = Cli.run("inspect", file.toString());
        assertThat(i.exit()).as(i.out()).isZero();
        assertThat(i.out()).contains("kind: target checkpoint", "recurrentStates: F32[3, 4, 16, 16]",
                "recordedDigest: matches");
        Cli again = Cli.run("spec", "--model", DATA.toString(), "--prompt", "3,4", "--tokens", "5", "--save-state",
                file.toString());
        assertThat(again.exit()).isEqualTo(MtpCommand.EXIT_ERROR);
        assertThat(again.out()).contains("already exists (give --force to overwrite it)");
    }

    @Test
    void aPromptIdOutsideTheVocabularyIsAUsageError() {
        Cli r = Cli.run("spec", "--model", DATA.toString(), "--prompt", "1,512");
        assertThat(r.exit()).isEqualTo(MtpCommand.EXIT_USAGE);
        assertThat(r.out()).contains("--prompt: token 512 at index 1 is outside [0, 512)");
    }

    private static int[] ints(JsonNode a) {
        int[] out = new int[a.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = a.get(i).asInt();
        }
        return out;
    }
}
