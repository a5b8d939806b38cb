package org.mtporacle.reference.bench;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.Consumer;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;
import org.mtporacle.api.DType;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.LinearWeight;
import org.mtporacle.reference.kernels.KernelMode;
import org.mtporacle.reference.kernels.Kernels;

/**
 * Measures the vector kernels against this machine's limits in one run: a STREAM-style read baseline (a vector sum
 * over a large off-heap buffer), BF16 and 4-bit mat-vec as a fraction of it, and prefill matmul at the
 * Qwen3.5-0.8B shapes in GFLOP/s beside OpenBLAS {@code cblas_sgemm} when {@code libopenblas.so.0} is present.
 * Every figure is the median of {@link BenchOptions#repetitions()} timed runs after at least 1.5 s of warm-up.
 */
public final class KernelBench {
    private static final VectorSpecies<Float> F = FloatVector.SPECIES_PREFERRED;
    private static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    /** {@code [out, in]} of the Qwen3.5-0.8B block linears: q (nH·2D), k, v, o, gate, up, down, fc. */
    private static final Map<String, int[]> PREFILL_SHAPES = shapes();

    private KernelBench() {
    }

    /** Runs every measurement; {@code progress} receives one line per step. */
    public static BenchReport run(BenchOptions options, Consumer<String> progress) {
        List<BenchReport.Row> rows = new ArrayList<>();
        List<String> notes = new ArrayList<>();
        String kernels;
        try (Kernels probe = new Kernels(KernelMode.VECTOR, 1); Arena arena = Arena.ofShared()) {
            kernels = probe.describe().replace(", 1 thread(s)", "");
            Map<Integer, Double> baseline = new TreeMap<>();
            MemorySegment buf = arena.allocate(options.baselineBytes(), 64);
            buf.fill((byte) 0x3C);
            for (int t : options.threads()) {
                progress.accept("read baseline, " + t + " thread(s)");
                double s = median(options.repetitions(), () -> readSum(buf, t));
                baseline.put(t, buf.byteSize() / s / 1e9);
                rows.add(new BenchReport.Row("read baseline " + (buf.byteSize() >> 20) + " MiB", t, s, "GB/s",
                        baseline.get(t), null, null));
            }
            int vocab = options.large() ? 248320 : 16384;
            List<LinearWeight> weights = List.of(bf16(arena, vocab, 1024), bf16(arena, options.large() ? 12288 : 4096,
                    4096), affine4(arena, vocab, 1024));
            List<String> names = List.of("bf16 mat-vec " + vocab + "x1024", "bf16 mat-vec "
                    + (options.large() ? 12288 : 4096) + "x4096", "4-bit g64 mat-vec " + vocab + "x1024");
            List<Double> targets = List.of(0.90, 0.90, 0.80);
            for (int t : options.threads()) {
                try (Kernels k = new Kernels(KernelMode.VECTOR, t)) {
                    for (int i = 0; i < weights.size(); i++) {
                        LinearWeight w = weights.get(i);
                        progress.accept(names.get(i) + ", " + t + " thread(s)");
                        float[] x = pattern(w.inFeatures());
                        float[] out = new float[w.outFeatures()];
                        double s = median(options.repetitions(), () -> k.matmul(out, 0, w, x, 0, 1));
                        double gbs = w.byteSize() / s / 1e9;
                        rows.add(new BenchReport.Row(names.get(i), t, s, "GB/s", gbs, gbs / baseline.get(t),
                                targets.get(i)));
                    }
                }
            }
            prefill(options, arena, rows, notes, progress);
        }
        return new BenchReport(kernels, System.getProperty("os.arch") + ", " + Runtime.getRuntime().availableProcessors()
                + " cpus", rows, notes);
    }

