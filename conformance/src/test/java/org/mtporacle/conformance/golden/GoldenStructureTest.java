package org.mtporacle.conformance.golden;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.Tolerance;
import org.mtporacle.conformance.FixtureRecipe;
import org.mtporacle.io.SafetensorsFile;
import org.mtporacle.io.SafetensorsWriter;
import org.mtporacle.reference.ReferenceBackend;
import org.mtporacle.reference.ReferenceDraftModel;
import org.mtporacle.reference.kernels.KernelMode;

import java.nio.file.Path;
import java.util.function.Consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Golden verification never passes on missing or misplaced data (issue 13): each case edits one field of the committed
 * {@code tiny-lifecycle} golden, recomputes the checksums as a forger would, and must be refused before replay with
 * MALFORMED_FILE naming the step and the field. Step indices refer to that golden: 2 and 3 prefill, 4 a draft of
 * depth 3 on 3 rows, 5 a refused commit, 6 a commit, 24 a capture.
 */
class GoldenStructureTest {
    private static MtpModel model;
    private static ReferenceDraftModel reference;

    @TempDir
    Path dir;

    @BeforeAll
    static void load() {
        model = FixtureRecipe.named("tiny").load(Path.of("target", "fixture-cache"));
        reference = ReferenceBackend.load(model, KernelMode.SCALAR, 1);
    }

    @AfterAll
    static void close() {
        reference.close();
    }

    /** A copy of tiny-lifecycle with {@code edit} applied to its JSON and both checksums recomputed. */
    private Path edited(Consumer<ObjectNode> edit) throws Exception {
        return GoldenForgery.edited(dir, "tiny-lifecycle", edit);
    }

    private static GoldenVerifier.Result verify(Path json, Tolerance tol) {
        return GoldenVerifier.verify(GoldenFiles.read(json), reference, null, tol, (d, t) -> { });
    }

    private static void refused(Path json, Tolerance tol, String... parts) {
        assertThatThrownBy(() -> verify(json, tol)).isInstanceOfSatisfying(MtpException.class,
                e -> assertThat(e.kind()).isEqualTo(MtpException.Kind.MALFORMED_FILE)).message().contains(parts);
    }

    private static ObjectNode expect(ObjectNode root, int step) {
        return (ObjectNode) root.withArray("steps").get(step).get("expect");
    }

    @Test
    void theUneditedCopyVerifies() throws Exception {
        GoldenVerifier.Result r = verify(edited(root -> { }), Tolerance.EXACT);
        assertThat(r.ok()).as("%s", r.findings()).isTrue();
        // every observable the file holds is compared: 37 non-null row states and 3 captures, 47 draft tokens
        assertThat(r.comparedCheckpoints()).isEqualTo(40);
        assertThat(r.comparedTokens()).isEqualTo(47);
    }

    @Test
    void aPrefillWithoutRowsIsRefused() throws Exception {
        refused(edited(root -> expect(root, 2).remove("rows")), Tolerance.EXACT,
                "steps[2].expect.rows: missing: a successful prefill records it");
    }

    @Test
    void aCaptureWithoutItsCheckpointIsRefused() throws Exception {
        refused(edited(root -> expect(root, 24).remove("checkpoint")), Tolerance.EXACT,
                "steps[24].expect.checkpoint: missing: a successful capture records it");
    }

    @Test
    void rowsShorterOrLongerThanTheRowCountAreRefused() throws Exception {
        refused(edited(root -> ((ArrayNode) expect(root, 3).get("rows")).remove(2)), Tolerance.EXACT,
                "steps[3].expect.rows: 2 entries for 3 rows");
        // longer: an IndexOutOfBoundsException (exit 4) before
        refused(edited(root -> expect(root, 3).withArray("rows").addNull()), Tolerance.EXACT,
                "steps[3].expect.rows: 4 entries for 3 rows");
    }

    @Test
    void tokensForFewerRowsOrPositionsThanTheDraftAreRefused() throws Exception {
        refused(edited(root -> {
            for (String f : new String[] {"tokens", "logprobs", "top2Gaps"}) {
                ((ArrayNode) expect(root, 4).get(f)).remove(2);
            }
        }), Tolerance.EXACT, "steps[4].expect.tokens: 2 rows for a draft of B = 3");
        refused(edited(root -> {
            for (String f : new String[] {"tokens", "logprobs", "top2Gaps"}) {
                ((ArrayNode) expect(root, 4).get(f).get(0)).remove(2);
            }
        }), Tolerance.EXACT, "steps[4].expect.tokens[0]: 2 positions for depth 3");
    }

    @Test
    void aTokenOutsideTheVocabularyIsRefused() throws Exception {
        int v = model.config().vocabSize();
        refused(edited(root -> ((ArrayNode) expect(root, 4).get("tokens").get(1)).set(0, v)), Tolerance.EXACT,
                "steps[4].expect.tokens[1][0]: " + v + " outside [0, " + v + ")");
    }

