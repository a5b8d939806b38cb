package org.mtporacle.mlx;

import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MtpConfig;
import org.mtporacle.api.TargetConfig;
import org.mtporacle.api.TargetModel;
import org.mtporacle.api.TargetRows;
import org.mtporacle.mlx.ffi.MlxC;
import org.mtporacle.mlx.handle.MlxArray;
import org.mtporacle.mlx.handle.MlxCudaKernel;
import org.mtporacle.mlx.handle.MlxDiscovery;
import org.mtporacle.mlx.handle.MlxLibrary;
import org.mtporacle.mlx.handle.MlxOps;
import org.mtporacle.mlx.handle.MlxScope;
import org.mtporacle.mlx.handle.MlxStream;
import org.mtporacle.reference.fixture.TargetFixtures;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The MLX target's verify step on real target shapes with synthetic bf16 weights made on the device by MLX's random
 * ops (nothing of that size passes through Java), against the HBM floor measured in the same run: weight bytes a
 * verify reads (every layer's products and the head, f32 as precision=native keeps it) over the device's copy
 * bandwidth. Per preset, four paths — compile off and on, each with the GDN recurrence as MLX ops and as the fused CUDA
 * kernel ({@link MlxGdnKernel}; skipped, with the reason printed, where it cannot run) — at B = 1 and 8, each for
 * every pipeline of the fifth argument (the forward evaluated at once, 0, or in pieces of so many layers: {@link
 * MlxTarget#pipelineLayers}; default: 0 and the backend's default): a verify of {@code d+1 = 4} tokens after a 16-token prefill, {@code rounds} timed verifies after
 * {@value #WARMUPS} warm-ups, each followed by a commit of one draft. Per row: the verify's median, p10–p90 and min–max;
 * its phases (medians): "build", host time outside MLX's evaluations (graph building through FFM, compiled-layer
 * replays, Java copies of the results); "async", inside {@code mlx_async_eval}; "eval", inside {@code mlx_eval}
 * (MLX's launches, then the wait for the device); "read", the host read of logits and taps; "on device", the verify
 * less its read (what an engine that samples on the device would wait for); "ops", the graph nodes the backend
 * builds from Java per verify (a compiled layer counts as its replay); "launches", CUDA kernel launches per verify
 * and per commit counted by CUPTI ({@link CudaLaunchCounter}, {@code MTP_CUPTI_LIBRARY}) on one extra round after
 * the timed ones. Before the table, per preset: the host read of a verify's logits and taps at B = 1 and 8, freshly
 * written on the device, with one thread and with {@link org.mtporacle.mlx.handle.MlxOps#READ_THREADS}. Unless
 * {@code -Dmtp.bench.checks=false}, on a GPU that can run the kernel, it runs {@link MlxGdnKernelTest} (kernel against
 * f64 by hand), checks the kernel against the ops recurrence at each preset's GDN shape (B = 8, S = 4 with every
 * state, S = 1 last state only; bound {@link #KERNEL_NMSE}) and the first preset's whole verify in precision=f32 on
 * f32 synthetic weights, kernel path against ops path (bound {@link #F32_LOGITS_NMSE}); pipelined verifies must give
 * the same logits bit for bit as the unpipelined ones; a failure prints FAILED and exits 1. In bf16 it prints each
 * kernel path's first verify logits against the ops path's, beside a control of the same kind (row 0 at B = 8 against
 * B = 1, ops: only GEMM shapes differ): on random 64-layer bf16 weights any f32 reordering reaches the logits at about
 * that size, so neither is a bound. The floor divides by the best copy bandwidth measured in the whole run (each
 * target measures its own; the spread between processes and targets is 2.5–3.4 TB/s).
 *
 * <pre>  MlxTargetBench [presets, comma-separated] [rounds] [gpu|cpu] [paths: all | off:ops,on:kernel,… (compile:gdn)]
 *                 [pipelines, comma-separated layer counts, e.g. 0,1]</pre>
 */
public final class MlxTargetBench {
    private static final int WIDTH = 4;
    /** The largest NMSE the fused kernel may show against the ops recurrence (both f32; measured ≈ 1e-13). */
    static final double KERNEL_NMSE = 1e-9;
    /** The largest verify-logits NMSE between the kernel and ops paths in precision=f32 (only summation order differs). */
    static final double F32_LOGITS_NMSE = 1e-6;

    private MlxTargetBench() {
    }

    private static boolean failed;

    public static void main(String[] args) {
        String[] presets = (args.length > 0 ? args[0] : "qwen3.5-0.8b-target,qwen3.5-27b-target").split(",");
        int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 20;
        boolean gpu = !(args.length > 2 && args[2].equals("cpu"));
        // paths "off:ops,on:kernel,…" (compile:gdn); "all" or absent: every path that can run
        List<String> paths = args.length > 3 && !args[3].equals("all") ? List.of(args[3].split(",")) : null;
        int[] pipes = Arrays.stream((args.length > 4 ? args[4] : "0," + MlxTarget.PIPELINE_LAYERS).split(","))
                .mapToInt(Integer::parseInt).distinct().toArray();
        boolean checks = !"false".equals(System.getProperty("mtp.bench.checks"));
        MlxLibrary lib = MlxLibrary.load(MlxDiscovery.fromEnvironment());
        String why;
        try (MlxStream st = MlxStream.open(lib, gpu)) {
            why = MlxCudaKernel.unavailable(lib, st);
        }
        if (why != null) {
            System.out.println("gdn kernel: skipped (" + why + "); only the ops paths run");
        } else if (checks) {
            junit(MlxGdnKernelTest.class);
            for (String p : presets) {
                kernelCheck(lib, TargetFixtures.preset(p.trim()).config().gdn());
            }
        }
        if (why == null && checks) {
            f32Check(lib, TargetFixtures.preset(presets[0].trim()));
        }
        for (String p : presets) {
            readCheck(lib, p.trim(), TargetFixtures.preset(p.trim()).config(), gpu, checks ? 10 : 20);
        }
        CudaLaunchCounter counter = gpu ? CudaLaunchCounter.open() : null;
        List<Row> rows = new ArrayList<>();
        List<String> detail = new ArrayList<>();
        for (String p : presets) {
            Map<String, float[]> logits = new HashMap<>();
            for (boolean kernel : why == null ? new boolean[] {false, true} : new boolean[] {false}) {
                for (boolean compile : new boolean[] {false, true}) {
                    if (paths == null || paths.contains((compile ? "on" : "off") + ":" + (kernel ? "kernel" : "ops"))) {
                        run(lib, TargetFixtures.preset(p.trim()), compile, kernel, rounds, pipes, gpu, counter, logits,
                                rows, detail);
                    }
                }
            }
        }
        double best = rows.stream().mapToDouble(Row::bandwidth).max().orElse(Double.NaN);
        System.out.printf("%nverify of W=4 tokens; times in ms over %d timed rounds (after %d warm-ups): median, "
                + "p10–p90 and min–max of the whole verify (contract: f32 logits and taps on the host); \"on device\": "
                + "the same verify less its host read (the logits and taps resident on the device, as an engine that "
                + "samples there would have them); build: host time outside MLX's eval calls (graph building through "
                + "FFM, compiled-layer replays); async: inside mlx_async_eval (scheduling and launching the pipelined "
                + "layers); eval: inside mlx_eval (the rest's launches, then the wait for the device); read: the host "
                + "read. Floor at the run's best copy bandwidth, %.1f GB/s.%n", rounds, WARMUPS, best / 1e9);
        System.out.println("| preset | compile | gdn | pipeline | B | verify ms (median) | p10–p90 | min–max | on device "
                + "(median) | build | async | eval | read | commit ms | ops/verify | launches/verify | "
                + "launches/commit | weight GB | copy GB/s (this target) | floor ms | × floor | × floor on device |");
        System.out.println("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
        for (Row r : rows) {
            double floorMs = r.bytes() / best * 1e3;
            System.out.printf("%s %.1f | %.2f | %.2f | %.2f |%n", r.text(), r.bandwidth() / 1e9, floorMs,
                    r.medianMs() / floorMs, r.deviceMs() / floorMs);
        }
        detail.forEach(System.out::println);
        if (counter != null) {
            counter.close();
        }
        if (failed) {
            System.out.println("FAILED: a kernel or pipeline check failed (lines above)");
            System.exit(1);
        }
    }

    private static final int WARMUPS = 5;

    /**
     * What a verify's host read costs at {@code c}'s shapes: an f32 array of a verify's logits and taps
     * ({@code B·4·V + 2·B·4·H} values, B = 1 and 8), freshly written on the device each time, read into Java arrays
     * with one thread and with {@link MlxOps#READ_THREADS}; median of {@code n}.
     */
    private static void readCheck(MlxLibrary lib, String name, TargetConfig c, boolean gpu, int n) {
        try (MlxStream st = MlxStream.open(lib, gpu)) {
            lib.thread().call(() -> {
                int v = c.shape().vocabSize();
                int h = c.shape().hiddenSize();
                for (int b : new int[] {1, 8}) {
                    int logits = b * WIDTH * v;
                    int taps = b * WIDTH * h;
                    StringBuilder line = new StringBuilder(String.format("host read, %s B=%d (%.1f MB f32):",
                            name, b, (logits + 2.0 * taps) * 4 / 1e6));
                    for (int threads : new int[] {1, MlxOps.READ_THREADS}) {
                        double[] ms = new double[n];
                        for (int r = -2; r < n; r++) {
                            try (MlxScope scope = new MlxScope(lib)) {
                                MlxOps ops = new MlxOps(st, scope);
                                MlxArray a = ops.uniform(ops.fromUints(new int[] {20261203, r + 100 * threads}, 2),
                                        logits + 2 * taps);
                                ops.eval(a);
                                long t0 = System.nanoTime();
                                ops.toFloatParts(a, threads, new int[] {logits, taps, taps});
                                if (r >= 0) {
                                    ms[r] = (System.nanoTime() - t0) / 1e6;
                                }
                            }
                        }
                        Arrays.sort(ms);
                        line.append(String.format(" %d thread%s %.2f ms (min %.2f, max %.2f, %.1f GB/s);", threads,
                                threads == 1 ? "" : "s", ms[n / 2], ms[0], ms[n - 1],
                                (logits + 2.0 * taps) * 4 / ms[n / 2] / 1e6));
                    }
                    System.out.println(line);
                }
                return null;
            });
        }
    }

    /** Runs a JUnit class (here: the GPU-only kernel test against f64) and prints its counts and failures. */
    private static void junit(Class<?> test) {
        org.junit.platform.launcher.listeners.SummaryGeneratingListener listener =
                new org.junit.platform.launcher.listeners.SummaryGeneratingListener();
        org.junit.platform.launcher.core.LauncherFactory.create().execute(
                org.junit.platform.launcher.core.LauncherDiscoveryRequestBuilder.request().selectors(
                        org.junit.platform.engine.discovery.DiscoverySelectors.selectClass(test)).build(), listener);
        org.junit.platform.launcher.listeners.TestExecutionSummary s = listener.getSummary();
        s.printFailuresTo(new java.io.PrintWriter(System.out, true), 20);
        System.out.printf("%s: %d tests, %d passed, %d failed, %d skipped%n", test.getSimpleName(),
                s.getTestsFoundCount(), s.getTestsSucceededCount(), s.getTestsFailedCount(),
                s.getTestsAbortedCount() + s.getTestsSkippedCount());
        failed |= s.getTestsFailedCount() > 0;
    }

    /** The fused recurrence against the ops one on random f32 inputs of shape {@code g}; prints the NMSE. */
    private static void kernelCheck(MlxLibrary lib, TargetConfig.Gdn g) {
        try (MlxStream st = MlxStream.open(lib, true)) {
            lib.thread().call(() -> {
                try (MlxScope scope = new MlxScope(lib); MlxGdnKernel kernel = new MlxGdnKernel(lib, g)) {
                    MlxOps ops = new MlxOps(st, scope);
                    List<AutoCloseable> made = new ArrayList<>();
                    MlxArray group = MlxGdn.groups(ops, g, made);
                    int b = 8;
                    int hv = g.numValueHeads();
                    int hk = g.numKeyHeads();
                    int dk = g.keyHeadDim();
                    int dv = g.valueHeadDim();
                    for (int s : new int[] {4, 1}) {
                        boolean every = s > 1;
                        int[] key = {7 + s};
                        java.util.function.Function<int[], MlxArray> rnd = shape -> ops.uniform(
                                ops.fromUints(new int[] {20261202, key[0]++}, 2), shape);
                        float qs = (float) (1 / Math.sqrt(dk));
                        MlxArray state = ops.multiply(rnd.apply(new int[] {b, hv, dk, dv}), c(ops, 0.5f));
                        MlxArray q = ops.multiply(ops.subtract(rnd.apply(new int[] {b, s, hk, dk}), c(ops, 0.5f)),
                                c(ops, 2 * qs));
                        MlxArray k = ops.multiply(ops.subtract(rnd.apply(new int[] {b, s, hk, dk}), c(ops, 0.5f)),
                                c(ops, 2 * qs));
                        MlxArray conv = ops.subtract(rnd.apply(new int[] {b, s, g.convDim()}), c(ops, 0.5f));
                        MlxArray alpha = rnd.apply(new int[] {b, s, hv});
                        MlxArray beta = rnd.apply(new int[] {b, s, hv});
                        ops.evalAll(List.of(state, q, k, conv, alpha, beta));
                        MlxGdn.Recurrence want = MlxGdn.recurrence(ops, g, group, null, state, q, k, conv, alpha, beta,
                                every);
                        MlxGdn.Recurrence got = MlxGdn.recurrence(ops, g, group, kernel, state, q, k, conv, alpha,
                                beta, every);
                        double out = nmse(ops.toFloats(ops.contiguous(got.out())),
                                ops.toFloats(ops.contiguous(want.out())));
                        double last = nmse(ops.toFloats(ops.contiguous(got.last())),
                                ops.toFloats(ops.contiguous(want.last())));
                        double all = every ? nmse(ops.toFloats(ops.contiguous(got.every())),
                                ops.toFloats(ops.contiguous(want.every()))) : 0;
                        boolean ok = out <= KERNEL_NMSE && last <= KERNEL_NMSE && all <= KERNEL_NMSE;
                        failed |= !ok;
                        System.out.printf("gdn kernel check Hv=%d Hk=%d Dk=%d Dv=%d B=%d S=%d%s: NMSE out %.3g, last "
                                        + "state %.3g%s — %s (bound %.0e)%n", hv, hk, dk, dv, b, s,
                                every ? " every" : "", out, last, every ? String.format(", every state %.3g", all) : "",
                                ok ? "ok" : "FAILED", KERNEL_NMSE);
                    }
                    for (AutoCloseable a : made) {
                        a.close();
                    }
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
                return null;
            });
        }
    }

    private static MlxArray c(MlxOps ops, float v) {
        return ops.fromFloats(new float[] {v}, 1);
    }

    /** Σ(got − want)² / Σ want², in f64. */
    static double nmse(float[] got, float[] want) {
        if (got.length != want.length) {
            throw new IllegalArgumentException("nmse: " + got.length + " against " + want.length + " values");
        }
        double num = 0;
        double den = 0;
        for (int i = 0; i < got.length; i++) {
            double d = (double) got[i] - want[i];
            num += d * d;
            den += (double) want[i] * want[i];
        }
        return den == 0 ? (num == 0 ? 0 : Double.POSITIVE_INFINITY) : num / den;
    }

    /** One line of the table less its last three columns (bandwidth, floor, ratio: known after every path ran). */
    private record Row(String text, double medianMs, double deviceMs, long bytes, double bandwidth) {
    }

    /**
     * The end-to-end check of the kernel in f32 (precision=f32 on synthetic f32 weights, compile off, B = 8): verify
     * logits of the kernel path against the ops path, where only f32 summation order differs; bound
     * {@link #F32_LOGITS_NMSE}.
     */
    private static void f32Check(MlxLibrary lib, TargetFixtures.Preset p) {
        TargetConfig c = p.config();
        TargetModel model = new TargetModel(c, null, "synthetic-" + p.name(), "MlxTargetBench", "qwen3_5", List.of());
        float[][] out = new float[2][];
        for (int k = 0; k < 2; k++) {
            boolean kernel = k == 1;
            try (MlxTarget t = new MlxTarget(model, lib, MlxStream.open(lib, true), MlxDraftModel.Precision.F32,
                    MlxC.MLX_FLOAT32, false, (ops, dt) -> synthetic(ops, c, new long[1], false, kernel, dt));
                 TargetRows g = t.openRows(Collections.nCopies(8, null))) {
                g.prefill(tokens(8, 16, c.shape().vocabSize(), 1));
                out[k] = g.verify(tokens(8, WIDTH, c.shape().vocabSize(), 100)).logits().toFloatArray();
            }
        }
        double e = nmse(out[1], out[0]);
        boolean ok = e <= F32_LOGITS_NMSE;
        failed |= !ok;
        System.out.printf("gdn kernel vs ops, %s precision=f32 B=8 W=4 verify logits NMSE %.3g — %s (bound %.0e)%n",
                p.name(), e, ok ? "ok" : "FAILED", F32_LOGITS_NMSE);
    }

    private static void run(MlxLibrary lib, TargetFixtures.Preset p, boolean compile, boolean kernel, int rounds,
                            int[] pipes, boolean gpu, CudaLaunchCounter counter, Map<String, float[]> logits,
                            List<Row> rows, List<String> detail) {
        TargetConfig c = p.config();
        TargetModel model = new TargetModel(c, null, "synthetic-" + p.name(), "MlxTargetBench", "qwen3_5", List.of());
        long[] bytes = new long[1];
        try (MlxTarget t = new MlxTarget(model, lib, MlxStream.open(lib, gpu), MlxDraftModel.Precision.NATIVE,
                MlxC.MLX_BFLOAT16, compile, (ops, dt) -> synthetic(ops, c, bytes, compile, kernel, dt))) {
            double bw = t.copyBytesPerSecond(gpu ? 1L << 30 : 1L << 26, 10);
            for (int b : new int[] {1, 8}) {
                for (int pipe : pipes) {
                    t.pipelineLayers(pipe);
                    double[] verify = new double[rounds];
                    double[] device = new double[rounds];
                    double[] build = new double[rounds];
                    double[] async = new double[rounds];
                    double[] eval = new double[rounds];
                    double[] read = new double[rounds];
                    double[] commit = new double[rounds];
                    long ops = 0;
                    CudaLaunchCounter.Counts cv = null;
                    CudaLaunchCounter.Counts cc = null;
                    String key = p.name() + " compile=" + compile + " B=" + b;
                    try (TargetRows g = t.openRows(Collections.nCopies(b, null))) {
                        g.prefill(tokens(b, 16, c.shape().vocabSize(), 1));
                        for (int r = -WARMUPS; r <= rounds; r++) { // warm-ups (traces, kernel JIT); the last is counted
                            boolean count = r == rounds;
                            if (count && counter == null) {
                                break;
                            }
                            HostTensor v = tokens(b, WIDTH, c.shape().vocabSize(), 100 + r);
                            if (count) {
                                counter.take();
                                counter.counting(true);
                            }
                            long o0 = lib.operations();
                            long e0 = lib.evalNanos();
                            long a0 = lib.asyncEvalNanos();
                            long d0 = lib.readNanos();
                            long t0 = System.nanoTime();
                            org.mtporacle.api.TargetOutput out = g.verify(v);
                            long t1 = System.nanoTime();
                            long d1 = lib.readNanos();
                            long a1 = lib.asyncEvalNanos();
                            long e1 = lib.evalNanos();
                            long o1 = lib.operations();
                            if (count) {
                                counter.counting(false);
                                cv = counter.take();
                                counter.counting(true);
                            }
                            int[] acc = new int[b];
                            Arrays.fill(acc, 1);
                            g.commit(acc);
                            long t2 = System.nanoTime();
                            if (count) {
                                counter.counting(false);
                                cc = counter.take();
                            }
                            if (r == 0 && pipe == pipes[0]) {
                                compare(out.logits().toFloatArray(), p, compile, kernel, b, key, logits, detail);
                                logits.put(key + " gdn=" + kernel + " first pipeline", out.logits().toFloatArray());
                            } else if (r == 0) { // pipelining evaluates the same graph in pieces: the same bits
                                float[] first = logits.get(key + " gdn=" + kernel + " first pipeline");
                                float[] l = out.logits().toFloatArray();
                                boolean same = Arrays.equals(first, l);
                                failed |= !same;
                                detail.add(String.format("pipeline=%d vs %d, %s gdn=%s: verify logits %s", pipe,
                                        pipes[0], key, kernel ? "kernel" : "ops", same ? "bit-identical — ok"
                                                : "differ, NMSE " + nmse(l, first) + " — FAILED"));
                            }
                            if (r >= 0 && r < rounds) {
                                verify[r] = (t1 - t0) / 1e6;
                                read[r] = (d1 - d0) / 1e6;
                                device[r] = verify[r] - read[r];
                                async[r] = (a1 - a0) / 1e6;
                                eval[r] = (e1 - e0) / 1e6;
                                build[r] = verify[r] - read[r] - async[r] - eval[r];
                                commit[r] = (t2 - t1) / 1e6;
                                ops = o1 - o0;
                            }
                        }
                    }
                    double med = median(verify);
                    rows.add(new Row(String.format("| %s | %s | %s | %d | %d | %.2f | %.2f–%.2f | %.2f–%.2f | %.2f | "
                                    + "%.2f | %.2f | %.2f | %.2f | %.2f | %d | %s | %s | %.2f |", p.name(),
                            compile ? "on" : "off", kernel ? "kernel" : "ops", pipe, b, med, verify[(int) (rounds * 0.1)],
                            verify[(int) (rounds * 0.9)], verify[0], verify[rounds - 1], median(device), median(build),
                            median(async), median(eval), median(read), median(commit), ops,
                            cv == null ? "n/a" : Long.toString(cv.launches()),
                            cc == null ? "n/a" : Long.toString(cc.launches()), bytes[0] / 1e9), med, median(device),
                            bytes[0], bw));
                    if (cv != null) {
                        detail.add(String.format("launches, %s gdn=%s pipeline=%d: verify %d (runtime-API launches %d, "
                                        + "driver calls %d), commit %d; verify's driver calls %s; verify's kernels %s",
                                key, kernel ? "kernel" : "ops", pipe, cv.launches(), cv.runtimeLaunches(),
                                cv.driverCalls(), cc.launches(), cv.byFunction(), top(cv.byKernel(), 14)));
                    }
                }
            }
        }
    }

    /** Sorts {@code a} (in place) and returns its middle value. */
    private static double median(double[] a) {
        Arrays.sort(a);
        return a[a.length / 2];
    }

    /** The first timed verify's logits against the ops path's (bf16: printed, not bounded), and the B = 8 control. */
    private static void compare(float[] l, TargetFixtures.Preset p, boolean compile, boolean kernel, int b, String key,
                                Map<String, float[]> logits, List<String> detail) {
        float[] base = logits.get(key);
        if (!kernel) {
            logits.put(key, l);
            float[] one = logits.get(p.name() + " compile=" + compile + " B=1");
            if (b == 8 && one != null) { // row 0 has the same tokens at B = 1 and 8
                detail.add(String.format("control, %s compile=%s gdn=ops: row 0's verify logits at B=8 against B=1 "
                        + "(other GEMM shapes, same math) NMSE %.3g", p.name(), compile,
                        nmse(Arrays.copyOf(l, one.length), one)));
            }
        } else if (base != null) {
            detail.add(String.format("gdn kernel vs ops, %s (bf16): verify logits NMSE %.3g", key, nmse(l, base)));
        }
    }

    /** The {@code n} most frequent entries, most frequent first. */
    private static String top(Map<String, Long> m, int n) {
        return m.entrySet().stream().sorted(Map.Entry.<String, Long>comparingByValue().reversed()).limit(n)
                .map(e -> e.getValue() + "× " + e.getKey()).toList().toString();
    }

    private static HostTensor tokens(int b, int n, int vocab, long seed) {
        java.util.SplittableRandom rnd = new java.util.SplittableRandom(seed);
        int[][] rows = new int[b][n];
        for (int[] row : rows) {
            for (int i = 0; i < n; i++) {
                row[i] = rnd.nextInt(vocab);
            }
        }
        return HostTensor.ofIntRows(rows);
    }

    /** Every part of {@code c}'s target with random weights made on the device; adds the bytes a verify reads. */
    private static MlxTarget.Parts synthetic(MlxOps ops, TargetConfig c, long[] bytes, boolean compile,
                                             boolean kernel, int dt) {
        MtpConfig a = c.shape();
        TargetConfig.Gdn g = c.gdn();
        int h = a.hiddenSize();
        int inter = a.intermediateSize();
        Gen gen = new Gen(ops, dt);
        List<AutoCloseable> made = new ArrayList<>();
        Object[] layers = new Object[c.layerCount()];
        MlxGdnKernel gdnKernel = kernel ? MlxTarget.gdnKernel(ops, c, true) : null;
        for (int l = 0; l < layers.length; l++) {
            MlxArray in = gen.constant(h, 1f, MlxC.MLX_FLOAT32);
            MlxArray post = gen.constant(h, 1f, MlxC.MLX_FLOAT32);
            MlxTargetMlp mlp = new MlxTargetMlp(MlxStack.of(gen.dense(2 * inter, h, bytes), inter, inter),
                    gen.dense(h, inter, bytes), null);
            if (c.layers().get(l) == TargetConfig.LayerType.LINEAR_ATTENTION) {
                int ch = g.convDim();
                int hv = g.numValueHeads();
                MlxStack proj = MlxStack.of(gen.dense(ch + g.valueDim() + 2 * hv, h, bytes), ch, g.valueDim(), hv, hv);
                MlxArray[] taps = new MlxArray[g.convKernel()];
                for (int j = 0; j < taps.length; j++) {
                    taps[j] = gen.constant(ch, 0.25f, MlxC.MLX_FLOAT32);
                }
                MlxArray[] gains = MlxGdn.gains(ops, g, made);
                layers[l] = new MlxGdn(c, in, post, proj, taps, gen.constant(hv, -1f, MlxC.MLX_FLOAT32),
                        gen.constant(hv, 0f, MlxC.MLX_FLOAT32), gen.constant(g.valueHeadDim(), 1f, MlxC.MLX_FLOAT32),
                        gains[0], gains[1], MlxGdn.groups(ops, g, made), gen.dense(h, g.valueDim(), bytes), mlp,
                        gen.constant(1, MlxGdn.SOFTPLUS_THRESHOLD, MlxC.MLX_FLOAT32), dt,
                        compile, gdnKernel);
            } else {
                int q = 2 * a.numHeads() * a.headDim();
                int kv = a.numKvHeads() * a.headDim();
                layers[l] = new MlxTargetAttention(a, in, post, gen.constant(a.headDim(), 1f, dt),
                        gen.constant(a.headDim(), 1f, dt), MlxStack.of(gen.dense(q + 2 * kv, h, bytes),
                        q, kv, kv), gen.dense(h, a.numHeads() * a.headDim(), bytes), mlp, dt);
            }
        }
        MlxLinear embedding = gen.dense(a.vocabSize(), h, null);
        long[] headBytes = new long[1];
        MlxLinear head = gen.denseAs(a.vocabSize(), h, MlxC.MLX_FLOAT32, headBytes);
        bytes[0] += headBytes[0];
        return new MlxTarget.Parts(layers, embedding, head, gen.constant(h, 1f, MlxC.MLX_FLOAT32),
                new MlxRope(ops, a), gdnKernel);
    }

    /** Random device tensors, each made in a scope of its own (its f32 draw freed before the next). */
    private static final class Gen {
        private final MlxOps ops;
        private int key;

        private final int dtype;

        Gen(MlxOps ops, int dtype) {
            this.dtype = dtype;
            this.ops = ops;
        }

        MlxLinear dense(int out, int in, long[] bytes) {
            return denseAs(out, in, dtype, bytes);
        }

        /** {@code [out, in]} uniform in ±√(3/in) (unit-variance outputs for unit inputs), as {@code dtype}. */
        MlxLinear denseAs(int out, int in, int dtype, long[] bytes) {
            MlxLibrary lib = ops.library();
            try (MlxScope s = new MlxScope(lib)) {
                MlxOps o = new MlxOps(ops.stream(), s);
                MlxArray u = o.uniform(o.fromUints(new int[] {20261201, key++}, 2), out, in);
                float scale = (float) Math.sqrt(3.0 / in);
                MlxArray w = o.astype(o.multiply(o.subtract(o.multiply(u, o.fromFloats(new float[] {2f}, 1)),
                        o.fromFloats(new float[] {1f}, 1)), o.fromFloats(new float[] {scale}, 1)), dtype);
                MlxArray wt = o.transpose(w, 1, 0);
                o.eval(w);
                o.eval(wt);
                if (bytes != null) {
                    bytes[0] += (long) out * in * (dtype == MlxC.MLX_FLOAT32 ? 4 : 2);
                }
                return new MlxLinear.Dense(s.release(w), s.release(wt));
            }
        }

        MlxArray constant(int n, float value, int dtype) {
            float[] v = new float[n];
            Arrays.fill(v, value);
            MlxArray a = ops.fromFloats(v, n);
            MlxArray x = a.dtype() == dtype ? a : ops.astype(a, dtype);
            ops.eval(x);
            return ops.scope().release(x);
        }
    }
}
