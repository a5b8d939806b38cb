package org.mtporacle.wire;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.mtporacle.api.DraftModel;
import org.mtporacle.api.LoadedTarget;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.TargetModel;
import org.mtporacle.conformance.target.chain.TargetChainGenerator;
import org.mtporacle.conformance.target.lockstep.TargetCampaign;
import org.mtporacle.conformance.target.lockstep.TargetFixture;
import org.mtporacle.conformance.target.lockstep.TargetLockstep;
import org.mtporacle.conformance.target.lockstep.TargetTolerance;
import org.mtporacle.conformance.target.tck.TargetBackendVerification;
import org.mtporacle.reference.ReferenceBackend;
import org.mtporacle.reference.target.ReferenceTarget;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The bundled numpy engine's hybrid target ({@code adapters/python/examples/numpy_mtp/target.py}, written from the
 * spec, sharing no code with the Java skeleton) over {@code exec:}: the target TCK (its §13.5 loop chains with the
 * engine's own drafter), and target campaigns in lockstep
 * with the reference on the dense and the MoE tiny targets under the {@code f32} profile it claims. Skips, printing
 * why, where python3 or numpy is missing.
 */
class NumpyTargetTest {
    private static final Path ROOT = Path.of("..").toAbsolutePath().normalize();
    private static final Path NUMPY = ROOT.resolve("adapters/python/examples/numpy_backend.py");

    static void needsPythonAndNumpy() {
        String why = null;
        if (!Files.isRegularFile(NUMPY)) {
            why = "adapters/python is not in this checkout (" + NUMPY + ")";
        } else {
            try {
                Process p = new ProcessBuilder("python3", "-c", "import sys, numpy; assert sys.version_info >= (3, 10)")
                        .redirectErrorStream(true).start();
                String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
                if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
                    why = "python3 ≥ 3.10 with numpy is not usable here: " + out;
                }
            } catch (IOException | InterruptedException e) {
                why = "python3 is not installed (" + e.getMessage() + ")";
            }
        }
        if (why != null) {
            System.out.println("[numpy target] skipped: " + why);
        }
        Assumptions.assumeTrue(why == null, why);
    }

    static ExecBackend numpy() {
        return new ExecBackend("python3 '" + NUMPY + "'", Duration.ofSeconds(120));
    }

    private static TargetCampaign.Result campaign(String fixture, int chains, long seed) {
        needsPythonAndNumpy();
        ExecBackend b = numpy();
        assertThat(b.supportsTarget()).as("the numpy engine claims the target capability").isTrue();
        TargetTolerance tol = TargetTolerance.of(b.profiles().getFirst().tolerance());
        assertThat(tol.name()).isEqualTo("f32");
        TargetModel model = TargetFixture.load(fixture, TestEngines.fixtureCache()).target();
        try (ReferenceTarget oracle = new ReferenceBackend().loadTarget(model, Map.of());
             LoadedTarget subject = b.loadTarget(model, Map.of())) {
            TargetCampaign.Result r = TargetCampaign.run(new TargetCampaign.Settings(fixture, b.name(), chains, seed,
                    TargetChainGenerator.Limits.defaults(), null, 200), new TargetLockstep(oracle, subject, tol));
            System.out.printf("[numpy target] %s: %d chains, %d tokens (%d near-ties), %d states, max output NMSE "
                            + "%.3g, max state NMSE %.3g, %d bad calls%n", fixture, r.chainsRun(),
                    r.counts().comparedTokens(), r.counts().nearTies(), r.counts().comparedStates(),
                    r.counts().maxOutputNmse(), r.counts().maxStateNmse(), r.badCalls());
            assertThat(r.failure()).as("%s", r.failure()).isNull();
            return r;
        }
    }

    @Test
    void theNumpyTargetFollowsTheReferenceOnTheTinyTarget() {
        TargetCampaign.Result r = campaign("tiny-target", 6, 41);
        assertThat(r.counts().comparedTokens()).isGreaterThan(50);
        assertThat(r.counts().comparedStates()).isGreaterThan(12);
        assertThat(r.badCalls()).isPositive();
    }

    @Test
    void andOnTheMoeTinyTarget() {
        TargetCampaign.Result r = campaign("tiny-moe-target", 2, 42);
        assertThat(r.counts().comparedTokens()).isGreaterThan(10);
    }

    /** The target TCK (every rule of {@code TargetBackendRules}) against the numpy engine over the wire. */
    @Nested
    class TargetTck extends TargetBackendVerification {
        @Override
        protected LoadedTarget createTarget(TargetModel model) {
            needsPythonAndNumpy();
            return numpy().loadTarget(model, Map.of());
        }

        /** The engine's drafter too, so §13.5's loop chains run the numpy target and drafter together. */
        @Override
        protected DraftModel createDrafter(MtpModel model) {
            return numpy().load(model, Map.of());
        }

        @Override
        protected int lockstepChains() {
            return 4;
        }

        @Override
        protected int loopChains() {
            return 3;
        }

        @Override
        protected Path fixtureCache() {
            return TestEngines.fixtureCache();
        }
    }
}
