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

    /**
     * Medians of two bodies timed alternately ({@code a, b, a, b, …}, at least 15 pairs after a shared warm-up), so
     * drift and other load on the machine hit both alike: the fair way to measure a small ratio between them.
     */
    static double[] pairedMedians(int reps, boolean quick, Runnable a, Runnable b) {
        long warm = quick ? 600_000_000L : 1_500_000_000L;
        long start = System.nanoTime();
        for (int i = 0; i < 3 || System.nanoTime() - start < warm; i++) {
            a.run();
            b.run();
        }
        int n = Math.max(reps, 15);
        double[] sa = new double[n];
        double[] sb = new double[n];
        for (int i = 0; i < n; i++) {
            long t0 = System.nanoTime();
            a.run();
            long t1 = System.nanoTime();
            b.run();
            long t2 = System.nanoTime();
            sa[i] = (t1 - t0) / 1e9;
            sb[i] = (t2 - t1) / 1e9;
        }
        Arrays.sort(sa);
        Arrays.sort(sb);
        return new double[] {sa[n / 2], sb[n / 2]};
    }
}
