package org.mtporacle.conformance.mutants;

import org.junit.jupiter.api.Test;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.Tolerance;
import org.mtporacle.conformance.Campaign;
import org.mtporacle.conformance.FixtureRecipe;
import org.mtporacle.conformance.chain.ChainGenerator;
import org.mtporacle.conformance.lockstep.ChainOutcome;
import org.mtporacle.conformance.lockstep.Lockstep;
import org.mtporacle.reference.ReferenceBackend;
import org.mtporacle.reference.ReferenceDraftModel;
import org.mtporacle.reference.kernels.KernelMode;

import java.nio.file.Path;

/**
 * A measurement, not part of the suite (run it by name: {@code -Dtest=GainSpreadMeasurement}): how many bf16 chains a
 * q/k norm applied after RoPE survives on the bundled fixtures' 0.1 gain spread and on the wide family's 0.5, and the
 * largest KV NMSE the correct implementation shows on each. Prints one line per fixture.
 */
class GainSpreadMeasurement {
    private static final int CHAINS = Integer.getInteger("chains", 300);

    @Test
    void measure() {
        for (String fixture : new String[] {"tiny", "tiny-wide", "tiny-moe", "tiny-moe-wide"}) {
            MtpModel model = FixtureRecipe.named(fixture).load(Path.of("target", "fixture-cache"));
            try (ReferenceDraftModel oracle = ReferenceBackend.load(model, KernelMode.VECTOR, 1);
                 SimpleBackend mutant = new SimpleBackend(model, Mutation.QK_NORM_AFTER_ROPE)) {
                Lockstep lockstep = new Lockstep(oracle, mutant, Tolerance.BF16);
                ChainGenerator gen = new ChainGenerator(ChainGenerator.Limits.defaults());
                int caught = 0;
                int first = -1;
                String firstMessage = "";
                for (int i = 0; i < CHAINS; i++) {
                    long seed = Campaign.chainSeed(7, fixture, i);
                    ChainOutcome out = lockstep.run(seed, gen.generate(seed));
                    if (!out.passed()) {
                        caught++;
                        if (first < 0) {
                            first = i + 1;
                            firstMessage = out.divergence().message();
                        }
                    }
                }
                System.out.printf("QK_NORM_AFTER_ROPE bf16 on %-14s: %d of %d chains fail (first at chain %d) %s%n",
                        fixture, caught, CHAINS, first, firstMessage);
            }
        }
    }
}
