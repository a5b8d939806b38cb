package org.mtporacle.bench;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;

/**
 * The machine's vector FMA throughput, the compute roof beside {@link ReadBandwidth}'s memory roof: every thread runs
 * 12 independent chains of {@code acc = fma(acc, a, b)} on the preferred float species (enough chains to cover the
 * FMA latency on current x86 and ARM cores) with its operands in registers, so the loop is bound by the FMA units
 * alone. A step that needs {@code F} floating-point operations cannot finish in less than {@code F ÷ peak}.
 */
final class FmaPeak implements AutoCloseable {
    private static final VectorSpecies<Float> S = FloatVector.SPECIES_PREFERRED;
    private static final int CHAINS = 12;

    private final int threads;
    private final long iterations;
    private final ExecutorService pool;

    /** {@code iterations} loop trips per thread per measurement (12 FMAs each). */
    FmaPeak(int threads, long iterations) {
        if (threads < 1 || iterations < 1) {
            throw new IllegalArgumentException("fma peak: threads = " + threads + " and iterations = " + iterations
                    + " must be ≥ 1");
        }
        this.threads = threads;
        this.iterations = iterations;
        this.pool = Executors.newFixedThreadPool(threads, r -> {
            Thread t = new Thread(r, "mtp-bench-fma");
            t.setDaemon(true);
            return t;
        });
    }

    /** Floating-point operations of one {@link #run}: 2 per lane per FMA. */
    double flops() {
        return 2.0 * threads * iterations * CHAINS * S.length();
    }

    /** One measurement: every thread runs its chains once. */
    void run() {
        List<Future<Float>> fs = new ArrayList<>(threads);
        for (int t = 0; t < threads; t++) {
            float seed = 1f + t;
            Callable<Float> c = () -> chains(iterations, seed);
            fs.add(pool.submit(c));
        }
        float sink = 0f;
        for (Future<Float> f : fs) {
            try {
                sink += f.get();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("fma peak: interrupted", e);
            } catch (ExecutionException e) {
                throw new IllegalStateException("fma peak: worker failed: " + e.getCause(), e.getCause());
            }
        }
        if (Float.isNaN(sink)) {
            throw new IllegalStateException("fma peak: the chains produced NaN");
        }
    }

    /**
     * 12 chains of {@code acc = fma(acc, a, b)} with {@code a} just below 1 and {@code b} small, so the values settle
     * near {@code b / (1 − a)} and never overflow or go subnormal; the sum is returned so the loop cannot be removed.
     */
    private static float chains(long n, float seed) {
        FloatVector a = FloatVector.broadcast(S, 0.999f);
        FloatVector b = FloatVector.broadcast(S, 1e-3f * seed);
        FloatVector c0 = FloatVector.broadcast(S, 0.1f), c1 = c0.add(0.01f), c2 = c0.add(0.02f), c3 = c0.add(0.03f);
        FloatVector c4 = c0.add(0.04f), c5 = c0.add(0.05f), c6 = c0.add(0.06f), c7 = c0.add(0.07f);
        FloatVector c8 = c0.add(0.08f), c9 = c0.add(0.09f), c10 = c0.add(0.10f), c11 = c0.add(0.11f);
        for (long i = 0; i < n; i++) {
            c0 = c0.fma(a, b); c1 = c1.fma(a, b); c2 = c2.fma(a, b); c3 = c3.fma(a, b);
            c4 = c4.fma(a, b); c5 = c5.fma(a, b); c6 = c6.fma(a, b); c7 = c7.fma(a, b);
            c8 = c8.fma(a, b); c9 = c9.fma(a, b); c10 = c10.fma(a, b); c11 = c11.fma(a, b);
        }
        return c0.add(c1).add(c2).add(c3).add(c4).add(c5).add(c6).add(c7).add(c8).add(c9).add(c10).add(c11)
                .reduceLanes(jdk.incubator.vector.VectorOperators.ADD);
    }

    @Override
    public void close() {
        pool.shutdownNow();
    }
}
