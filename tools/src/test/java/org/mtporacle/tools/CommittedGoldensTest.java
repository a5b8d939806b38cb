package org.mtporacle.tools;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.mtporacle.api.DType;
import org.mtporacle.conformance.golden.GoldenFiles;
import org.mtporacle.conformance.golden.GoldenTrace;
import org.mtporacle.conformance.golden.JsonText;
import org.mtporacle.io.SafetensorsFile;

import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.List;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/** The goldens committed under golden/ verify, and damaged ones fail with a message that says what is wrong. */
class CommittedGoldensTest {
    static Path goldenDir;

    @BeforeAll
    static void locate() {
        goldenDir = Path.of(System.getProperty("mtp.repo.root", "..")).resolve("golden");
        assertThat(goldenDir.resolve("README.md")).as("golden/README.md").isRegularFile();
    }

    static List<Path> goldens() throws Exception {
        try (Stream<Path> s = Files.list(goldenDir)) {
            return s.filter(p -> p.toString().endsWith(".json")).sorted().toList();
        }
    }

    @Test
    void everyCommittedGoldenVerifiesOnTheReference() throws Exception {
        List<Path> files = goldens();
        assertThat(files).extracting(p -> p.getFileName().toString()).contains("tiny-lifecycle.json",
                "tiny-sampling.json", "tiny-q4-lifecycle.json", "small-lifecycle.json", "small-sampling.json",
                "tiny-moe-lifecycle.json", "tiny-moe-q4-lifecycle.json");
        Cli r = Cli.run("golden", "verify", "--quiet", goldenDir.toString());
        assertThat(r.exit()).as(r.out()).isZero();
        assertThat(r.out()).contains(files.size() + " golden trace(s): " + files.size() + " passed");
        // the MoE traces compare the router's choices, the dense ones have none
        assertThat(r.out()).containsPattern("ok   \\S*tiny-moe-lifecycle.json: .*, 98 router choices \\(0 near-ties\\)")
                .containsPattern("ok   \\S*tiny-moe-q4-lifecycle.json: .*, 98 router choices")
                .doesNotContainPattern("tiny-lifecycle.json: .*router");
    }

    /** A recorded expert edited (checksum recomputed) fails the replay at that step, naming row and position. */
    @Test
    void editedExpertWithARecomputedChecksumFailsTheReplay(@TempDir Path tmp) throws Exception {
        Path json = copy("tiny-moe-q4-lifecycle", tmp);
        ObjectNode root = GoldenFiles.parse(json, "test");
        root.remove("contentSha256");
        ArrayNode entry = (ArrayNode) root.withArray("steps").get(3).get("expect").get("experts").get(0).get(1);
        int position = entry.get(0).asInt();
        int changed = (entry.get(1).asInt() + 1) % 8 == entry.get(2).asInt() ? (entry.get(1).asInt() + 2) % 8
                : (entry.get(1).asInt() + 1) % 8;
        entry.set(1, changed);
        root.put("contentSha256", JsonText.canonicalSha256(root));
        Files.writeString(json, JsonText.pretty(root));
        Cli r = Cli.run("golden", "verify", json.toString());
        assertThat(r.exit()).as(r.out()).isEqualTo(MtpCommand.EXIT_FAILED);
        assertThat(r.out()).contains("step 3 (reference): row 0 position " + position + ": the golden has experts [" +
                changed + ", ");
        Cli d = Cli.run("golden", "diff", goldenDir.resolve("tiny-moe-q4-lifecycle.json").toString(), json.toString());
        assertThat(d.exit()).isEqualTo(MtpCommand.EXIT_FAILED);
        assertThat(d.out()).contains("step 3 prefill", "experts row 0");
    }

    @Test
    void committedGoldensStayUnderFiveMegabytes() throws Exception {
        long total;
        try (Stream<Path> s = Files.list(goldenDir)) {
            total = s.mapToLong(p -> p.toFile().length()).sum();
        }
        assertThat(total).isLessThan(5L * 1024 * 1024);
    }