    private static void prefill(BenchOptions options, Arena arena, List<BenchReport.Row> rows, List<String> notes,
            Consumer<String> progress) {
        int m = options.prefillRows();
        Optional<OpenBlas> blas = options.openBlas() ? OpenBlas.load() : Optional.empty();
        if (options.openBlas() && blas.isEmpty()) {
            notes.add("OpenBLAS skipped: libopenblas.so.0 not found (apt-get install -y libopenblas-dev)");
        }
        if (blas.isPresent() && System.getenv("OPENBLAS_CORETYPE") == null) {
            notes.add("OPENBLAS_CORETYPE is unset; on AMD EPYC set OPENBLAS_CORETYPE=SkylakeX for the AVX-512 sgemm");
        }
        for (int t : options.threads()) {
            double ours = 0;
            double theirs = 0;
            double flops = 0;
            try (Kernels k = new Kernels(KernelMode.VECTOR, t)) {
                for (Map.Entry<String, int[]> e : PREFILL_SHAPES.entrySet()) {
                    int outF = e.getValue()[0];
                    int in = e.getValue()[1];
                    LinearWeight w = bf16(arena, outF, in);
                    float[] x = pattern(m * in);
                    float[] out = new float[m * outF];
                    double f = 2.0 * m * outF * in;
                    progress.accept("prefill " + e.getKey() + " " + m + "x" + in + "·" + in + "x" + outF + ", " + t
                            + " thread(s)");
                    double s = median(options.repetitions(), () -> k.matmul(out, 0, w, x, 0, m));
                    Double ratio = null;
                    if (blas.isPresent()) {
                        double b = sgemm(blas.get(), t, w, x, m, options.repetitions());
                        theirs += b;
                        ratio = (f / s) / (f / b);
                        rows.add(new BenchReport.Row("openblas sgemm " + e.getKey(), t, b, "GFLOP/s", f / b / 1e9,
                                null, null));
                    }
                    rows.add(new BenchReport.Row("prefill bf16 " + e.getKey() + " (" + m + " rows)", t, s, "GFLOP/s",
                            f / s / 1e9, ratio, ratio == null ? null : 0.6));
                    ours += s;
                    flops += f;
                }
            }
            Double ratio = blas.isPresent() ? theirs / ours : null;
            rows.add(new BenchReport.Row("prefill block total (8 linears)", t, ours, "GFLOP/s", flops / ours / 1e9,
                    ratio, ratio == null ? null : 0.6));
        }
    }

