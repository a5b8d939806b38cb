package org.mtporacle.reference.bench;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.Arrays;
import java.util.Optional;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.LinearWeight;
import org.mtporacle.reference.kernels.KernelMode;
import org.mtporacle.reference.kernels.Kernels;

/**
 * Single-thread kernel figures in per-thread CPU time, for a machine shared with other jobs (wall time there counts
 * the time other processes hold the core). Prints the minimum and median of repeated runs: prefill BF16 matmul at
 * qwen3.5-0.8b shapes beside OpenBLAS {@code cblas_sgemm} (1 thread, run on the calling thread), and 4-bit g64
 * mat-vec in GB/s of weight read.
 *
 * <p>Usage: {@code CpuProbe [prefill|q4|all] [rows] [repetitions]}; {@code q4} also prints the 1-thread read bandwidth.
 */
public final class CpuProbe {
    private static final ThreadMXBean MX = ManagementFactory.getThreadMXBean();

    private CpuProbe() {
    }

    public static void main(String[] args) throws Throwable {
        String what = args.length > 0 ? args[0] : "all";
        int m = args.length > 1 ? Integer.parseInt(args[1]) : 2048;
        int reps = args.length > 2 ? Integer.parseInt(args[2]) : 5;
        try (Arena arena = Arena.ofShared(); Kernels k = new Kernels(KernelMode.VECTOR, 1)) {
            if (what.equals("q4") || what.equals("all")) {
                try (ReadBandwidth rb = ReadBandwidth.buffer(1L << 30, 1)) {
                    double[] t = times(reps, () -> rb.read(1));
                    System.out.printf("read bandwidth 1 GiB, 1 thread: %.2f GB/s (min time), %.2f GB/s (median)%n",
                            rb.bytes(1) / t[0] / 1e9, rb.bytes(1) / t[1] / 1e9);
                }
                for (int[] s : new int[][] {{248320, 1024}, {12288, 4096}}) {
                    LinearWeight w = BenchWeights.affine4(arena, s[0], s[1]);
                    float[] x = BenchWeights.pattern(s[1]);
                    float[] out = new float[s[0]];
                    double[] t = times(reps, () -> k.matmul(out, 0, w, x, 0, 1));
                    System.out.printf("q4 g64 mat-vec %dx%d: min %.2f ms, median %.2f ms, %.2f GB/s (min)%n", s[0],
                            s[1], t[0] * 1e3, t[1] * 1e3, w.byteSize() / t[0] / 1e9);
                }
            }
            if (what.equals("prefill") || what.equals("all")) {
                prefill(arena, k, m, reps);
            }
        }
    }

    private static void prefill(Arena arena, Kernels k, int m, int reps) throws Throwable {
        Optional<OpenBlas> blas = OpenBlas.load();
        if (blas.isPresent()) {
            blas.get().threads(1);
        }
        int[][] shapes = {{4096, 1024}, {512, 1024}, {1024, 2048}, {3584, 1024}, {1024, 3584}};
        double ours = 0;
        double theirs = 0;
        for (int[] s : shapes) {
            int n = s[0];
            int in = s[1];
            LinearWeight w = BenchWeights.bf16(arena, n, in, n + in);
            float[] x = BenchWeights.pattern(m * in);
            float[] out = new float[m * n];
            double f = 2.0 * m * n * in;
            double[] t = times(reps, () -> k.matmul(out, 0, w, x, 0, m));
            double[] b = {Double.NaN, Double.NaN};
            if (blas.isPresent()) {
                MemorySegment wa = arena.allocate(4L * n * in, 64);
                HostTensor ht = ((LinearWeight.Dense) w).weight();
                for (long i = 0; i < (long) n * in; i++) {
                    wa.setAtIndex(ValueLayout.JAVA_FLOAT, i, ht.getFloat(i));
                }
                MemorySegment xa = arena.allocate(4L * m * in, 64);
                MemorySegment.copy(x, 0, xa, ValueLayout.JAVA_FLOAT, 0, m * in);
                MemorySegment c = arena.allocate(4L * m * n, 64);
                OpenBlas ob = blas.get();
                b = times(reps, () -> {
                    try {
                        ob.sgemmAbt(c, xa, wa, m, n, in);
                    } catch (Throwable e) {
                        throw new IllegalStateException(e);
                    }
                });
            }
            ours += t[0];
            theirs += b[0];
            System.out.printf("prefill %dx%d (%d rows): ours min %.1f GFLOP/s (median %.1f), openblas min %.1f"
                    + " (median %.1f), ratio of minima %.2f%n", n, in, m, f / t[0] / 1e9, f / t[1] / 1e9,
                    f / b[0] / 1e9, f / b[1] / 1e9, b[0] / t[0]);
        }
        System.out.printf("prefill total: ratio %.2f%n", theirs / ours);
    }

    /** {minimum, median} CPU seconds of the calling thread over {@code reps} runs after a warm-up. */
    private static double[] times(int reps, Runnable body) {
        long warm = MX.getCurrentThreadCpuTime();
        for (int i = 0; i < 2 || MX.getCurrentThreadCpuTime() - warm < 1_000_000_000L; i++) {
            body.run();
        }
        double[] s = new double[reps];
        for (int i = 0; i < reps; i++) {
            long t0 = MX.getCurrentThreadCpuTime();
            body.run();
            s[i] = (MX.getCurrentThreadCpuTime() - t0) / 1e9;
        }
        Arrays.sort(s);
        return new double[] {s[0], s[reps / 2]};
    }
}
