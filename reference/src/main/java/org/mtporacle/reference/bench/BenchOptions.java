package org.mtporacle.reference.bench;

import java.util.List;

/**
 * What {@link KernelBench} measures: thread counts, repetitions (the median is reported), the size of the read
 * baseline buffer, the prefill row count, and whether to try OpenBLAS. {@link #defaults()} is the full run.
 */
public record BenchOptions(List<Integer> threads, int repetitions, long baselineBytes, int prefillRows,
        boolean openBlas, boolean large) {
    public BenchOptions {
        threads = List.copyOf(threads);
        if (repetitions < 1 || baselineBytes < (1 << 20) || prefillRows < 1 || threads.isEmpty()) {
            throw new IllegalArgumentException("bench: repetitions, baseline bytes, prefill rows and threads must be"
                    + " positive, got " + repetitions + ", " + baselineBytes + ", " + prefillRows + ", " + threads);
        }
    }

    /** 1 and 2 threads, 5 repetitions, a 1 GiB baseline, 2048 prefill rows, OpenBLAS when found, full shapes. */
    public static BenchOptions defaults() {
        return new BenchOptions(List.of(1, 2), 5, 1L << 30, 2048, true, true);
    }

    /** A few-second smoke run: small shapes, a 64 MiB baseline. */
    public static BenchOptions quick() {
        return new BenchOptions(List.of(1, 2), 3, 64L << 20, 64, true, false);
    }
}
