package org.mtporacle.tools;

import org.junit.jupiter.api.Test;

import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/** The backend comparison of {@code mtp bench} runs each profile with its own options under the user's --option. */
class BenchOptionsMergeTest {
    @Test
    void aProfileKeepsWhatTheUserDidNotSetAndTheUsersValueWinsOtherwise() {
        Map<String, String> f32 = Map.of("precision", "f32");
        assertThat(BenchCommand.profileOptions(f32, Map.of("device", "cpu")))
                .isEqualTo(Map.of("precision", "f32", "device", "cpu"));
        assertThat(BenchCommand.profileOptions(f32, Map.of("precision", "native")))
                .isEqualTo(Map.of("precision", "native"));
        assertThat(BenchCommand.profileOptions(f32, Map.of())).isEqualTo(f32);
    }
}
