package org.mtporacle.conformance.golden;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.Tolerance;
import org.mtporacle.conformance.target.TinyTarget;
import org.mtporacle.conformance.target.mutants.SimpleTarget;
import org.mtporacle.conformance.target.mutants.TargetMutation;
import org.mtporacle.reference.ReferenceBackend;
import org.mtporacle.reference.ReferenceDraftModel;
import org.mtporacle.reference.kernels.KernelMode;
import org.mtporacle.reference.kernels.Kernels;
import org.mtporacle.reference.target.ReferenceTarget;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Speculative-run goldens: the committed ones verify exactly on the reference (scalar) and, held to {@code f32}, on
 * the reference in vector mode and on the standalone {@link SimpleTarget}; a target that does not roll its recurrent
 * state back fails naming the round and the request; an edited or truncated golden is refused before anything runs.
 */
class SpeculativeGoldenTest {
    private static final List<String> COMMITTED = List.of("tiny-target-speculative-keep",
            "tiny-target-speculative-rebuild");
    private static ReferenceTarget scalarTarget;
    private static ReferenceDraftModel scalarDrafter;

    @BeforeAll
    static void load() {
        scalarTarget = new ReferenceTarget(TinyTarget.fixture().target(), new Kernels(KernelMode.SCALAR, 1));
        scalarDrafter = ReferenceBackend.load(TinyTarget.fixture().drafter(), KernelMode.SCALAR, 1);
    }

    @AfterAll
    static void close() {
        scalarTarget.close();
        scalarDrafter.close();
    }

    private static SpeculativeGolden committed(String name) {
        return SpeculativeGolden.read(GoldenForgery.committed(name + ".json"));
    }

    @Test
    void recordingWritesWhatTheCommittedGoldensHold(@TempDir Path dir) throws IOException {
        for (String scenario : SpeculativeGoldens.NAMES) {
            Path json = SpeculativeGoldens.record(TinyTarget.fixture(), scenario, dir);
            SpeculativeGolden g = SpeculativeGolden.read(json);
            int[] acc = SpeculativeGoldens.acceptance(g);
            System.out.printf("[speculative golden] %s: %d rounds, rows accepting none %d, some %d, all %d, "
                    + "zero-draft %d; %d bytes%n", g.name(), g.rounds().size(), acc[0], acc[1], acc[2], acc[3],
                    Files.size(json));
            assertThat(acc[0]).as("rows rejecting every draft").isPositive();
            assertThat(acc[3]).as("zero-draft rows").isPositive();
            assertThat(acc[1] + acc[2]).as("rows accepting drafts").isPositive();
            Path file = GoldenForgery.committed(g.name() + ".json");
            if (Files.exists(file)) {
                assertThat(Files.readString(json)).as("re-recording %s gives the committed file", g.name())
                        .isEqualTo(Files.readString(file));
            }
        }
    }

    @Test
    void theCommittedGoldensVerifyExactlyOnTheReference() {
        for (String name : COMMITTED) {
            List<SpeculativeGoldenVerifier.Result> r = SpeculativeGoldenVerifier.verify(committed(name),
                    scalarTarget, scalarDrafter, null, null, null);
            assertThat(r).hasSize(1);
            assertThat(r.getFirst().findings()).as(name).isEmpty();
            assertThat(r.getFirst().digests()).as("exact: every state by digest").isPositive();
            assertThat(r.getFirst().roundsCompared()).isEqualTo(r.getFirst().rounds());
        }
    }

    @Test
    void theReferenceInVectorModeAndTheStandaloneTargetPassUnderF32() {
        for (String name : COMMITTED) {
            try (ReferenceTarget vectorTarget = TinyTarget.reference();
                 ReferenceDraftModel vectorDrafter = new ReferenceDraftModel(TinyTarget.fixture().drafter(),
                         new Kernels(KernelMode.VECTOR, 1));
                 SimpleTarget simple = new SimpleTarget(TinyTarget.fixture().target(), TargetMutation.NONE)) {
                for (var subject : List.of(vectorTarget, simple)) {
                    List<SpeculativeGoldenVerifier.Result> r = SpeculativeGoldenVerifier.verify(committed(name),
                            scalarTarget, scalarDrafter, subject, vectorDrafter, Tolerance.F32);
                    SpeculativeGoldenVerifier.Result b = r.getLast();
                    assertThat(b.side()).isEqualTo("backend");
                    assertThat(b.findings()).as("%s on %s", name, subject.numerics()).isEmpty();
                    assertThat(b.normStates()).as("f32: states by their norms").isPositive();
                    assertThat(b.digests()).isZero();
                }
            }
        }
    }

