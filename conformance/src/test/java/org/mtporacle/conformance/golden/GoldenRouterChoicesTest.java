package org.mtporacle.conformance.golden;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.mtporacle.api.DraftModel;
import org.mtporacle.api.DraftRows;
import org.mtporacle.api.DraftSampling;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.RouterChoices;
import org.mtporacle.api.RowCheckpoint;
import org.mtporacle.api.Tolerance;
import org.mtporacle.conformance.FixtureRecipe;
import org.mtporacle.conformance.compare.Divergence;
import org.mtporacle.conformance.mutants.Mutation;
import org.mtporacle.conformance.mutants.SimpleBackend;
import org.mtporacle.reference.ReferenceBackend;
import org.mtporacle.reference.ReferenceDraftModel;
import org.mtporacle.reference.ReferenceDraftRows;
import org.mtporacle.reference.kernels.KernelMode;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * MoE goldens record the router's choices and verification checks them (spec §12.5): each case edits the committed
 * {@code tiny-moe-lifecycle} golden (8 experts, top-2), recomputes the checksums as a forger would, and the replay or
 * the structure check must catch it. Step indices refer to that golden: 2 a prefill, 4 a draft of depth 3 on 3 rows
 * (forward rows at positions 8, 9, 10), 5 a refused commit, 6 a commit, 9 a capture.
 */
class GoldenRouterChoicesTest {
    private static final String NAME = "tiny-moe-lifecycle";
    private static MtpModel model;
    private static ReferenceDraftModel reference;

    @TempDir
    Path dir;

    @BeforeAll
    static void load() {
        model = FixtureRecipe.named("tiny-moe").load(Path.of("target", "fixture-cache"));
        reference = ReferenceBackend.load(model, KernelMode.SCALAR, 1);
    }

    @AfterAll
    static void close() {
        reference.close();
    }

    private Path edited(Consumer<ObjectNode> edit) throws Exception {
        return GoldenForgery.edited(dir, NAME, edit);
    }

    private static GoldenVerifier.Result verify(Path json, DraftModel subject, Tolerance tol) {
        return GoldenVerifier.verify(GoldenFiles.read(json), reference, subject, tol, (d, t) -> { });
    }

    private static ArrayNode entry(ObjectNode root, int step, int row, int index) {
        return (ArrayNode) root.withArray("steps").get(step).get("expect").get("experts").get(row).get(index);
    }

    private static ObjectNode expect(ObjectNode root, int step) {
        return (ObjectNode) root.withArray("steps").get(step).get("expect");
    }

    /** An expert of tiny-moe's 8 that {@code entry} does not hold. */
    private static int another(ArrayNode entry) {
        for (int e = 0; e < 8; e++) {
            boolean used = false;
            for (int j = 1; j < entry.size(); j++) {
                used |= entry.get(j).asInt() == e;
            }
            if (!used) {
                return e;
            }
        }
        throw new AssertionError("no free expert in " + entry);
    }

    private static void refused(Path json, String... parts) {
        assertThatThrownBy(() -> verify(json, null, Tolerance.EXACT)).isInstanceOfSatisfying(MtpException.class,
                e -> assertThat(e.kind()).isEqualTo(MtpException.Kind.MALFORMED_FILE)).message().contains(parts);
    }

    @Test
    void everyRecordedChoiceIsComparedAndTheCommittedTraceVerifies() throws Exception {
        int recorded = 0;
        for (JsonNode s : new ObjectMapper().readTree(GoldenForgery.committed(NAME + ".json").toFile()).get("steps")) {
            for (JsonNode row : s.path("expect").path("experts")) {
                recorded += row.size();
            }
        }
        assertThat(recorded).isGreaterThan(50);
        GoldenVerifier.Result r = verify(edited(root -> { }), null, Tolerance.EXACT);
        assertThat(r.ok()).as("%s", r.findings()).isTrue();
        assertThat(r.router().compared()).isEqualTo(recorded);
        assertThat(r.router().nearTies()).isZero();
    }

    @Test
    void aChangedExpertFailsTheReplayAtItsRowAndPosition() throws Exception {
        int[] was = new int[2];
        Path json = edited(root -> {
            ArrayNode e = entry(root, 4, 1, 2);
            was[0] = e.get(0).asInt();
            was[1] = e.get(2).asInt();
            e.set(2, another(e));
        });
        GoldenVerifier.Result r = verify(json, null, Tolerance.F32);
        assertThat(r.ok()).isFalse();
        assertThat(r.findings()).hasSize(1);
        Divergence d = r.findings().getFirst();
        assertThat(d.kind()).isEqualTo(Divergence.Kind.ROUTER_CHOICE);
        assertThat(d.actionIndex()).isEqualTo(4);
        assertThat(d.side()).isEqualTo("reference");
        assertThat(d.message()).startsWith("row 1 position " + was[0] + ": the golden has experts");
        assertThat(was[0]).isEqualTo(10);
    }

    @Test
    void swappedSlotsFailOnlyUnderTheExactProfile() throws Exception {
        Path json = edited(root -> {
            ArrayNode e = entry(root, 4, 0, 0);
            JsonNode first = e.get(1);
            e.set(1, e.get(2));
            e.set(2, first);
        });
        GoldenVerifier.Result exact = verify(json, null, Tolerance.EXACT);
        assertThat(exact.findings()).singleElement().satisfies(d -> {
            assertThat(d.kind()).isEqualTo(Divergence.Kind.ROUTER_CHOICE);
            assertThat(d.message()).contains("row 0 position 8", "the same experts in the same slot order");
        });
        // the set is the same, and with two slots the weighted sum is the same in either order
        GoldenVerifier.Result f32 = verify(json, null, Tolerance.F32);
        assertThat(f32.ok()).as("%s", f32.findings()).isTrue();
    }

