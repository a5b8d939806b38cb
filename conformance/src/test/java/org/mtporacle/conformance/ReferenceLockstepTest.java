package org.mtporacle.conformance;

import org.junit.jupiter.api.Test;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.Tolerance;
import org.mtporacle.conformance.chain.ChainGenerator;
import org.mtporacle.reference.ReferenceBackend;
import org.mtporacle.reference.ReferenceDraftModel;
import org.mtporacle.reference.kernels.KernelMode;

import java.nio.file.Path;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

class ReferenceLockstepTest {
    static Path cache() {
        return Path.of("target", "fixture-cache");
    }

    @Test
    void theReferenceFollowsItselfExactlyOverManyChains() {
        MtpModel model = FixtureRecipe.named("tiny").load(cache());
        try (ReferenceDraftModel oracle = ReferenceBackend.load(model, KernelMode.VECTOR, 1);
             ReferenceDraftModel subject = ReferenceBackend.load(model, KernelMode.VECTOR, 2)) {
            Campaign.Settings s = new Campaign.Settings("tiny", "reference", Map.of(), Tolerance.EXACT, 150, 42, 0, 1,
                    ChainGenerator.Limits.defaults(), null, 200);
            Campaign.Result r = Campaign.run(s, oracle, subject, (d, t, p) -> { });
            assertThat(r.failures()).as("failures: %s", r.failures()).isEmpty();
            assertThat(r.chainsRun()).isEqualTo(150);
            assertThat(r.stats().comparedTokens()).isGreaterThan(500);
            assertThat(r.stats().comparedCheckpoints()).isGreaterThan(500);
            assertThat(r.stats().badCalls()).isGreaterThan(50);
            System.out.printf("reference vs reference: %d chains in %.2f s (%.1f chains/s), %s%n", r.chainsRun(),
                    r.seconds(), r.chainsPerSecond(), r.stats());
        }
    }
}