    @Test
    void aTargetThatDoesNotRollItsRecurrentStateBackFailsNamingTheRoundAndTheRequest() {
        try (SimpleTarget mutant = new SimpleTarget(TinyTarget.fixture().target(),
                TargetMutation.STATE_NOT_ROLLED_BACK)) {
            for (String name : COMMITTED) {
                List<SpeculativeGoldenVerifier.Result> r = SpeculativeGoldenVerifier.verify(committed(name),
                        scalarTarget, scalarDrafter, mutant, scalarDrafter, Tolerance.F32);
                assertThat(r.getLast().ok()).as(name).isFalse();
                String finding = r.getLast().findings().getFirst();
                System.out.println("[speculative golden] " + name + ", state not rolled back: " + finding);
                assertThat(finding).startsWith("backend: ").containsPattern("round \\d+, request \\d+");
            }
        }
    }

    /**
     * The goldens alone, under {@code f32}, catch the mutants whose bug changes a state's size, a token or P; a
     * transposed state keeps every norm and every token (the engine reads its own orientation back), so only an exact
     * profile's digest or the lockstep's NMSE sees it. The MoE mutants change nothing on the dense {@code tiny-target}
     * these goldens run ({@code OtherTargetsSpeculativeGoldenTest} holds them to the {@code tiny-moe-target} ones).
     */
    @ParameterizedTest(name = "{0}")
    @EnumSource(value = TargetMutation.class, names = {"NONE", "KEEP_REBUILD_MIXED_UP", "TRANSPOSED_STATE", "MOE_.*"},
            mode = EnumSource.Mode.MATCH_NONE)
    void everyTargetMutantThatChangesANormATokenOrPFailsAGolden(TargetMutation mutation) {
        try (SimpleTarget mutant = new SimpleTarget(TinyTarget.fixture().target(), mutation)) {
            String first = null;
            for (String name : COMMITTED) {
                List<SpeculativeGoldenVerifier.Result> r = SpeculativeGoldenVerifier.verify(committed(name),
                        scalarTarget, scalarDrafter, mutant, scalarDrafter, Tolerance.F32);
                if (!r.getLast().ok()) {
                    first = name + ": " + r.getLast().findings().getFirst();
                    break;
                }
            }
            System.out.println("[speculative golden] " + mutation + ": " + (first == null ? "passes" : first));
            assertThat(first).as("%s fails one of %s", mutation, COMMITTED).isNotNull();
        }
    }

    @Test
    void aTransposedStateIsCaughtByDigestUnderAnExactProfile() {
        try (SimpleTarget mutant = new SimpleTarget(TinyTarget.fixture().target(), TargetMutation.TRANSPOSED_STATE)) {
            List<SpeculativeGoldenVerifier.Result> r = SpeculativeGoldenVerifier.verify(committed(COMMITTED.getFirst()),
                    scalarTarget, scalarDrafter, mutant, scalarDrafter, Tolerance.F32);
            System.out.println("[speculative golden] TRANSPOSED_STATE under f32: " + (r.getLast().ok() ? "passes"
                    : r.getLast().findings().getFirst()));
            r = SpeculativeGoldenVerifier.verify(committed(COMMITTED.getFirst()), scalarTarget, scalarDrafter, mutant,
                    scalarDrafter, Tolerance.EXACT);
            assertThat(r.getLast().findings()).singleElement().asString().containsPattern(
                    "round \\d+, request \\d+ .*target state: digest");
        }
    }

    @Test
    void anEditedOrTruncatedGoldenIsRefusedWithOneLine(@TempDir Path dir) throws IOException {
        Path src = GoldenForgery.committed(COMMITTED.getFirst() + ".json");
        String text = Files.readString(src);
        Path edited = dir.resolve("edited.json");
        Files.writeString(edited, text.replaceFirst("\"accepted\": 0", "\"accepted\": 1"));
        assertThatThrownBy(() -> SpeculativeGolden.read(edited)).isInstanceOf(MtpException.class)
                .hasMessageContaining("contentSha256 mismatch").satisfies(e -> assertThat(e.getMessage())
                        .doesNotContain("\n"));
        Path truncated = dir.resolve("truncated.json");
        Files.writeString(truncated, text.substring(0, text.length() / 2));
        assertThatThrownBy(() -> SpeculativeGolden.read(truncated)).isInstanceOf(MtpException.class)
                .satisfies(e -> assertThat(((MtpException) e).kind()).isEqualTo(MtpException.Kind.MALFORMED_FILE))
                .satisfies(e -> assertThat(e.getMessage()).doesNotContain("\n"));
        assertThat(Arrays.asList(text.split("\n")).size()).isGreaterThan(1);
    }
}
