package org.mtporacle.conformance.target.lockstep;

import org.mtporacle.api.MtpModel;
import org.mtporacle.api.TargetModel;
import org.mtporacle.conformance.FixtureRecipe;

import java.nio.file.Path;

/**
 * A hybrid-target fixture (a {@code TargetFixtures} preset written as a Qwen3.5 release directory, bf16, cached by its
 * {@link FixtureRecipe}) read back through the real loaders: the target and the MTP head beside it.
 *
 * @param name    the preset
 * @param target  the target
 * @param drafter its MTP head
 */
public record TargetFixture(String name, TargetModel target, MtpModel drafter) {
    /** The seed every target fixture is written with: the recipe's ({@link FixtureRecipe#TARGET_SEED}). */
    public static final long SEED = FixtureRecipe.TARGET_SEED;

    /**
     * Loads preset {@code name} through its {@link FixtureRecipe} (writing it under {@code cache} first when absent):
     * the very release that {@code --contexts target} and {@code mtp replay} read.
     */
    public static TargetFixture load(String name, Path cache) {
        FixtureRecipe r = FixtureRecipe.named(name);
        if (!r.hasTarget() || r.bits() != 0 || r.seed() != SEED) {
            throw new IllegalArgumentException("target fixture " + name + ": not a dense target recipe of seed "
                    + SEED);
        }
        return new TargetFixture(name, r.loadTarget(cache), r.load(cache));
    }
}
