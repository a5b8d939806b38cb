package org.mtporacle.tools;

import com.fasterxml.jackson.databind.node.ObjectNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.mtporacle.conformance.golden.JsonText;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code mtp golden verify} and {@code diff} on the committed speculative-run goldens: they pass on the reference (by
 * digest) and held to a backend's profile (by norms); an edited, truncated or re-sealed golden fails as it should.
 */
class SpeculativeGoldenCliTest {
    private static final Path GOLDEN = Path.of(System.getProperty("mtp.repo.root", "..")).resolve("golden");
    private static final String KEEP = "tiny-target-speculative-keep";

    private static Path copy(Path dir) throws Exception {
        Path p = dir.resolve(KEEP + ".json");
        Files.copy(GOLDEN.resolve(KEEP + ".json"), p);
        return p;
    }

    @Test
    void bothVerifyOnTheReferenceAndAgainstTheReferenceBackend() {
        Cli r = Cli.run("golden", "verify", "--quiet", "--backend", "reference", GOLDEN.resolve(KEEP + ".json")
                .toString(), GOLDEN.resolve("tiny-target-speculative-rebuild.json").toString());
        assertThat(r.exit()).as(r.out()).isZero();
        assertThat(r.out()).containsPattern("ok   \\S*tiny-target-speculative-keep.json: a whole speculative run "
                        + "\\(tap post, kv keep, 4 requests\\)")
                .containsPattern("reference: 8/8 rounds, \\d+ tokens \\(0 near-ties\\), states \\d+ by digest, "
                        + "tolerance exact")
                .containsPattern("backend: 8/8 rounds, .*states \\d+ by P and tensor norms.*tolerance f32")
                .contains("2 golden trace(s): 2 passed");
    }

    @Test
    void anEditedOrTruncatedGoldenExitsThreeWithOneLine(@TempDir Path tmp) throws Exception {
        Path json = copy(tmp);
        String text = Files.readString(json);
        Files.writeString(json, text.replaceFirst("\"maxTokens\": 14", "\"maxTokens\": 15"));
        Cli r = Cli.run("golden", "verify", json.toString());
        assertThat(r.exit()).isEqualTo(MtpCommand.EXIT_ERROR);
        assertThat(r.out()).containsPattern("BAD  \\S+: golden \\S+: contentSha256 mismatch, the JSON was changed "
                + "after it was written[^\\n]*\\n[^\\n]*0 passed, 0 failed, 1 malformed");
        Files.writeString(json, text.substring(0, text.length() / 3));
        r = Cli.run("golden", "verify", json.toString());
        assertThat(r.exit()).isEqualTo(MtpCommand.EXIT_ERROR);
        assertThat(r.out().lines().filter(l -> l.startsWith("BAD")).count()).isEqualTo(1);
        assertThat(r.out()).doesNotContain("Exception", "\tat ");
    }

    /** A re-sealed token outside the vocabulary is malformed (exit 3, field named), never an index error. */
    @Test
    void aResealedTokenOutsideTheVocabularyExitsThreeNamingTheField(@TempDir Path tmp) throws Exception {
        Path json = copy(tmp);
        ObjectNode root = (ObjectNode) new com.fasterxml.jackson.databind.ObjectMapper().readTree(json.toFile());
        root.remove("contentSha256");
        ((com.fasterxml.jackson.databind.node.ArrayNode) root.withArray("outputs").get(1)).set(3, 99_999);
        root.put("contentSha256", JsonText.canonicalSha256(root));
        Files.writeString(json, JsonText.pretty(root));
        Cli r = Cli.run("golden", "verify", "--backend", "reference", json.toString());
        assertThat(r.exit()).as(r.out()).isEqualTo(MtpCommand.EXIT_ERROR);
        assertThat(r.out()).contains("outputs[1] holds token 99999, outside the vocabulary [0, ")
                .doesNotContain("Exception");
    }

    /** A forger who re-seals the file is caught by the run: the round and the request are named; diff shows it. */
    @Test
    void aResealedDigestFailsNamingTheRoundAndRequestAndDiffShowsIt(@TempDir Path tmp) throws Exception {
        Path json = copy(tmp);
        ObjectNode root = (ObjectNode) new com.fasterxml.jackson.databind.ObjectMapper().readTree(json.toFile());
        root.remove("contentSha256");
        ObjectNode state = (ObjectNode) root.withArray("rounds").get(2).get("rows").get(0).get("target");
        String sha = state.get("sha256").asText();
        state.put("sha256", (sha.charAt(0) == '0' ? "1" : "0") + sha.substring(1));
        int round = root.withArray("rounds").get(2).get("round").asInt();
        int request = root.withArray("rounds").get(2).get("rows").get(0).get("request").asInt();
        root.put("contentSha256", JsonText.canonicalSha256(root));
        Files.writeString(json, JsonText.pretty(root));
        Cli r = Cli.run("golden", "verify", json.toString());
        assertThat(r.exit()).as(r.out()).isEqualTo(MtpCommand.EXIT_FAILED);
        assertThat(r.out()).contains("reference: round " + round + ", request " + request + " (row 0, tap post, kv "
                + "keep): target state: digest ");
        Cli d = Cli.run("golden", "diff", GOLDEN.resolve(KEEP + ".json").toString(), json.toString());
        assertThat(d.exit()).isEqualTo(MtpCommand.EXIT_FAILED);
        assertThat(d.out()).contains("round " + round + ":", "rows[0].target.sha256: \"" + sha + "\"");
        Cli two = Cli.run("golden", "diff", GOLDEN.resolve(KEEP + ".json").toString(),
                GOLDEN.resolve("tiny-target-speculative-rebuild.json").toString());
        assertThat(two.exit()).isEqualTo(MtpCommand.EXIT_FAILED);
        assertThat(two.out()).contains("options.kvPolicy: \"keep\" → \"rebuild\"", "options.tap: \"post\" → \"pre\"");
    }
}
