package org.mtporacle.conformance;

import org.mtporacle.api.DType;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.TargetModel;
import org.mtporacle.io.CompanionConverter;
import org.mtporacle.io.ModelLoader;
import org.mtporacle.io.TargetLoader;
import org.mtporacle.reference.fixture.FixtureModels;
import org.mtporacle.reference.fixture.TargetFixtures;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

/**
 * A fixture model described by its recipe (preset, seed, layout, dtype, quantization): small enough to regenerate in
 * a second, so the repository bundles recipes, not weights. {@link #load} writes the model through the real file
 * format (cached) and reads it back through the real loader.
 *
 * <p>A recipe of a hybrid-target preset ({@link TargetFixtures}, spec §13) also has a target ({@link #hasTarget}):
 * one Qwen3.5 release directory that {@link #loadTarget} reads as the target and {@link #load} as the drafter; a
 * quantized one converts that release's MTP head into a quantized companion directory ({@link CompanionConverter}),
 * the target staying dense, as an engine serving a quantized drafter beside its target does.
 */
public record FixtureRecipe(String name, String preset, long seed, FixtureModels.Layout layout, DType dtype, int bits,
                            int groupSize) {

    /** The fixtures {@code mtp conform} runs by default. */
    public static final List<FixtureRecipe> BUNDLED = List.of(
            new FixtureRecipe("tiny", "tiny", 1, FixtureModels.Layout.HF, DType.BF16, 0, 0),
            new FixtureRecipe("tiny-q4", "tiny", 2, FixtureModels.Layout.COMPANION, DType.BF16, 4, 32),
            new FixtureRecipe("small", "small", 3, FixtureModels.Layout.HF, DType.BF16, 0, 0),
            new FixtureRecipe("small-q4", "small", 4, FixtureModels.Layout.COMPANION, DType.BF16, 4, 64),
            new FixtureRecipe("tiny-moe", "tiny-moe", 9, FixtureModels.Layout.HF, DType.BF16, 0, 0),
            new FixtureRecipe("tiny-moe-q4", "tiny-moe", 10, FixtureModels.Layout.COMPANION, DType.BF16, 4, 32),
            new FixtureRecipe("small-moe", "small-moe", 11, FixtureModels.Layout.HF, DType.BF16, 0, 0),
            new FixtureRecipe("small-moe-q4", "small-moe", 12, FixtureModels.Layout.COMPANION, DType.BF16, 4, 64));

    /** Further named recipes (available with {@code --fixture}, not run by default). */
    public static final List<FixtureRecipe> EXTRA = List.of(
            new FixtureRecipe("tiny-f32", "tiny", 5, FixtureModels.Layout.HF, DType.F32, 0, 0),
            new FixtureRecipe("tiny-q8", "tiny", 6, FixtureModels.Layout.COMPANION, DType.BF16, 8, 32),
            new FixtureRecipe("qwen3.5-0.8b", "qwen3.5-0.8b", 7, FixtureModels.Layout.HF, DType.BF16, 0, 0),
            new FixtureRecipe("qwen3.5-0.8b-q4", "qwen3.5-0.8b", 8, FixtureModels.Layout.COMPANION, DType.BF16, 4, 64),
            new FixtureRecipe("tiny-moe-q4-per-expert", "tiny-moe", 13, FixtureModels.Layout.HF, DType.BF16, 4, 32),
            new FixtureRecipe("tiny-moe-ties", "tiny-moe-ties", 20, FixtureModels.Layout.HF, DType.BF16, 0, 0),
            new FixtureRecipe("tiny-target", "tiny-target", 14, FixtureModels.Layout.HF, DType.BF16, 0, 0),
            new FixtureRecipe("tiny-target-q4", "tiny-target", 15, FixtureModels.Layout.COMPANION, DType.BF16, 4, 32),
            new FixtureRecipe("small-target", "small-target", 16, FixtureModels.Layout.HF, DType.BF16, 0, 0),
            new FixtureRecipe("small-target-q4", "small-target", 17, FixtureModels.Layout.COMPANION, DType.BF16, 4,
                    64),
            new FixtureRecipe("tiny-moe-target", "tiny-moe-target", 18, FixtureModels.Layout.HF, DType.BF16, 0, 0),
            new FixtureRecipe("tiny-moe-target-q4", "tiny-moe-target", 19, FixtureModels.Layout.COMPANION, DType.BF16,
                    4, 32));

    /** The fixtures with a target that {@code --contexts target} runs when no fixture is named. */
    public static final List<String> TARGETS = List.of("tiny-target", "small-target", "tiny-moe-target");

    /** The recipe called {@code name}. */
    public static FixtureRecipe named(String name) {
        return Stream.concat(BUNDLED.stream(), EXTRA.stream()).filter(r -> r.name.equals(name)).findFirst()
                .orElseThrow(() -> MtpException.invalidArgument("fixture: no fixture named '" + name + "' (known: "
                        + String.join(", ", Stream.concat(BUNDLED.stream(), EXTRA.stream()).map(FixtureRecipe::name)
                        .toList()) + ")"));
    }

    /** {@code tiny: preset tiny, seed 1, hf layout, BF16, dense}. */
    public String describe() {
        return name + ": preset " + preset + (hasTarget() ? " (hybrid target + MTP head)" : "") + ", seed " + seed
                + ", " + layout.name().toLowerCase() + " layout, " + dtype + (bits == 0 ? ", dense"
                : ", " + bits + "-bit affine group " + groupSize) + (hasTarget() && bits != 0
                ? " (the MTP head converted; the target dense)" : "");
    }

    /** True when the recipe has a hybrid target beside its drafter (a {@link TargetFixtures} preset). */
    public boolean hasTarget() {
        return TargetFixtures.isPreset(preset);
    }

    /** The recipes, by name, that have a target: what a message about a fixture without one lists. */
    public static List<String> withTarget() {
        return Stream.concat(BUNDLED.stream(), EXTRA.stream()).filter(FixtureRecipe::hasTarget)
                .map(FixtureRecipe::name).toList();
    }

    /** A directory name that changes whenever the recipe does. */
    String cacheKey() {
        return name + "-" + Integer.toHexString((preset + seed + layout + dtype + bits + "/" + groupSize).hashCode());
    }

    /** Writes the model under {@code cacheRoot} if it is not there yet, then loads it (the drafter). */
    public MtpModel load(Path cacheRoot) {
        if (!hasTarget()) {
            return ModelLoader.load(written(cacheRoot, cacheKey(),
                    tmp -> FixtureModels.write(preset, seed, tmp, layout, dtype, bits, groupSize)));
        }
        Path release = release(cacheRoot);
        if (bits == 0) {
            return ModelLoader.load(release);
        }
        return ModelLoader.load(written(cacheRoot, cacheKey(), tmp -> CompanionConverter.convert(release, tmp,
                new CompanionConverter.Options(bits, groupSize, java.util.Set.of()), (n, done, total) -> { })));
    }

    /**
     * Writes the release directory under {@code cacheRoot} if it is not there yet, then loads its target.
     *
     * @throws MtpException INVALID_ARGUMENT when the recipe has no target, naming the recipes that have one
     */
    public TargetModel loadTarget(Path cacheRoot) {
        if (!hasTarget()) {
            throw MtpException.invalidArgument("fixture " + name + " has no target (fixtures with one: "
                    + String.join(", ", withTarget()) + ")");
        }
        return TargetLoader.load(release(cacheRoot));
    }

    /** The hybrid release directory: the fixture itself when dense, else beside the converted drafter. */
    private Path release(Path cacheRoot) {
        return written(cacheRoot, bits == 0 ? cacheKey() : cacheKey() + "-release",
                tmp -> TargetFixtures.write(preset, seed, tmp, dtype));
    }

    /** {@code cacheRoot/key}, written by {@code writer} into a temporary directory moved there when absent. */
    private Path written(Path cacheRoot, String key, java.util.function.Consumer<Path> writer) {
        Path dir = cacheRoot.resolve(key);
        if (!Files.isRegularFile(dir.resolve("config.json"))) {
            try {
                Files.createDirectories(cacheRoot);
                Path tmp = Files.createTempDirectory(cacheRoot, key + ".tmp");
                writer.accept(tmp);
                try {
                    Files.move(tmp, dir, StandardCopyOption.ATOMIC_MOVE);
                } catch (IOException raced) {
                    deleteTree(tmp); // another process wrote it first
                }
            } catch (IOException e) {
                throw new UncheckedIOException("fixture: cannot write " + name + " under " + cacheRoot, e);
            }
        }
        return dir;
    }

    /**
     * Where fixtures are cached: the system property {@code mtp.cache}, else the environment variable
     * {@code MTP_ORACLE_CACHE}, else {@code ~/.cache/mtp-oracle} (each with {@code fixtures/} below it).
     */
    public static Path defaultCache() {
        String prop = System.getProperty("mtp.cache");
        if (prop != null && !prop.isBlank()) {
            return Path.of(prop).resolve("fixtures");
        }
        String env = System.getenv("MTP_ORACLE_CACHE");
        return env != null && !env.isBlank() ? Path.of(env).resolve("fixtures")
                : Path.of(System.getProperty("user.home"), ".cache", "mtp-oracle", "fixtures");
    }

    private static void deleteTree(Path p) throws IOException {
        try (Stream<Path> s = Files.walk(p)) {
            for (Path x : s.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(x);
            }
        }
    }
}
