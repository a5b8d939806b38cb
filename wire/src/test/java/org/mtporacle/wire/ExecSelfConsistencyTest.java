package org.mtporacle.wire;

import org.junit.jupiter.api.AfterAll;
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

import java.time.Duration;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The reference behind the wire ({@code exec:} of a JVM serving it) against the reference in process, chain for
 * chain, held to {@code exact}: every draft token, every checkpoint byte and every error kind of generated chains —
 * bad calls included — must be identical, which they can only be if the protocol carries every argument and every
 * reply without loss and the runner adds no checks of its own.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class ExecSelfConsistencyTest {
    private ExecBackend backend;

    @BeforeAll
    void start() {
        backend = new ExecBackend(TestEngines.javaCommand(ReferenceWireMain.class), Duration.ofSeconds(60));
    }

    @AfterAll
    void stop() {
        // each DraftModel shuts its process down; nothing else is running
    }

    private ChainOutcome.Stats campaign(String fixture, int chains, long seed) {
        MtpModel model = FixtureRecipe.named(fixture).load(TestEngines.fixtureCache());
        ChainGenerator gen = new ChainGenerator(ChainGenerator.Limits.defaults());
        ChainOutcome.Stats stats = ChainOutcome.Stats.NONE;
        try (ReferenceDraftModel oracle = ReferenceBackend.load(model, ReferenceBackend.configuredMode(), 1);
             DraftModel subject = backend.load(model, Map.of())) {
            assertThat(subject.numerics()).startsWith("f32 (");
            Lockstep lockstep = new Lockstep(oracle, subject, Tolerance.EXACT);
            for (int i = 0; i < chains; i++) {
                long chainSeed = Campaign.chainSeed(seed, i);
                ChainOutcome out = lockstep.run(chainSeed, gen.generate(chainSeed));
                assertThat(out.passed()).as("chain %d (seed %x) on %s: %s", i, chainSeed, fixture,
                        out.divergence()).isTrue();
                stats = stats.plus(out.stats());
            }
        }
        return stats;
    }

    @Test
    void theReferenceOverTheWireIsBitIdenticalToTheReferenceInProcessOnTiny() {
        ChainOutcome.Stats s = campaign("tiny", 10, 1);
        assertThat(s.comparedTokens()).as("draft tokens compared").isGreaterThan(20);
        assertThat(s.comparedCheckpoints()).as("checkpoints compared").isGreaterThan(20);
        assertThat(s.badCalls()).as("bad calls sent through the wire").isGreaterThan(0);
        assertThat(s.maxKvNmse()).isZero();
        assertThat(s.nearTies()).isZero();
    }

    @Test
    void andOnTheQuantizedTinyFixture() {
        ChainOutcome.Stats s = campaign("tiny-q4", 3, 2);
        assertThat(s.comparedCheckpoints()).isGreaterThan(2);
        assertThat(s.maxHiddenNmse()).isZero();
    }

    @Test
    void andOnTheMoeFixtureWhoseRouterChoicesCrossTheWire() {
        ChainOutcome.Stats s = campaign("tiny-moe", 3, 3);
        assertThat(s.router().compared()).as("expert choices compared (WIRE.md §5 experts)").isGreaterThan(20);
        assertThat(s.router().nearTies()).isZero();
        assertThat(s.maxKvNmse()).isZero();
    }

    @Test
    void theHandshakeCarriesTheReferencesProfile() {
        assertThat(backend.availability().available()).isTrue();
        assertThat(backend.profiles()).singleElement().satisfies(p -> {
            assertThat(p.label()).isEqualTo("reference@wire");
            assertThat(p.tolerance()).isEqualTo(Tolerance.EXACT);
        });
        assertThat(backend.description()).contains("mtp-oracle reference").contains("mtp-oracle-wire/1");
    }
}
