package org.mtporacle.mlx;

import org.junit.jupiter.api.Assumptions;
import org.mtporacle.api.Availability;

import java.nio.file.Path;

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
}
