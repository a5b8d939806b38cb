package org.mtporacle.reference.bench;

import java.util.Arrays;

/** Median wall time of repeated runs after a warm-up long enough for C2 to compile the kernels. */
final class Timing {
    private Timing() {
    }

    /** The median seconds of {@code reps} runs after ≥ 3 warm-up runs and ≥ 1.5 s (0.6 s when {@code quick}). */
    static double median(int reps, boolean quick, Runnable body) {
        long warm = quick ? 600_000_000L : 1_500_000_000L;
        long start = System.nanoTime();
        for (int i = 0; i < 3 || System.nanoTime() - start < warm; i++) {
            body.run();
        }
        double[] s = new double[reps];
        for (int i = 0; i < reps; i++) {
            long t0 = System.nanoTime();
            body.run();
            s[i] = (System.nanoTime() - t0) / 1e9;
        }
        Arrays.sort(s);
        return s[reps / 2];
    }
}
