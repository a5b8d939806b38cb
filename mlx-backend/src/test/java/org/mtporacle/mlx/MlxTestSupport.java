package org.mtporacle.mlx;

import org.junit.jupiter.api.Assumptions;
import org.mtporacle.api.Availability;
import org.mtporacle.mlx.handle.MlxDiscovery;
import org.mtporacle.mlx.handle.MlxLibrary;
import org.mtporacle.mlx.handle.MlxOps;
import org.mtporacle.mlx.handle.MlxScope;
import org.mtporacle.mlx.handle.MlxStream;

import java.nio.file.Path;
import java.util.function.Consumer;

/** Skips a test, with the reason printed, when mlx-c is not found (set MTP_MLX_LIBRARY to run them). */
final class MlxTestSupport {
    private MlxTestSupport() {
    }

    static Path fixtureCache() {
        return Path.of("target", "fixture-cache");
    }

    static MlxBackend requireMlx() {
        MlxBackend backend = new MlxBackend();
        Availability a = backend.availability();
        if (!a.available()) {
            System.out.println("SKIPPED (MLX unavailable): " + a.reason());
        }
        Assumptions.assumeTrue(a.available(), () -> "MLX unavailable: " + a.reason());
        return backend;
    }

    /** Runs {@code work} on the MLX thread with ops on a CPU stream and a scope closed after it (skips without MLX). */
    static void onMlx(Consumer<MlxOps> work) {
        requireMlx();
        MlxLibrary lib = MlxLibrary.load(MlxDiscovery.fromEnvironment());
        try (MlxStream stream = MlxStream.open(lib, false)) {
            lib.thread().run(() -> {
                try (MlxScope scope = new MlxScope(lib)) {
                    work.accept(new MlxOps(stream, scope));
                }
            });
        }
    }
}
