package org.mtporacle.conformance.golden;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.mtporacle.api.Tolerance;
import org.mtporacle.conformance.target.lockstep.TargetFixture;
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
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The speculative-run goldens of {@code small-target} (a larger dense target) and {@code tiny-moe-target} (MoE
 * layers in target and drafter): recording the MoE target's again gives the committed files, all verify exactly on the
 * reference (every state by digest),
 * and on the MoE target the MoE mutants that change what a forward computes fail one of them under {@code f32}.
 */
class OtherTargetsSpeculativeGoldenTest {
    private static final Path CACHE = Path.of("target", "fixture-cache");
    private static final List<String> FIXTURES = List.of("small-target", "tiny-moe-target");

    @Test
    void recordingAgainGivesTheCommittedFilesAndTheyVerifyExactlyOnTheReference(@TempDir Path dir)
            throws IOException {
        for (String fixture : FIXTURES) {
            TargetFixture fx = TargetFixture.load(fixture, CACHE);
            try (ReferenceTarget target = new ReferenceTarget(fx.target(), new Kernels(KernelMode.SCALAR, 1));
                 ReferenceDraftModel drafter = ReferenceBackend.load(fx.drafter(), KernelMode.SCALAR, 1)) {
                for (String scenario : SpeculativeGoldens.NAMES) {
                    String name = SpeculativeGoldens.name(fixture, scenario);
                    // re-recording (scalar kernels) is the slow part: the MoE target's, whose recorder also routes,
                    // stands for both; exact verification below guards every file's states by digest
                    Path json = GoldenForgery.committed(name + ".json");
                    if (fixture.equals("tiny-moe-target")) {
                        json = SpeculativeGoldens.record(fx, scenario, dir);
                        assertThat(Files.readString(json)).as("re-recording %s gives the committed file", name)
                                .isEqualTo(Files.readString(GoldenForgery.committed(name + ".json")));
                    }
                    SpeculativeGolden g = SpeculativeGolden.read(GoldenForgery.committed(name + ".json"));
                    int[] acc = SpeculativeGoldens.acceptance(g);
                    assertThat(acc[1] + acc[2]).as("%s: rows accepting drafts", name).isPositive();
                    List<SpeculativeGoldenVerifier.Result> r = SpeculativeGoldenVerifier.verify(g, target, drafter,
                            null, null, null);
                    assertThat(r.getFirst().findings()).as(name).isEmpty();
                    assertThat(r.getFirst().digests()).as("exact: every state by digest").isPositive();
                    System.out.printf("[speculative golden] %s: %d rounds, rows accepting none %d, some %d, all %d, "
                            + "zero-draft %d; %d bytes%n", name, g.rounds().size(), acc[0], acc[1], acc[2], acc[3],
                            Files.size(json));
                }
            }
        }
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(value = TargetMutation.class, names = {"MOE_TOPK_NOT_RENORMALISED", "MOE_SHARED_GATE_MISSING",
            "MOE_EXPERT_WEIGHTS_REVERSED"})
    void aMoeMutantFailsAGoldenOfTheMoeTarget(TargetMutation mutation) {
        TargetFixture fx = TargetFixture.load("tiny-moe-target", CACHE);
        try (ReferenceTarget target = new ReferenceTarget(fx.target(), new Kernels(KernelMode.SCALAR, 1));
             ReferenceDraftModel drafter = ReferenceBackend.load(fx.drafter(), KernelMode.SCALAR, 1);
             SimpleTarget mutant = new SimpleTarget(fx.target(), mutation)) {
            String first = null;
            for (String scenario : SpeculativeGoldens.NAMES) {
                SpeculativeGolden g = SpeculativeGolden.read(GoldenForgery.committed(
                        SpeculativeGoldens.name("tiny-moe-target", scenario) + ".json"));
                List<SpeculativeGoldenVerifier.Result> r = SpeculativeGoldenVerifier.verify(g, target, drafter,
                        mutant, drafter, Tolerance.F32);
                if (!r.getLast().ok()) {
                    first = g.name() + ": " + r.getLast().findings().getFirst();
                    break;
                }
            }
            System.out.println("[speculative golden] " + mutation + ": " + (first == null ? "passes" : first));
            assertThat(first).as("%s fails a tiny-moe-target golden", mutation).isNotNull();
        }
    }
}