    /** Recomputes every stored digest from the safetensors bytes with the documented rule, independently. */
    @Test
    void recordedDigestsMatchTheStoredTensorsAndTheFileHash() throws Exception {
        int checked = 0;
        for (Path json : goldens()) {
            ObjectNode root = (ObjectNode) new ObjectMapper().readTree(json.toFile());
            if (!root.path("format").asText().equals(GoldenTrace.FORMAT)) {
                continue; // a speculative-run golden holds no tensors (SpeculativeGoldenCliTest)
            }
            Path st = json.resolveSibling(root.path("tensors").path("file").asText());
            assertThat(sha256(Files.readAllBytes(st))).isEqualTo(root.path("tensors").path("sha256").asText());
            try (SafetensorsFile f = SafetensorsFile.open(st)) {
                for (var step : root.withArray("steps")) {
                    var expect = step.path("expect");
                    List<com.fasterxml.jackson.databind.JsonNode> states = new java.util.ArrayList<>();
                    expect.path("rows").forEach(states::add);
                    if (expect.has("checkpoint")) {
                        states.add(expect.get("checkpoint"));
                    }
                    for (var s : states) {
                        if (s.isNull() || !s.has("tensors")) {
                            continue;
                        }
                        MessageDigest md = MessageDigest.getInstance("SHA-256");
                        md.update(("qwen-mtp-v1;P=" + s.get("P").asInt() + ";draftOffset=" + s.get("draftOffset")
                                .asInt() + ";").getBytes(StandardCharsets.UTF_8));
                        for (String t : List.of("keys", "values", "hidden")) {
                            String name = s.get("tensors").asText() + "." + t;
                            if (f.contains(name)) {
                                assertThat(f.tensor(name).dtype()).isEqualTo(DType.F32);
                                md.update(f.tensor(name).data().toArray(ValueLayout.JAVA_BYTE));
                            }
                        }
                        assertThat(HexFormat.of().formatHex(md.digest())).as("%s %s", json, s)
                                .isEqualTo(s.get("sha256").asText());
                        checked++;
                    }
                }
            }
        }
        assertThat(checked).isGreaterThan(50);
    }

    @Test
    void flippedByteInTheTensorsFileFailsWithAChecksumMessage(@TempDir Path tmp) throws Exception {
        Path json = copy("tiny-lifecycle", tmp);
        Path st = tmp.resolve("tiny-lifecycle.safetensors");
        byte[] b = Files.readAllBytes(st);
        b[b.length / 2] ^= 0x01;
        Files.write(st, b);
        Cli r = Cli.run("golden", "verify", json.toString());
        assertThat(r.exit()).isEqualTo(MtpCommand.EXIT_ERROR);
        assertThat(r.out()).contains("tensors.sha256 mismatch", "tiny-lifecycle.safetensors was changed or corrupted");
    }

    @Test
    void editedJsonValueFailsWithAChecksumMessage(@TempDir Path tmp) throws Exception {
        Path json = copy("tiny-sampling", tmp);
        String text = Files.readString(json);
        String edited = text.replaceFirst("\"depth\": 3", "\"depth\": 2");
        assertThat(edited).isNotEqualTo(text);
        Files.writeString(json, edited);
        Cli r = Cli.run("golden", "verify", json.toString());
        assertThat(r.exit()).isEqualTo(MtpCommand.EXIT_ERROR);
        assertThat(r.out()).contains("contentSha256 mismatch, the JSON was changed after it was written");
    }

