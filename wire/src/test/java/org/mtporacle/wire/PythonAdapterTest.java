package org.mtporacle.wire;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.mtporacle.api.DraftModel;
import org.mtporacle.api.MtpModel;
import org.mtporacle.conformance.Campaign;
import org.mtporacle.conformance.FixtureRecipe;
import org.mtporacle.conformance.chain.ChainGenerator;
import org.mtporacle.conformance.lockstep.ChainOutcome;
import org.mtporacle.conformance.lockstep.Lockstep;
import org.mtporacle.api.Tolerance;
import org.mtporacle.reference.ReferenceBackend;
import org.mtporacle.reference.ReferenceDraftModel;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The second, independent implementation through the protocol: {@code adapters/python}'s own tests, then its numpy
 * backend (written from the spec) in lockstep with the reference over {@code exec:}, and its deliberately broken copy
 * caught with a shrunk chain. Skips, printing why, where python3 or numpy is missing.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class PythonAdapterTest {
    private static final Path ROOT = Path.of("..").toAbsolutePath().normalize();
    private static final Path NUMPY = ROOT.resolve("adapters/python/examples/numpy_backend.py");
    private static final Path BROKEN = ROOT.resolve("adapters/python/examples/broken_numpy_backend.py");

    @BeforeAll
    void needsPythonAndNumpy() {
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
            System.out.println("[python adapter] skipped: " + why);
        }
        Assumptions.assumeTrue(why == null, why);
    }

    private static String exec(Path script) {
        return "python3 '" + script + "'";
    }

    @Test
    void thePythonSdkAndBackendTestsPass() throws Exception {
        Process p = new ProcessBuilder("python3", ROOT.resolve("adapters/python/tests/run.py").toString())
                .directory(ROOT.toFile()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(300, TimeUnit.SECONDS)).isTrue();
        System.out.println("[python adapter] " + out.lines().reduce((a, b) -> b).orElse(""));
        assertThat(p.exitValue()).as("adapters/python/tests/run.py output:%n%s", out).isZero();
    }

    private ChainOutcome.Stats lockstep(String fixture, int chains, long seed) {
        ExecBackend b = new ExecBackend(exec(NUMPY), Duration.ofSeconds(120));
        Tolerance tol = b.profiles().getFirst().tolerance();
        assertThat(tol.name()).isEqualTo("f32");
        MtpModel model = FixtureRecipe.named(fixture).load(TestEngines.fixtureCache());
        ChainGenerator gen = new ChainGenerator(ChainGenerator.Limits.defaults());
        ChainOutcome.Stats stats = ChainOutcome.Stats.NONE;
        try (ReferenceDraftModel oracle = ReferenceBackend.load(model, ReferenceBackend.configuredMode(), 1);
             DraftModel subject = b.load(model, Map.of())) {
            Lockstep l = new Lockstep(oracle, subject, tol);
            for (int i = 0; i < chains; i++) {
                long s = Campaign.chainSeed(seed, i);
                ChainOutcome out = l.run(s, gen.generate(s));
                assertThat(out.passed()).as("%s chain %d: %s", fixture, i, out.divergence()).isTrue();
                stats = stats.plus(out.stats());
            }
        }
        return stats;
    }

    @Test
    void theNumpyBackendFollowsTheReferenceThroughTheWireOnTinyAndTinyQ4() {
        ChainOutcome.Stats s = lockstep("tiny", 12, 5);
        assertThat(s.comparedTokens()).isGreaterThan(20);
        assertThat(s.badCalls()).isGreaterThan(0);
        assertThat(lockstep("tiny-q4", 4, 6).comparedCheckpoints()).isGreaterThan(3);
    }

    @Test
    void theNumpyBackendFollowsTheReferenceOnTheMoeFixturesAndItsExpertChoicesAreCompared() {
        ChainOutcome.Stats s = lockstep("tiny-moe", 4, 7);
        assertThat(s.router().compared()).as("expert choices compared (WIRE.md §5 experts)").isGreaterThan(20);
        assertThat(s.comparedTokens()).isGreaterThan(5);
        assertThat(lockstep("tiny-moe-q4", 2, 8).router().compared()).isGreaterThan(5);
    }

    @Test
    void theBrokenCopyIsCaughtAndShrunkToAFewActions() {
        ExecBackend b = new ExecBackend(exec(BROKEN), Duration.ofSeconds(120));
        MtpModel model = FixtureRecipe.named("tiny").load(TestEngines.fixtureCache());
        ChainGenerator.Limits d = ChainGenerator.Limits.defaults();
        Campaign.Settings settings = new Campaign.Settings("tiny", b.name(), Map.of(), Tolerance.F32, 6, 3, 0, 1, d,
                null, 200);
        try (ReferenceDraftModel oracle = ReferenceBackend.load(model, ReferenceBackend.configuredMode(), 1);
             DraftModel subject = b.load(model, Map.of())) {
            Campaign.Result r = Campaign.run(settings, oracle, subject, (done, total, passed) -> { });
            assertThat(r.failures()).as("the broken copy must fail some chain").isNotEmpty();
            Campaign.Failure f = r.failures().getFirst();
            assertThat(f.divergence().category().name()).isEqualTo("CHECKPOINT");
            assertThat(f.shrunk().size()).as("shrunk chain %s", f.shrunk()).isLessThanOrEqualTo(6)
                    .isLessThan(f.originalLength() + 1);
            assertThat(List.copyOf(f.shrunk()).toString()).contains("Commit");
        }
    }
}
