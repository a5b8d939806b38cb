package org.mtporacle.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.mtporacle.api.LinearWeight;

/** The round structure and the statistics the benchmark's ratios come from, against hand-computed values. */
class TimingTest {
    @Test
    void interleavedRunsEveryBodyOncePerRoundInOrderAndTimesEachRound() {
        int[] calls = new int[1];
        List<String> outOfOrder = new ArrayList<>();
        Runnable[] bodies = new Runnable[3];
        for (int j = 0; j < 3; j++) {
            int slot = j;
            bodies[j] = () -> {
                if (calls[0]++ % 3 != slot) {
                    outOfOrder.add("body " + slot + " ran as call " + (calls[0] - 1));
                }
            };
        }
        double[][] s = Timing.interleaved(4, 6, true, bodies);
        assertThat(outOfOrder).isEmpty();
        assertThat(calls[0] % 3).isZero(); // whole rounds only, warm-up included
        assertThat(calls[0]).isGreaterThanOrEqualTo(3 * (3 + 6)); // ≥ 3 warm-up rounds, then 6 timed ones
        assertThat(s).hasNumberOfRows(3);
        for (double[] body : s) {
            assertThat(body).hasSize(6);
            for (double t : body) {
                assertThat(t).isGreaterThanOrEqualTo(0);
            }
        }
        assertThat(Timing.interleaved(9, 6, true, () -> { })[0]).hasSize(9);
    }

    @Test
    void aSlowBodyIsTimedInItsOwnSlot() {
        double[][] s = Timing.interleaved(1, 3, true, () -> { }, () -> sleep(20));
        for (int i = 0; i < 3; i++) {
            assertThat(s[1][i]).isGreaterThanOrEqualTo(0.019);
            assertThat(s[0][i]).isLessThan(s[1][i]);
        }
    }

    @Test
    void medianTakesTheMiddleValueOrTheUpperMiddleAndLeavesItsInputAlone() {
        double[] v = {5, 1, 4, 2, 3};
        assertThat(Timing.median(v)).isEqualTo(3);
        assertThat(v).containsExactly(5, 1, 4, 2, 3);
        assertThat(Timing.median(new double[] {4, 1, 3, 2})).isEqualTo(3);
        assertThatThrownBy(() -> Timing.median(new double[0])).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void medianRatioIsTakenRoundByRoundNotBetweenMedians() {
        // Rounds where the machine slows both bodies alike: the per-round ratio is 2 every time.
        double[] kernel = {1, 2, 4, 8, 16};
        double[] baseline = {2, 4, 8, 16, 32};
        assertThat(Timing.medianRatio(1, baseline, kernel)).isEqualTo(2);
        // Here the ratio of the medians (4 / 8 = 0.5) differs from the median of per-round ratios
        // {1/2, 2/1, 4/16, 8/4, 16/8} = {0.5, 2, 0.25, 2, 2} → 2.
        double[] b = {1, 2, 4, 8, 16};
        double[] k = {2, 1, 16, 4, 8};
        assertThat(Timing.medianRatio(1, b, k)).isEqualTo(2);
        assertThat(Timing.medianRatio(0.5, b, k)).isEqualTo(1);
        assertThatThrownBy(() -> Timing.medianRatio(1, b, new double[4])).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("5 and 4 rounds");
    }

    @Test
    void aReadSplitsEverySegmentIntoEqualWholeStepSlices() {
        long step = 8L * jdk.incubator.vector.LongVector.SPECIES_PREFERRED.vectorByteSize();
        try (ReadBandwidth rb = ReadBandwidth.buffer(3 << 20, 3)) {
            assertThat(rb.bytes(1)).isEqualTo(3 << 20);
            assertThat(rb.bytes(3)).isEqualTo(3 * ((3L << 20) / 3 / step * step)).isLessThanOrEqualTo(3 << 20);
            rb.read(1);
            rb.read(3);
            assertThatThrownBy(() -> rb.read(4)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("1..3 threads, got 4");
        }
        assertThatThrownBy(() -> ReadBandwidth.buffer(1 << 20, 0)).isInstanceOf(IllegalArgumentException.class);
        try (Arena arena = Arena.ofShared()) { // shared: the second slice is read on a pool thread
            // a 4-bit weight is read as its codes, scales and biases; a dense one as its tensor
            LinearWeight q = BenchWeights.affine4(arena, 64, 1024);
            LinearWeight d = BenchWeights.bf16(arena, 3, 1000, 0);
            List<MemorySegment> segs = ReadBandwidth.segments(List.of(q, d));
            assertThat(segs).hasSize(4);
            // codes 64·1024/2 bytes, BF16 scales and biases 64 rows × 16 groups each; BF16 3 × 1000
            assertThat(segs.stream().mapToLong(MemorySegment::byteSize).sum())
                    .isEqualTo(64 * 1024 / 2 + 2 * 2 * 64 * 16 + 2 * 3 * 1000);
            try (ReadBandwidth rb = ReadBandwidth.over(segs, 2)) {
                long expect = 0;
                for (MemorySegment m : segs) {
                    expect += 2 * (m.byteSize() / 2 / step * step);
                }
                assertThat(rb.bytes(2)).isEqualTo(expect);
                rb.read(2);
            }
        }
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
