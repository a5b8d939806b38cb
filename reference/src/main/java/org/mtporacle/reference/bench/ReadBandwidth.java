package org.mtporacle.reference.bench;

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

/**
 * A STREAM-style read bandwidth: {@code threads} threads each sum their contiguous slice of one large off-heap buffer
 * as 64-bit integers, with 8 independent vector accumulators (integer adds never stall the loads), so the loop runs
 * at the rate the memory system delivers bytes. This is the ceiling the memory-bound kernels are measured against.
 */
final class ReadBandwidth implements AutoCloseable {
    private static final VectorSpecies<Long> LS = LongVector.SPECIES_PREFERRED;
    private static final int UNROLL = 8;

    private final Arena arena = Arena.ofShared();
    private final MemorySegment buf;
    private final int threads;
    private final ExecutorService pool;

    ReadBandwidth(long bytes, int threads) {
        long step = (long) LS.vectorByteSize() * UNROLL * threads;
        this.buf = arena.allocate(bytes / step * step, 4096);
        buf.fill((byte) 0x5A);
        this.threads = threads;
        this.pool = threads == 1 ? null : Executors.newFixedThreadPool(threads - 1, r -> {
            Thread t = new Thread(r, "mtp-bench-read");
            t.setDaemon(true);
            return t;
        });
    }

    long bytes() {
        return buf.byteSize();
    }

    /** Reads the whole buffer once; slice 0 on the calling thread. */
    void read() {
        long slice = buf.byteSize() / threads;
        List<Future<Long>> parts = new ArrayList<>();
        for (int p = 1; p < threads; p++) {
            long from = p * slice;
            parts.add(pool.submit(() -> sum(buf, from, from + slice)));
        }
        long total = sum(buf, 0, slice);
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
        if (total == 42) { // keeps the sum live; never true for the 0x5A fill
            throw new IllegalStateException("bench: unexpected read sum");
        }
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
        arena.close();
    }
}
