package org.mtporacle.tools;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** The progress bar's frame: it fits the terminal's width, and the ETA is the remaining work at the rate so far. */
class ProgressLineTest {
    @ParameterizedTest
    @ValueSource(ints = {20, 30, 50, 80, 200})
    void aFrameFitsTheTerminal(int columns) {
        String f = ProgressLine.frame("mlx/native @ small-q4", 37, 100, 10_000_000_000L, "2 failed", columns);
        assertThat(f.length()).as(f).isLessThan(columns);
        assertThat(f).contains("37/100");
    }

    @Test
    void theEtaIsTheRemainingChainsAtTheRateSoFar() {
        // 25 of 100 chains in 10 s: 2.5 chains/s, 75 left → 30 s
        String f = ProgressLine.frame("reference @ tiny", 25, 100, 10_000_000_000L, "", 120);
        assertThat(f).contains("2.5/s").contains("ETA 0:30").contains("[#######.......................]");
        String done = ProgressLine.frame("reference @ tiny", 100, 100, 65_000_000_000L, "", 120);
        assertThat(done).contains("100/100 1:05").doesNotContain("ETA");
    }

    @Test
    void aNarrowTerminalCutsTheLabelNotTheCounts() {
        String f = ProgressLine.frame("a-very-long-backend-profile-name @ fixture", 3, 9, 1_000_000_000L,
                "1 failed", 40);
        assertThat(f).contains("3/9").contains("…").hasSizeLessThan(40);
    }

    @Test
    void clockShowsHoursOnlyWhenNeeded() {
        assertThat(ProgressLine.clock(59.4)).isEqualTo("0:59");
        assertThat(ProgressLine.clock(3725)).isEqualTo("1:02:05");
    }
}