    private static double sgemm(OpenBlas blas, int threads, LinearWeight w, float[] x, int m, int reps) {
        int n = w.outFeatures();
        int k = w.inFeatures();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment wa = a.allocate(4L * n * k, 64);
            HostTensor t = ((LinearWeight.Dense) w).weight();
            for (long i = 0; i < (long) n * k; i++) {
                wa.setAtIndex(ValueLayout.JAVA_FLOAT, i, t.getFloat(i));
            }
            MemorySegment xa = a.allocate(4L * m * k, 64);
            MemorySegment.copy(x, 0, xa, ValueLayout.JAVA_FLOAT, 0, m * k);
            MemorySegment c = a.allocate(4L * m * n, 64);
            blas.threads(threads);
            return median(reps, () -> {
                try {
                    blas.sgemmAbt(c, xa, wa, m, n, k);
                } catch (Throwable e) {
                    throw new IllegalStateException("cblas_sgemm failed: " + e, e);
                }
            });
        } catch (Throwable e) {
            throw new IllegalStateException("bench: OpenBLAS comparison failed: " + e, e);
        }
    }

    /** The median wall time in seconds of {@code reps} runs after warm-up (≥ 3 runs and ≥ 1.5 s, for C2). */
    private static double median(int reps, Runnable body) {
        long start = System.nanoTime();
        for (int i = 0; i < 3 || System.nanoTime() - start < 1_500_000_000L; i++) {
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

    /** Sums the buffer as floats with 4 vector accumulators, split in contiguous slices over {@code threads}. */
    private static void readSum(MemorySegment buf, int threads) {
        long step = F.vectorByteSize() * 4L;
        long slice = buf.byteSize() / threads / step * step;
        try (ExecutorService pool = Executors.newFixedThreadPool(threads)) {
            List<Future<Float>> parts = new ArrayList<>();
            for (int p = 0; p < threads; p++) {
                long from = p * slice;
                long to = p == threads - 1 ? buf.byteSize() / step * step : from + slice;
                parts.add(pool.submit(() -> {
                    FloatVector a = FloatVector.zero(F), b = a, c = a, d = a;
                    int vb = F.vectorByteSize();
                    for (long o = from; o < to; o += step) {
                        a = a.add(FloatVector.fromMemorySegment(F, buf, o, ByteOrder.LITTLE_ENDIAN));
                        b = b.add(FloatVector.fromMemorySegment(F, buf, o + vb, ByteOrder.LITTLE_ENDIAN));
                        c = c.add(FloatVector.fromMemorySegment(F, buf, o + 2L * vb, ByteOrder.LITTLE_ENDIAN));
                        d = d.add(FloatVector.fromMemorySegment(F, buf, o + 3L * vb, ByteOrder.LITTLE_ENDIAN));
                    }
                    return a.add(b).add(c).add(d).reduceLanes(jdk.incubator.vector.VectorOperators.ADD);
                }));
            }
            for (Future<Float> f : parts) {
                if (Float.isNaN(f.get())) {
                    throw new IllegalStateException("bench: baseline sum is NaN");
                }
            }
        } catch (Exception e) {
            throw new IllegalStateException("bench: read baseline failed: " + e, e);
        }
    }

    private static float[] pattern(int n) {
        float[] v = new float[n];
        for (int i = 0; i < n; i++) {
            v[i] = ((i * 2654435761L >>> 8) % 2001 - 1000) / 1000f;
        }
        return v;
    }

    /** A BF16 {@code [out, in]} weight off-heap, values in (−1, 1). */
    private static LinearWeight bf16(Arena arena, int out, int in) {
        MemorySegment seg = arena.allocate(2L * out * in, 64);
        fillShorts(seg, i -> (short) (((i * 2654435761L >>> 7) & 0x807F) | 0x3E00));
        return new LinearWeight.Dense(HostTensor.view(DType.BF16, new int[] {out, in}, seg));
    }

    /** A 4-bit group-64 affine {@code [out, in]} weight off-heap with BF16 scales and biases. */
    private static LinearWeight affine4(Arena arena, int out, int in) {
        MemorySegment codes = arena.allocate((long) out * in / 2, 64);
        for (long i = 0; i < codes.byteSize(); i += 4) {
            codes.set(ValueLayout.JAVA_INT_UNALIGNED, i, (int) (i * 2654435761L));
        }
        int groups = in / 64;
        MemorySegment scales = arena.allocate(2L * out * groups, 64);
        MemorySegment biases = arena.allocate(2L * out * groups, 64);
        fillShorts(scales, i -> (short) 0x3C00);
        fillShorts(biases, i -> (short) 0xBD00);
        return new LinearWeight.Affine(HostTensor.view(DType.U32, new int[] {out, in / 8}, codes),
                HostTensor.view(DType.BF16, new int[] {out, groups}, scales),
                HostTensor.view(DType.BF16, new int[] {out, groups}, biases), 4, 64);
    }

    private interface ShortPattern {
        short at(long index);
    }

    /** Fills with a 64 KiB pattern, copied over the segment (fast for GiB-sized weights). */
    private static void fillShorts(MemorySegment seg, ShortPattern p) {
        long n = seg.byteSize() / 2;
        long block = Math.min(n, 1 << 15);
        for (long i = 0; i < block; i++) {
            seg.setAtIndex(I16, i, p.at(i));
        }
        for (long at = block; at < n; at += block) {
            MemorySegment.copy(seg, 0, seg, 2 * at, 2 * Math.min(block, n - at));
        }
    }

    private static Map<String, int[]> shapes() {
        Map<String, int[]> m = new java.util.LinkedHashMap<>();
        m.put("q_proj 4096x1024", new int[] {4096, 1024});
        m.put("k_proj 512x1024", new int[] {512, 1024});
        m.put("v_proj 512x1024", new int[] {512, 1024});
        m.put("o_proj 1024x2048", new int[] {1024, 2048});
        m.put("gate_proj 3584x1024", new int[] {3584, 1024});
        m.put("up_proj 3584x1024", new int[] {3584, 1024});
        m.put("down_proj 1024x3584", new int[] {1024, 3584});
        m.put("fc 1024x2048", new int[] {1024, 2048});
        return m;
    }

    /** Runs the full benchmark ({@code --quick} for a smoke run) and prints the table, then the JSON. */
    public static void main(String[] args) {
        BenchOptions o = Arrays.asList(args).contains("--quick") ? BenchOptions.quick() : BenchOptions.defaults();
        BenchReport r = run(o, line -> System.err.println("… " + line));
        System.out.println(r.toTable());
        System.out.println(r.toJson());
    }
}