    /** A forger who also recomputes the checksum is caught by the replay itself. */
    @Test
    void editedTokenWithARecomputedChecksumFailsTheReplay(@TempDir Path tmp) throws Exception {
        Path json = copy("tiny-lifecycle", tmp);
        ObjectNode root = GoldenFiles.parse(json, "test");
        root.remove("contentSha256");
        ArrayNode tokens = null;
        int stepIndex = -1;
        for (int i = 0; i < root.withArray("steps").size(); i++) {
            var s = root.withArray("steps").get(i);
            if (s.path("op").asText().equals("draft") && s.path("expect").has("tokens")
                    && s.path("depth").asInt() >= 3) {
                tokens = (ArrayNode) s.path("expect").path("tokens").get(1);
                stepIndex = i;
                break;
            }
        }
        assertThat(tokens).isNotNull();
        int old = tokens.get(2).asInt();
        tokens.set(2, (old + 1) % 512);
        root.put("contentSha256", JsonText.canonicalSha256(root));
        Files.writeString(json, JsonText.pretty(root));
        Cli r = Cli.run("golden", "verify", json.toString());
        assertThat(r.exit()).as(r.out()).isEqualTo(MtpCommand.EXIT_FAILED);
        assertThat(r.out()).contains("step " + stepIndex + " (reference): row 1 position 2: the golden has "
                + (old + 1) % 512 + ", the reference drafts " + old);
        Cli d = Cli.run("golden", "diff", goldenDir.resolve("tiny-lifecycle.json").toString(), json.toString());
        assertThat(d.exit()).isEqualTo(MtpCommand.EXIT_FAILED);
        assertThat(d.out()).contains("step " + stepIndex + " draft", "tokens row 1", "(first change at position 2)");
    }

    /** A trace that leaves out an observable is malformed (exit 3, step and field named), not a pass. */
    @Test
    void aTraceMissingAnObservableExitsThreeNamingTheStepAndField(@TempDir Path tmp) throws Exception {
        Path json = copy("tiny-lifecycle", tmp);
        ObjectNode root = GoldenFiles.parse(json, "test");
        root.remove("contentSha256");
        ((ObjectNode) root.withArray("steps").get(2).get("expect")).remove("rows");
        root.put("contentSha256", JsonText.canonicalSha256(root));
        Files.writeString(json, JsonText.pretty(root));
        Cli r = Cli.run("golden", "verify", json.toString());
        assertThat(r.exit()).as(r.out()).isEqualTo(MtpCommand.EXIT_ERROR);
        assertThat(r.out()).contains("steps[2].expect.rows: missing: a successful prefill records it");
    }

    @Test
    void verifiesAgainstABackendWithItsTolerance() {
        Cli r = Cli.run("golden", "verify", "--quiet", "--backend", "reference",
                goldenDir.resolve("tiny-sampling.json").toString());
        assertThat(r.exit()).as(r.out()).isZero();
        assertThat(r.out()).contains("tolerance f32");
    }

    @Test
    void inspectSummarisesAGoldenAndItsChecksums() {
        Cli r = Cli.run("inspect", goldenDir.resolve("tiny-q4-lifecycle.json").toString());
        assertThat(r.exit()).isZero();
        assertThat(r.out()).contains("kind: golden trace", "model: fixture tiny-q4", "checksums: valid",
                "capture row 1 as c0");
        GoldenTrace t = GoldenFiles.fromJsonUnchecked(goldenDir.resolve("tiny-q4-lifecycle.json"));
        assertThat(r.out()).contains("modelIdentity: " + t.model().identity());
        Cli moe = Cli.run("inspect", goldenDir.resolve("tiny-moe-lifecycle.json").toString());
        assertThat(moe.out()).contains("routerChoices: 98 recorded");
    }

    private static Path copy(String name, Path tmp) throws Exception {
        Files.copy(goldenDir.resolve(name + ".json"), tmp.resolve(name + ".json"));
        Files.copy(goldenDir.resolve(name + ".safetensors"), tmp.resolve(name + ".safetensors"));
        return tmp.resolve(name + ".json");
    }

    private static String sha256(byte[] b) throws Exception {
        return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(b));
    }
}
