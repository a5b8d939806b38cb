package org.mtporacle.bench;

import java.util.Arrays;

/** Wall times of repeated runs after a warm-up long enough for C2 to compile the kernels. */
final class Timing {
    /** Fewest rounds of {@link #interleaved}: enough for a median that one disturbed round cannot move. */
    static final int MIN_ROUNDS = 15;

    private Timing() {
    }

    /** The median seconds of {@code reps} runs after ≥ 3 warm-up runs and ≥ 1.5 s (0.6 s when {@code quick}). */
    static double median(int reps, boolean quick, Runnable body) {
        return median(interleaved(reps, 1, quick, body)[0]);
    }

    /**
     * Times {@code bodies} in rounds, each round running every body once in order ({@code a, b, …, a, b, …}), after a
     * shared warm-up of ≥ 3 rounds and ≥ 1.5 s (0.6 s when {@code quick}): {@code [body][round]} seconds in run order,
     * {@code max(reps, minRounds)} rounds. Bodies timed in the same round see the same machine (the same other load,
     * the same clock and memory state), so a ratio taken round by round cancels the drift that separate medians keep.
     */
    static double[][] interleaved(int reps, int minRounds, boolean quick, Runnable... bodies) {
        long warm = quick ? 600_000_000L : 1_500_000_000L;
        long start = System.nanoTime();
        for (int i = 0; i < 3 || System.nanoTime() - start < warm; i++) {
            for (Runnable b : bodies) {
                b.run();
            }
        }
        int n = Math.max(reps, minRounds);
        double[][] s = new double[bodies.length][n];
        for (int i = 0; i < n; i++) {
            for (int j = 0; j < bodies.length; j++) {
                long t0 = System.nanoTime();
                bodies[j].run();
                s[j][i] = (System.nanoTime() - t0) / 1e9;
            }
        }
        return s;
    }

    /**
     * Times {@code bodies} in {@code rounds} rounds after {@code warm} untimed ones, for figures whose body takes
     * seconds (a prefill of 2048 tokens): {@code [body][round]} seconds, as {@link #interleaved}.
     */
    static double[][] rounds(int warm, int rounds, Runnable... bodies) {
        if (warm < 0 || rounds < 1) {
            throw new IllegalArgumentException("bench: " + warm + " warm-up and " + rounds + " timed rounds");
        }
        for (int i = 0; i < warm; i++) {
            for (Runnable b : bodies) {
                b.run();
            }
        }
        double[][] s = new double[bodies.length][rounds];
        for (int i = 0; i < rounds; i++) {
            for (int j = 0; j < bodies.length; j++) {
                long t0 = System.nanoTime();
                bodies[j].run();
                s[j][i] = (System.nanoTime() - t0) / 1e9;
            }
        }
        return s;
    }

    /** The median of {@code v} (the upper one of the middle two for an even count); {@code v} is not modified. */
    static double median(double[] v) {
        if (v.length == 0) {
            throw new IllegalArgumentException("median of no values");
        }
        double[] s = v.clone();
        Arrays.sort(s);
        return s[s.length / 2];
    }

    /**
     * The median over rounds {@code i} of {@code scale · num[i] / den[i]}: a ratio taken within each round of
     * {@link #interleaved}, so what changes between rounds cancels.
     */
    static double medianRatio(double scale, double[] num, double[] den) {
        if (num.length != den.length) {
            throw new IllegalArgumentException("ratio of " + num.length + " and " + den.length + " rounds");
        }
        double[] r = new double[num.length];
        for (int i = 0; i < r.length; i++) {
            r[i] = scale * num[i] / den[i];
        }
        return median(r);
    }
}
