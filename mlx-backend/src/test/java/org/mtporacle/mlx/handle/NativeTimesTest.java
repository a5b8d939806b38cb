package org.mtporacle.mlx.handle;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** The MTP_MLX_TIMES table: counts and totals per call, most time first. */
class NativeTimesTest {

    @Test
    void theTableSumsEachCallAndPutsTheMostTimeFirst() {
        NativeTimes.record("test_few_long", 3_000_000);
        NativeTimes.record("test_many_short", 1_000);
        NativeTimes.record("test_many_short", 3_000);
        String t = NativeTimes.table();
        assertThat(t.indexOf("test_few_long")).isLessThan(t.indexOf("test_many_short"));
        assertThat(t).containsPattern("test_few_long\\s+1\\s+3\\.0\\s+3000\\.00")
                .containsPattern("test_many_short\\s+2\\s+0\\.0\\s+2\\.00");
    }
}
