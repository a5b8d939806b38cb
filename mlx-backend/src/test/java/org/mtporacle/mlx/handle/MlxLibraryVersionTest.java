package org.mtporacle.mlx.handle;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** The version gate: MLX from {@link MlxLibrary#OLDEST_MLX} on is accepted, tested versions without a note. */
class MlxLibraryVersionTest {

    @Test
    void versionsCompareByTheirNumericParts() {
        assertThat(MlxLibrary.compareVersions("0.31.1", "0.31.0")).isPositive();
        assertThat(MlxLibrary.compareVersions("0.32.1", "0.31.9")).isPositive();
        assertThat(MlxLibrary.compareVersions("0.30.6", MlxLibrary.OLDEST_MLX)).isNegative();
        assertThat(MlxLibrary.compareVersions("0.100.0", "0.99.9")).isPositive();
        assertThat(MlxLibrary.compareVersions("1.0", "0.99.9")).isPositive();
        assertThat(MlxLibrary.compareVersions("0.32.1.dev20261201+abc", "0.32.1")).isZero();
        assertThat(MlxLibrary.compareVersions("0.31.0", "0.31.0")).isZero();
    }

    @Test
    void testedVersionsCarryNoNoteAndOthersSayTheyAreUntested() {
        for (String v : MlxLibrary.TESTED_MLX) {
            assertThat(MlxLibrary.versionNote(v)).as(v).isNull();
        }
        assertThat(MlxLibrary.versionNote("0.33.0")).isEqualTo(
                "untested: these bindings were tested with MLX 0.31.1 and 0.32.1");
        assertThat(MlxLibrary.versionNote("0.31.2")).startsWith("untested");
    }
}
