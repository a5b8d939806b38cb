package org.mtporacle.bench;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.LinearWeight;

/**
 * A STREAM-style read: {@code threads} threads each sum their contiguous slice of every segment as 64-bit integers,
 * with 8 independent vector accumulators (integer adds never stall the loads), so the loop runs at the rate the memory
 * system delivers bytes. This is the ceiling the memory-bound kernels are measured against.
 *
 * <p>Either a fresh buffer ({@link #buffer}: the machine's read bandwidth) or the very bytes a kernel reads
 * ({@link #over}, {@link #segments}). The second is the fair ceiling for that kernel: on a virtual machine the read
 * rate depends on where the host placed an allocation (two 500 MB buffers of one process were read at 22 and 27 GB/s,
 * each every time), so a baseline over other memory can sit above or below what the kernel's own bytes allow.
 */
final class ReadBandwidth implements AutoCloseable {
    private static final VectorSpecies<Long> LS = LongVector.SPECIES_PREFERRED;
    private static final int UNROLL = 8;
    private static final long STEP = (long) LS.vectorByteSize() * UNROLL;

    private final Arena arena;
    private final List<MemorySegment> segs;
    private final int maxThreads;
    private final ExecutorService pool;

    private ReadBandwidth(Arena arena, List<MemorySegment> segs, int maxThreads) {
        if (maxThreads < 1) {
            throw new IllegalArgumentException("bench: read baseline threads must be positive, got " + maxThreads);
        }
        this.arena = arena;
        this.segs = List.copyOf(segs);
        this.maxThreads = maxThreads;
        this.pool = maxThreads == 1 ? null : Executors.newFixedThreadPool(maxThreads - 1, r -> {
            Thread t = new Thread(r, "mtp-bench-read");
            t.setDaemon(true);
            return t;
        });
    }

    /** A fresh buffer of about {@code bytes}, owned (freed by {@link #close}), for 1 to {@code maxThreads} threads. */
    static ReadBandwidth buffer(long bytes, int maxThreads) {
        Arena a = Arena.ofShared();
        MemorySegment buf = a.allocate(Math.max(STEP, bytes / STEP * STEP), 4096);
        buf.fill((byte) 0x5A);
        return new ReadBandwidth(a, List.of(buf), maxThreads);
    }

    /** Reads {@code segs} (not owned) on 1 to {@code maxThreads} threads. */
    static ReadBandwidth over(List<MemorySegment> segs, int maxThreads) {
        return new ReadBandwidth(null, segs, maxThreads);
    }

    /** The memory of {@code weights}: a dense weight's tensor; an affine weight's codes, scales and biases. */
    static List<MemorySegment> segments(List<LinearWeight> weights) {
        List<MemorySegment> out = new ArrayList<>();
        for (LinearWeight w : weights) {
            switch (w) {
                case LinearWeight.Dense d -> out.add(d.weight().data());
                case LinearWeight.Affine q -> {
                    for (HostTensor t : new HostTensor[] {q.codes(), q.scales(), q.biases()}) {
                        if (t != null) {
                            out.add(t.data());
                        }
                    }
                }
            }
        }
        return out;
    }

    /** Bytes one {@link #read(int)} on {@code threads} threads reads: equal whole-step slices of every segment. */
    long bytes(int threads) {
        long n = 0;
        for (MemorySegment s : segs) {
            n += slice(s, threads) * threads;
        }
        return n;
    }

    private long slice(MemorySegment s, int threads) {
        if (threads < 1 || threads > maxThreads) {
            throw new IllegalArgumentException("bench: read baseline built for 1.." + maxThreads + " threads, got "
                    + threads);
        }
        return s.byteSize() / threads / STEP * STEP;
    }

    /** Reads {@link #bytes(int)} once on {@code threads} threads; slice 0 of every segment on the calling thread. */
    void read(int threads) {
        bytes(threads); // checks threads before any work starts
        List<Future<Long>> parts = new ArrayList<>();
        for (int p = 1; p < threads; p++) {
            int part = p;
            parts.add(pool.submit(() -> part(part, threads)));
        }
        long total = part(0, threads);
        try {
            for (Future<Long> f : parts) {
                total += f.get();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("bench: read baseline interrupted", e);
        } catch (ExecutionException e) {
            throw new IllegalStateException("bench: read baseline failed: " + e.getCause(), e.getCause());
        }
        if (total == 0x5A5A5A5A_5A5A5A5AL) { // keeps the sum live; the value is immaterial
            throw new IllegalStateException("bench: unexpected read sum");
        }
    }

    private long part(int p, int threads) {
        long total = 0;
        for (MemorySegment s : segs) {
            long slice = slice(s, threads);
            total += sum(s, p * slice, (p + 1) * slice);
        }
        return total;
    }

    private static long sum(MemorySegment m, long from, long to) {
        LongVector a0 = LongVector.zero(LS), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
        long vb = LS.vectorByteSize();
        ByteOrder le = ByteOrder.LITTLE_ENDIAN;
        for (long o = from; o < to; o += UNROLL * vb) {
            a0 = a0.add(LongVector.fromMemorySegment(LS, m, o, le));
            a1 = a1.add(LongVector.fromMemorySegment(LS, m, o + vb, le));
            a2 = a2.add(LongVector.fromMemorySegment(LS, m, o + 2 * vb, le));
            a3 = a3.add(LongVector.fromMemorySegment(LS, m, o + 3 * vb, le));
            a4 = a4.add(LongVector.fromMemorySegment(LS, m, o + 4 * vb, le));
            a5 = a5.add(LongVector.fromMemorySegment(LS, m, o + 5 * vb, le));
            a6 = a6.add(LongVector.fromMemorySegment(LS, m, o + 6 * vb, le));
            a7 = a7.add(LongVector.fromMemorySegment(LS, m, o + 7 * vb, le));
        }
        return a0.add(a1).add(a2).add(a3).add(a4).add(a5).add(a6).add(a7).reduceLanes(VectorOperators.ADD);
    }

    @Override
    public void close() {
        if (pool != null) {
            pool.shutdownNow();
        }
        if (arena != null) {
            arena.close();
        }
    }
}
