package org.mtporacle.conformance.target.lockstep;

import org.mtporacle.api.DType;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.TargetModel;
import org.mtporacle.io.ModelLoader;
import org.mtporacle.io.TargetLoader;
import org.mtporacle.reference.fixture.TargetFixtures;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * A hybrid-target fixture (a {@link TargetFixtures} preset written as a Qwen3.5 release directory, bf16, cached) read
 * back through the real loaders: the target and the MTP head beside it.
 *
 * @param name    the preset
 * @param target  the target
 * @param drafter its MTP head
 */
public record TargetFixture(String name, TargetModel target, MtpModel drafter) {
    /** The seed every target fixture is written with. */
    public static final long SEED = 20261201L;

    /** Loads preset {@code name}, writing it under {@code cache} first when absent. */
    public static TargetFixture load(String name, Path cache) {
        Path dir = cache.resolve(name + "-" + SEED + "-bf16");
        try {
            if (!Files.exists(dir.resolve("config.json"))) {
                Path tmp = Files.createTempDirectory(Files.createDirectories(cache), name + "-");
                Path written = TargetFixtures.write(name, SEED, tmp.resolve("release"), DType.BF16);
                try {
                    Files.move(written, dir);
                } catch (IOException raced) {
                    if (!Files.exists(dir.resolve("config.json"))) {
                        throw raced;
                    }
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("target fixture " + name + ": cannot write under " + cache, e);
        }
        return new TargetFixture(name, TargetLoader.load(dir), ModelLoader.load(dir));
    }
}
