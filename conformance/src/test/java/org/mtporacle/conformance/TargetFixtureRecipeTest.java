package org.mtporacle.conformance;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.mtporacle.api.LinearWeight;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.TargetModel;
import org.mtporacle.conformance.chain.ContextSource;

import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The fixture recipes with a hybrid target: one release loads as target and drafter; a -q4 converts the drafter. */
class TargetFixtureRecipeTest {
    private static final Path CACHE = Path.of("target", "fixture-cache");

    /**
     * The recipe's release is the one the target tests and {@code mtp conform --target} run on (TargetFixture), and
     * the one TargetFixtures writes with the target seed, read through the loaders: one tiny-target for every command.
     */
    @org.junit.jupiter.api.io.TempDir
    Path tmp;

    @Test
    void theTinyTargetRecipeIsTheTargetFixtureAndTheReleaseOfTheTargetSeed() {
        FixtureRecipe fx = FixtureRecipe.named("tiny-target");
        var tf = org.mtporacle.conformance.target.lockstep.TargetFixture.load("tiny-target", CACHE);
        Path written = org.mtporacle.reference.fixture.TargetFixtures.write("tiny-target", 20261201L,
                tmp.resolve("release"), org.mtporacle.api.DType.BF16);
        String identity = org.mtporacle.io.TargetLoader.load(written).identity();
        assertThat(fx.loadTarget(CACHE).identity()).isEqualTo(identity).isEqualTo(tf.target().identity());
        assertThat(fx.load(CACHE).identity()).isEqualTo(org.mtporacle.io.ModelLoader.load(written).identity())
                .isEqualTo(tf.drafter().identity());
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"tiny-target", "tiny-target-q4", "small-target", "small-target-q4", "tiny-moe-target",
            "tiny-moe-target-q4"})
    void aTargetRecipeLoadsATargetWhoseTapsFitItsDrafter(String name) {
        FixtureRecipe fx = FixtureRecipe.named(name);
        assertThat(fx.hasTarget()).isTrue();
        MtpModel drafter = fx.load(CACHE);
        TargetModel target = fx.loadTarget(CACHE);
        assertThat(target.config().shape().hiddenSize()).isEqualTo(drafter.config().hiddenSize());
        assertThat(target.config().shape().vocabSize()).isEqualTo(drafter.config().vocabSize());
        boolean quantized = drafter.weights().qProj() instanceof LinearWeight.Affine;
        assertThat(quantized).as("%s drafter quantized", name).isEqualTo(fx.bits() != 0);
        assertThat(target.weights().layers().getFirst().mlp()).isNotNull();
        assertThat(fx.describe()).contains("hybrid target + MTP head");
        // loading again reads the cache: the same identities
        assertThat(fx.load(CACHE).identity()).isEqualTo(drafter.identity());
        assertThat(fx.loadTarget(CACHE).identity()).isEqualTo(target.identity());
    }

    @Test
    void theTargetListsNameOnlyRecipesThatHaveOne() {
        List<String> with = FixtureRecipe.withTarget();
        assertThat(with).containsAll(FixtureRecipe.TARGETS).contains("tiny-target-q4");
        assertThat(Stream.concat(FixtureRecipe.BUNDLED.stream(), FixtureRecipe.EXTRA.stream())
                .filter(r -> !with.contains(r.name()))).noneMatch(FixtureRecipe::hasTarget).isNotEmpty();
        assertThat(FixtureRecipe.BUNDLED).noneMatch(FixtureRecipe::hasTarget);
    }

    @Test
    void targetContextsOnAFixtureWithoutATargetAreRefusedNamingIt() {
        FixtureRecipe tiny = FixtureRecipe.named("tiny");
        assertThatThrownBy(() -> tiny.loadTarget(CACHE)).isInstanceOfSatisfying(MtpException.class,
                e -> assertThat(e.kind()).isEqualTo(MtpException.Kind.INVALID_ARGUMENT))
                .hasMessageStartingWith("fixture tiny has no target (fixtures with one: tiny-target, ");
        assertThatThrownBy(() -> Conform.checkContexts(List.of(FixtureRecipe.named("tiny-target"), tiny),
                ContextSource.of("target", "pre"))).hasMessageStartingWith("--contexts target: fixture tiny has no "
                + "target (fixtures with one: tiny-target, ");
        Conform.checkContexts(List.of(tiny), ContextSource.SYNTHETIC);
    }
}
