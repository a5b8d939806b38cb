package org.mtporacle.conformance;

import org.mtporacle.api.DType;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.MtpModel;
import org.mtporacle.io.ModelLoader;
import org.mtporacle.reference.fixture.FixtureModels;

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
            new FixtureRecipe("tiny-moe-q4-per-expert", "tiny-moe", 13, FixtureModels.Layout.HF, DType.BF16, 4, 32));

    /** The recipe called {@code name}. */
    public static FixtureRecipe named(String name) {
        return Stream.concat(BUNDLED.stream(), EXTRA.stream()).filter(r -> r.name.equals(name)).findFirst()
                .orElseThrow(() -> MtpException.invalidArgument("fixture: no fixture named '" + name + "' (known: "
                        + String.join(", ", Stream.concat(BUNDLED.stream(), EXTRA.stream()).map(FixtureRecipe::name)
                        .toList()) + ")"));
    }

    /** {@code tiny: preset tiny, seed 1, hf layout, BF16, dense}. */
    public String describe() {
        return name + ": preset " + preset + ", seed " + seed + ", " + layout.name().toLowerCase() + " layout, " + dtype
                + (bits == 0 ? ", dense" : ", " + bits + "-bit affine group " + groupSize);
    }

    /** A directory name that changes whenever the recipe does. */
    String cacheKey() {
        return name + "-" + Integer.toHexString((preset + seed + layout + dtype + bits + "/" + groupSize).hashCode());
    }

    /** Writes the model under {@code cacheRoot} if it is not there yet, then loads it. */
    public MtpModel load(Path cacheRoot) {
        Path dir = cacheRoot.resolve(cacheKey());
        if (!Files.isRegularFile(dir.resolve("config.json"))) {
            try {
                Files.createDirectories(cacheRoot);
                Path tmp = Files.createTempDirectory(cacheRoot, cacheKey() + ".tmp");
                FixtureModels.write(preset, seed, tmp, layout, dtype, bits, groupSize);
                try {
                    Files.move(tmp, dir, StandardCopyOption.ATOMIC_MOVE);
                } catch (IOException raced) {
                    deleteTree(tmp); // another process wrote it first
                }
            } catch (IOException e) {
                throw new UncheckedIOException("fixture: cannot write " + name + " under " + cacheRoot, e);
            }
        }
        return ModelLoader.load(dir);
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
