package org.mtporacle.wire;

import org.junit.jupiter.api.Test;
import org.mtporacle.api.DraftModel;
import org.mtporacle.api.LoadedTarget;
import org.mtporacle.api.Tolerance;
import org.mtporacle.conformance.golden.SpeculativeGolden;
import org.mtporacle.conformance.golden.SpeculativeGoldenVerifier;
import org.mtporacle.conformance.target.lockstep.TargetFixture;
import org.mtporacle.reference.ReferenceBackend;
import org.mtporacle.reference.ReferenceDraftModel;
import org.mtporacle.reference.kernels.KernelMode;
import org.mtporacle.reference.kernels.Kernels;
import org.mtporacle.reference.target.ReferenceTarget;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The bundled numpy engine (target and drafter, written from the spec) over {@code exec:} runs the committed
 * speculative-run goldens through the reference's loop and passes them under the {@code f32} profile it claims: every
 * round's drafted, accepted and emitted tokens, P and state norms, every output, and speculative == plain on its own
 * target. Skips, printing why, where python3 or numpy is missing.
 */
class NumpySpeculativeGoldenTest {
    private static final Path GOLDEN = Path.of("..").toAbsolutePath().normalize().resolve("golden");

    @Test
    void theNumpyEngineVerifiesTheCommittedSpeculativeGoldens() {
        NumpyTargetTest.needsPythonAndNumpy();
        ExecBackend b = NumpyTargetTest.numpy();
        Tolerance tol = b.profiles().getFirst().tolerance();
        assertThat(tol.name()).isEqualTo("f32");
        TargetFixture fx = TargetFixture.load("tiny-target", TestEngines.fixtureCache());
        long start = System.nanoTime();
        try (ReferenceTarget refTarget = new ReferenceTarget(fx.target(), new Kernels(KernelMode.SCALAR, 1));
             ReferenceDraftModel refDrafter = ReferenceBackend.load(fx.drafter(), KernelMode.SCALAR, 1);
             LoadedTarget target = b.loadTarget(fx.target(), Map.of());
             DraftModel drafter = b.load(fx.drafter(), Map.of())) {
            for (String name : List.of("tiny-target-speculative-keep", "tiny-target-speculative-rebuild")) {
                SpeculativeGolden g = SpeculativeGolden.read(GOLDEN.resolve(name + ".json"));
                List<SpeculativeGoldenVerifier.Result> r = SpeculativeGoldenVerifier.verify(g, refTarget,
                        refDrafter, target, drafter, tol);
                SpeculativeGoldenVerifier.Result numpy = r.getLast();
                System.out.printf("[numpy speculative golden] %s: %d/%d rounds, %d tokens (%d near-ties), %d states "
                        + "by norm%n", name, numpy.roundsCompared(), numpy.rounds(), numpy.tokens(),
                        numpy.nearTies(), numpy.normStates());
                assertThat(r).hasSize(2);
                assertThat(numpy.findings()).as(name).isEmpty();
                assertThat(numpy.roundsCompared()).isEqualTo(g.rounds().size());
                assertThat(numpy.normStates()).isGreaterThan(10);
            }
        }
        System.out.printf("[numpy speculative golden] both goldens in %d ms%n", (System.nanoTime() - start) / 1_000_000);
    }
}
