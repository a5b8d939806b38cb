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

    /** The seed of the dense hybrid-target fixtures ({@code tiny-target}, {@code small-target}, the MoE one). */
    public static final long TARGET_SEED = 20261201L;

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
            // the dense target fixtures are written with one seed, TARGET_SEED: the target TCK, mtp conform --target,
            // --contexts target and mtp replay all read the same release
            new FixtureRecipe("tiny-target", "tiny-target", TARGET_SEED, FixtureModels.Layout.HF, DType.BF16, 0, 0),
            new FixtureRecipe("tiny-target-q4", "tiny-target", 15, FixtureModels.Layout.COMPANION, DType.BF16, 4, 32),
            new FixtureRecipe("small-target", "small-target", TARGET_SEED, FixtureModels.Layout.HF, DType.BF16, 0, 0),
            new FixtureRecipe("small-target-q4", "small-target", 17, FixtureModels.Layout.COMPANION, DType.BF16, 4,
                    64),
            new FixtureRecipe("tiny-moe-target", "tiny-moe-target", TARGET_SEED, FixtureModels.Layout.HF, DType.BF16, 0,
                    0),
            new FixtureRecipe("tiny-moe-target-q4", "tiny-moe-target", 19, FixtureModels.Layout.COMPANION, DType.BF16,
                    4, 32),
            // tiny-moe-target's weights (its seed) as a Qwen3-Next release (flat config, interleaved GDN projections)
            // with norm_topk_prob false
            new FixtureRecipe("tiny-moe-next-target", "tiny-moe-next-target", TARGET_SEED, FixtureModels.Layout.HF,
                    DType.BF16, 0, 0),
            // the wide-gain family: norm gains 1 + N(0, 0.5²) instead of 0.1² (FixtureModels), where bf16 shows the bugs
            // that move a gain to another dimension
            new FixtureRecipe("tiny-wide", "tiny-wide", 20, FixtureModels.Layout.HF, DType.BF16, 0, 0),
            new FixtureRecipe("tiny-moe-wide", "tiny-moe-wide", 21, FixtureModels.Layout.HF, DType.BF16, 0, 0),
            // tiny-target's weights (its seed) with the wide norm gains
            new FixtureRecipe("tiny-wide-target", "tiny-wide-target", TARGET_SEED, FixtureModels.Layout.HF, DType.BF16, 0,
                    0));

    /** The fixtures with a target that {@code --contexts target} runs when no fixture is named. */
    public static final List<String> TARGETS = List.of("tiny-target", "small-target", "tiny-moe-target");

    /**
     * Target fixtures {@code mtp conform --target} runs when named, beside {@link #TARGETS}: twins of them the mutant
     * tests use ({@code tiny-moe-next-target}, a Qwen3-Next release with {@code norm_topk_prob: false};
     * {@code tiny-wide-target}, wide norm gains).
     */
    public static final List<String> TARGET_TWINS = List.of("tiny-moe-next-target", "tiny-wide-target");

    /** The name prefix of a model directory: {@code model:/abs/path} (a trace's fixture field names it so). */
    public static final String MODEL_PREFIX = "model:";
    private static final String DIRECTORY = "directory";
    private static final String DIRECTORY_WITH_TARGET = "directory+target";

    /** The recipe called {@code name}: a bundled or extra recipe, or a model directory {@code model:PATH}. */
    public static FixtureRecipe named(String name) {
        if (name.startsWith(MODEL_PREFIX)) {
            return directory(Path.of(name.substring(MODEL_PREFIX.length())));
        }
        return Stream.concat(BUNDLED.stream(), EXTRA.stream()).filter(r -> r.name.equals(name)).findFirst()
                .orElseThrow(() -> MtpException.invalidArgument("fixture: no fixture named '" + name + "' (known: "
                        + String.join(", ", Stream.concat(BUNDLED.stream(), EXTRA.stream()).map(FixtureRecipe::name)
                        .toList()) + ")"));
    }

    /**
     * A model directory of the user's ({@code --model DIR}): a drafter checkpoint (a Hugging Face release or a
     * converted companion) or a hybrid release whose target {@link #loadTarget} reads too. It is loaded once here to
     * check it and read its quantization; it is never written or cached. Its name is {@code model:} and its absolute
     * path, so a trace recorded on it replays from any folder.
     *
     * @throws MtpException MALFORMED_FILE or INCOMPATIBLE_MODEL from the loader, naming what is wrong
     */
    public static FixtureRecipe directory(Path dir) {
        Path abs = dir.toAbsolutePath().normalize();
        MtpModel m = ModelLoader.load(abs);
        int bits = 0;
        int group = 0;
        DType dtype = DType.F32;
        switch (m.weights().fc()) {
            case org.mtporacle.api.LinearWeight.Affine a -> {
                bits = a.bits();
                group = a.groupSize();
            }
            case org.mtporacle.api.LinearWeight.Dense d -> dtype = d.weight().dtype();
        }
        FixtureModels.Layout layout = m.layout().equals("hf") ? FixtureModels.Layout.HF
                : FixtureModels.Layout.COMPANION;
        return new FixtureRecipe(MODEL_PREFIX + abs, hasTargetLayers(abs) ? DIRECTORY_WITH_TARGET : DIRECTORY, 0,
                layout, dtype, bits, group);
    }

    /** True when {@code dir}'s config reads as a hybrid release and its files hold the target's layers. */
    private static boolean hasTargetLayers(Path dir) {
        try {
            org.mtporacle.io.TargetConfigReader.read(dir.resolve("config.json"));
        } catch (MtpException e) {
            return false;
        }
        try (org.mtporacle.io.ShardedTensorStore store = org.mtporacle.io.ShardedTensorStore.open(dir)) {
            return store.names().stream().anyMatch(n -> n.contains("layers.0.") && !n.startsWith("mtp."));
        } catch (MtpException e) {
            return false;
        }
    }

    /** True for a model directory ({@link #directory}) rather than a recipe. */
    public boolean isDirectory() {
        return preset.equals(DIRECTORY) || preset.equals(DIRECTORY_WITH_TARGET);
    }

    /** The model directory of a {@link #directory} recipe. */
    private Path directoryPath() {
        return Path.of(name.substring(MODEL_PREFIX.length()));
    }

    /** {@code tiny: preset tiny, seed 1, hf layout, BF16, dense}. */
    public String describe() {
        if (isDirectory()) {
            return name + ": your model directory, " + layout.name().toLowerCase() + " layout, " + (bits == 0
                    ? dtype + ", dense" : bits + "-bit affine group " + groupSize)
                    + (hasTarget() ? " (hybrid release: its target gives --contexts target)" : " (drafter only)");
        }
        return name + ": preset " + preset + (hasTarget() ? " (hybrid target + MTP head)" : "") + ", seed " + seed
                + ", " + layout.name().toLowerCase() + " layout, " + dtype + (bits == 0 ? ", dense"
                : ", " + bits + "-bit affine group " + groupSize) + (hasTarget() && bits != 0
                ? " (the MTP head converted; the target dense)" : "");
    }

    /** True when the recipe has a hybrid target beside its drafter (a {@link TargetFixtures} preset). */
    public boolean hasTarget() {
        return preset.equals(DIRECTORY_WITH_TARGET) || TargetFixtures.isPreset(preset);
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
        if (isDirectory()) {
            return ModelLoader.load(directoryPath());
        }
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
        if (isDirectory()) {
            return TargetLoader.load(directoryPath());
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