    @Test
    void aForwardRowTheGoldenLeavesOutIsAFinding() throws Exception {
        Path json = edited(root -> ((ArrayNode) expect(root, 4).get("experts").get(2)).remove(1));
        GoldenVerifier.Result r = verify(json, null, Tolerance.F32);
        assertThat(r.findings()).singleElement().satisfies(d -> assertThat(d.message())
                .contains("the reference routed row 2 position 9, for which the golden records no experts"));
    }

    @Test
    void aTraceWithoutRouterChoicesStillVerifiesOnItsOutputs() throws Exception {
        Path json = edited(root -> root.withArray("steps").forEach(s -> ((ObjectNode) s.get("expect"))
                .remove("experts")));
        GoldenVerifier.Result r = verify(json, null, Tolerance.EXACT);
        assertThat(r.ok()).as("%s", r.findings()).isTrue();
        assertThat(r.router().compared()).isZero();
    }

    @Test
    void malformedRouterChoicesAreRefusedBeforeReplay() throws Exception {
        refused(edited(root -> expect(root, 2).remove("experts")),
                "steps[2].expect.experts: missing: the trace records router choices");
        refused(edited(root -> entry(root, 4, 0, 0).set(2, entry(root, 4, 0, 0).get(1))),
                "steps[4].expect.experts[0][0]", "chosen twice");
        refused(edited(root -> entry(root, 4, 0, 0).set(2, 8)), "steps[4].expect.experts[0][0]",
                "expert 8 outside [0, 8)");
        refused(edited(root -> entry(root, 4, 0, 0).remove(2)), "steps[4].expect.experts[0][0]",
                "2 values, expected the position and K = 2 experts");
        refused(edited(root -> entry(root, 4, 0, 1).set(0, 8)), "steps[4].expect.experts[0][1]",
                "position 8 after position 8");
        refused(edited(root -> ((ArrayNode) expect(root, 4).get("experts")).remove(2)),
                "steps[4].expect.experts: 2 entries for 3 rows");
        refused(edited(root -> expect(root, 5).set("experts", expect(root, 6).get("experts").deepCopy())),
                "steps[5].expect.experts: present on a step refused with INVALID_ARGUMENT");
        refused(edited(root -> expect(root, 9).set("experts", expect(root, 6).get("experts").deepCopy())),
                "steps[9].expect.experts: not an observable of capture");
    }

    @Test
    void aBackendIsHeldToTheGoldensChoices() throws Exception {
        Path json = edited(root -> { });
        try (SimpleBackend plain = new SimpleBackend(model, Mutation.NONE)) {
            GoldenVerifier.Result r = verify(json, plain, Tolerance.F32);
            assertThat(r.ok()).as("%s", r.findings()).isTrue();
            assertThat(r.router().compared()).isEqualTo(2 * verify(json, null, Tolerance.F32).router().compared());
        }
        GoldenVerifier.Result r = verify(json, new Misreporting(reference, 1, 9), Tolerance.F32);
        assertThat(r.findings()).singleElement().satisfies(d -> {
            assertThat(d.kind()).isEqualTo(Divergence.Kind.ROUTER_CHOICE);
            assertThat(d.side()).isEqualTo("backend");
            assertThat(d.actionIndex()).isEqualTo(4);
            assertThat(d.message()).startsWith("row 1 position 9: the backend chose experts");
        });
    }

    /** The reference's rows, reporting another last expert at one (row, position): outputs right, report wrong. */
    private record Misreporting(ReferenceDraftModel ref, int row, int position) implements DraftModel {
        public MtpModel model() {
            return ref.model();
        }

        public String numerics() {
            return "reference, misreporting one router choice";
        }

        public DraftRows openRows(List<RowCheckpoint> checkpoints) {
            ReferenceDraftRows rows = ref.openReferenceRows(checkpoints);
            return new Rows(rows);
        }

        public void close() {
        }

        private final class Rows implements DraftRows, RouterChoices {
            final ReferenceDraftRows d;

            Rows(ReferenceDraftRows d) {
                this.d = d;
            }

            public List<Choice> lastRouterChoices() {
                List<Choice> out = new ArrayList<>();
                for (Choice c : d.lastRouterChoices()) {
                    int[] e = c.experts();
                    if (c.row() == row && c.position() == position) {
                        ArrayNode a = new ObjectMapper().createArrayNode().add(c.position());
                        for (int x : e) {
                            a.add(x);
                        }
                        e[e.length - 1] = another(a);
                    }
                    out.add(new Choice(c.row(), c.position(), e));
                }
                return out;
            }

            public int rowCount() {
                return d.rowCount();
            }

            public void append(List<RowCheckpoint> checkpoints) {
                d.append(checkpoints);
            }

            public void filterRows(int[] keep) {
                d.filterRows(keep);
            }

            public void prefill(HostTensor tokens, HostTensor context) {
                d.prefill(tokens, context);
            }

            public int[][] draft(int[] pending, int depth, long[] steps, DraftSampling sampling) {
                return d.draft(pending, depth, steps, sampling);
            }

            public void commit(int[] accepted, HostTensor context) {
                d.commit(accepted, context);
            }

            public RowCheckpoint capture(int r) {
                return d.capture(r);
            }

            public boolean isClosed() {
                return d.isClosed();
            }

            public void close() {
                d.close();
            }
        }
    }
}