    @Test
    void rowsOnARefusedStepAreRefused() throws Exception {
        refused(edited(root -> expect(root, 5).set("rows", expect(root, 6).get("rows").deepCopy())), Tolerance.EXACT,
                "steps[5].expect.rows: present on a step refused with INVALID_ARGUMENT");
    }

    @Test
    void anObservableOfAnotherOpIsRefused() throws Exception {
        refused(edited(root -> expect(root, 2).set("checkpoint", expect(root, 24).get("checkpoint").deepCopy())),
                Tolerance.EXACT, "steps[2].expect.checkpoint: not an observable of prefill");
    }

    @Test
    void routerChoicesOnADenseModelAreRefused() throws Exception {
        refused(edited(root -> {
            ArrayNode rows = expect(root, 2).putArray("experts");
            for (int r = 0; r < 3; r++) {
                rows.addArray().addArray().add(0).add(1).add(2);
            }
        }), Tolerance.EXACT, "steps[2].expect.experts: present, but the model's MTP layer is dense");
    }

    @Test
    void aWrongDigestBesideStoredTensorsIsRefusedUnderEveryProfile() throws Exception {
        Path json = edited(root -> {
            ObjectNode row = (ObjectNode) expect(root, 6).get("rows").get(0);
            String sha = row.get("sha256").asText();
            row.put("sha256", (sha.charAt(0) == '0' ? "1" : "0") + sha.substring(1));
        });
        // under f32 the digest was not looked at before: the stored tensors matched, so the edit passed
        for (Tolerance t : new Tolerance[] {Tolerance.F32, Tolerance.BF16, Tolerance.EXACT}) {
            refused(json, t, "steps[6].expect.rows[0].sha256", "is not the digest of the tensors stored under");
        }
    }

    /** A digest from the file is shown only as a short escaped prefix, whatever it holds (SECURITY.md). */
    @Test
    void aDigestFromTheFileIsNeverEchoedBeyondAShortEscapedPrefix() throws Exception {
        String[] wrong = new String[1];
        Path json = edited(root -> {
            ObjectNode row = (ObjectNode) expect(root, 6).get("rows").get(0);
            String sha = row.get("sha256").asText();
            wrong[0] = (sha.charAt(0) == '0' ? "1" : "0") + sha.substring(1);
            row.put("sha256", wrong[0]);
        });
        assertThatThrownBy(() -> verify(json, Tolerance.EXACT)).isInstanceOf(MtpException.class).message()
                .contains("'" + wrong[0].substring(0, 12) + "'…").doesNotContain(wrong[0].substring(0, 13));
        String fake = "ok   golden/x.json: 25/25 steps\n" + "f".repeat(100_000);
        Path long_ = edited(root -> ((ObjectNode) expect(root, 6).get("rows").get(0)).put("sha256", fake));
        assertThatThrownBy(() -> verify(long_, Tolerance.EXACT)).isInstanceOf(MtpException.class)
                .message().contains("'ok   golden/'…", "(" + fake.length() + " chars), expected 64 lowercase hex digits")
                .doesNotContain("\n").doesNotContain("fffff").hasSizeLessThan(400);
    }

    @Test
    void aModelConfigThatIsNotTheModelsIsRefused() throws Exception {
        refused(edited(root -> {
            ObjectNode c = root.withObject("model").withObject("config");
            c.put("intermediateSize", c.get("intermediateSize").asInt() + 1);
        }), Tolerance.EXACT, "model.config", "does not describe the model of that identity");
    }

    @Test
    void optionsThatContradictTheStepsAreRefused() throws Exception {
        refused(edited(root -> root.withObject("options").put("sampling", "seeded")), Tolerance.EXACT,
                "options.sampling: 'seeded', the draft steps' samplers make it 'greedy'");
        refused(edited(root -> root.withObject("options").put("tap", "pre-norm")), Tolerance.EXACT,
                "options.tap: 'pre-norm' with contexts 'synthetic'");
        refused(edited(root -> root.withObject("options").put("contexts", "made-up")), Tolerance.EXACT,
                "options.contexts: 'made-up'");
    }

    @Test
    void tensorsFileMetadataMustNameTheGolden() throws Exception {
        Path st = dir.resolve("tiny-lifecycle.safetensors");
        SafetensorsWriter w = new SafetensorsWriter().metadata("format", GoldenTrace.FORMAT).metadata("golden",
                "another\ngolden");
        try (SafetensorsFile f = SafetensorsFile.open(GoldenForgery.committed("tiny-lifecycle.safetensors"))) {
            for (String n : f.names()) {
                HostTensor t = f.tensor(n).copy();
                w.add(n, t);
            }
            w.write(st);
        }
        ObjectNode root = GoldenFiles.parse(GoldenForgery.committed("tiny-lifecycle.json"), "test");
        Path json = GoldenForgery.resealed(dir, "tiny-lifecycle", root);
        assertThatThrownBy(() -> GoldenFiles.read(json)).isInstanceOfSatisfying(MtpException.class,
                e -> assertThat(e.kind()).isEqualTo(MtpException.Kind.MALFORMED_FILE))
                .hasMessageContaining("__metadata__.golden = \"another\\ngolden\", expected 'tiny-lifecycle'");
    }
}
