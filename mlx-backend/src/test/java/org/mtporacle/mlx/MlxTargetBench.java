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
 * kernel ({@link MlxGdnKernel}; skipped, with the reason printed, where it cannot run) — at B = 1 and 8: a verify of
 * {@code d+1 = 4} tokens after a 16-token prefill, median of {@code rounds} (each followed by a commit of one draft).
 * Columns: "host ms", the median of the verify's wall time less the time spent inside {@code mlx_eval} (graph
 * building through FFM, the host read's copy); "ops", the graph nodes the backend builds from Java per verify (a
 * compiled layer counts as its replay); "launches", CUDA kernel launches per verify and per commit counted by CUPTI
 * ({@link CudaLaunchCounter}, {@code MTP_CUPTI_LIBRARY}) on one extra round after the timed ones. Before the table, on
 * a GPU that can run the kernel, it checks the kernel against the ops recurrence at each preset's GDN shape (B = 8,
 * S = 4 with every state, S = 1 last state only), and every kernel path's first verify logits against the ops path's
 * (same weights, same tokens): NMSE printed, and a failure line (exit 1) over {@link #KERNEL_NMSE}.
 *
 * <pre>  MlxTargetBench [presets, comma-separated] [rounds] [device]</pre>
 */
public final class MlxTargetBench {
    private static final int WIDTH = 4;
    /** The largest NMSE the fused kernel may show against the ops recurrence (both f32; measured ≈ 1e-13). */
    static final double KERNEL_NMSE = 1e-9;
    /** The largest verify-logits NMSE between the kernel and ops paths (bf16 products downstream; see the docs). */
    static final double LOGITS_NMSE = 1e-3;

    private MlxTargetBench() {
    }

    private static boolean failed;

    public static void main(String[] args) {
        String[] presets = (args.length > 0 ? args[0] : "qwen3.5-0.8b-target,qwen3.5-27b-target").split(",");
        int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 20;
        boolean gpu = !(args.length > 2 && args[2].equals("cpu"));
        MlxLibrary lib = MlxLibrary.load(MlxDiscovery.fromEnvironment());
        String why;
        try (MlxStream st = MlxStream.open(lib, gpu)) {
            why = MlxCudaKernel.unavailable(lib, st);
        }
        if (why != null) {
            System.out.println("gdn kernel: skipped (" + why + "); only the ops paths run");
        } else {
            junit(MlxGdnKernelTest.class);
            for (String p : presets) {
                kernelCheck(lib, TargetFixtures.preset(p.trim()).config().gdn());
            }
        }
        CudaLaunchCounter counter = gpu ? CudaLaunchCounter.open() : null;
        List<String> rows = new ArrayList<>();
        List<String> detail = new ArrayList<>();
        for (String p : presets) {
            Map<String, float[]> logits = new HashMap<>();
            for (boolean kernel : why == null ? new boolean[] {false, true} : new boolean[] {false}) {
                for (boolean compile : new boolean[] {false, true}) {
                    run(lib, TargetFixtures.preset(p.trim()), compile, kernel, rounds, gpu, counter, logits, rows,
                            detail);
                }
            }
        }
        System.out.println("| preset | compile | gdn | B | verify W=4 ms (median) | p90 ms | host ms | commit ms "
                + "| ops/verify | launches/verify | launches/commit | weight GB | copy GB/s | floor ms | × floor |");
        System.out.println("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
        rows.forEach(System.out::println);
        detail.forEach(System.out::println);
        if (counter != null) {
            counter.close();
        }
        if (failed) {
            System.out.println("FAILED: a kernel check is over its bound (lines above)");
            System.exit(1);
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

    private static void run(MlxLibrary lib, TargetFixtures.Preset p, boolean compile, boolean kernel, int rounds,
                            boolean gpu, CudaLaunchCounter counter, Map<String, float[]> logits, List<String> rows,
                            List<String> detail) {
        TargetConfig c = p.config();
        TargetModel model = new TargetModel(c, null, "synthetic-" + p.name(), "MlxTargetBench", "qwen3_5", List.of());
        long[] bytes = new long[1];
        try (MlxTarget t = new MlxTarget(model, lib, MlxStream.open(lib, gpu), MlxDraftModel.Precision.NATIVE,
                MlxC.MLX_BFLOAT16, compile, (ops, dt) -> synthetic(ops, c, bytes, compile, kernel))) {
            double bw = t.copyBytesPerSecond(gpu ? 1L << 30 : 1L << 26, 10);
            double floorMs = bytes[0] / bw * 1e3;
            for (int b : new int[] {1, 8}) {
                double[] verify = new double[rounds];
                double[] host = new double[rounds];
                double[] commit = new double[rounds];
                long ops = 0;
                CudaLaunchCounter.Counts cv = null;
                CudaLaunchCounter.Counts cc = null;
                String key = p.name() + " compile=" + compile + " B=" + b;
                try (TargetRows g = t.openRows(Collections.nCopies(b, null))) {
                    g.prefill(tokens(b, 16, c.shape().vocabSize(), 1));
                    for (int r = -3; r <= rounds; r++) { // three warm-ups (traces, kernel JIT); the last is counted
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
                        long t0 = System.nanoTime();
                        org.mtporacle.api.TargetOutput out = g.verify(v);
                        long t1 = System.nanoTime();
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
                        if (r == 0) {
                            float[] l = out.logits().toFloatArray();
                            float[] base = logits.get(key);
                            if (!kernel) {
                                logits.put(key, l);
                            } else if (base != null) {
                                double e = nmse(l, base);
                                boolean ok = e <= LOGITS_NMSE;
                                failed |= !ok;
                                detail.add(String.format("gdn kernel vs ops, %s: verify logits NMSE %.3g — %s (bound "
                                        + "%.0e)", key, e, ok ? "ok" : "FAILED", LOGITS_NMSE));
                            }
                        }
                        if (r >= 0 && r < rounds) {
                            verify[r] = (t1 - t0) / 1e6;
                            host[r] = ((t1 - t0) - (e1 - e0)) / 1e6;
                            commit[r] = (t2 - t1) / 1e6;
                            ops = o1 - o0;
                        }
                    }
                }
                Arrays.sort(verify);
                Arrays.sort(host);
                Arrays.sort(commit);
                double med = verify[rounds / 2];
                rows.add(String.format("| %s | %s | %s | %d | %.2f | %.2f | %.2f | %.2f | %d | %s | %s | %.2f | %.1f "
                                + "| %.2f | %.1f |", p.name(), compile ? "on" : "off", kernel ? "kernel" : "ops", b,
                        med, verify[(int) (rounds * 0.9)], host[rounds / 2], commit[rounds / 2], ops,
                        cv == null ? "n/a" : Long.toString(cv.launches()),
                        cc == null ? "n/a" : Long.toString(cc.launches()), bytes[0] / 1e9, bw / 1e9, floorMs,
                        med / floorMs));
                if (cv != null) {
                    detail.add(String.format("launches, %s gdn=%s: verify %d (runtime-API launches %d, driver calls "
                                    + "%d), commit %d; verify's driver calls %s; verify's kernels %s", key,
                            kernel ? "kernel" : "ops", cv.launches(), cv.runtimeLaunches(), cv.driverCalls(),
                            cc.launches(), cv.byFunction(), top(cv.byKernel(), 14)));
                }
            }
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
                                             boolean kernel) {
        MtpConfig a = c.shape();
        TargetConfig.Gdn g = c.gdn();
        int h = a.hiddenSize();
        int inter = a.intermediateSize();
        Gen gen = new Gen(ops);
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
                        gen.constant(1, MlxGdn.SOFTPLUS_THRESHOLD, MlxC.MLX_FLOAT32), MlxC.MLX_BFLOAT16,
                        compile, gdnKernel);
            } else {
                int q = 2 * a.numHeads() * a.headDim();
                int kv = a.numKvHeads() * a.headDim();
                layers[l] = new MlxTargetAttention(a, in, post, gen.constant(a.headDim(), 1f, MlxC.MLX_BFLOAT16),
                        gen.constant(a.headDim(), 1f, MlxC.MLX_BFLOAT16), MlxStack.of(gen.dense(q + 2 * kv, h, bytes),
                        q, kv, kv), gen.dense(h, a.numHeads() * a.headDim(), bytes), mlp, MlxC.MLX_BFLOAT16);
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

        Gen(MlxOps ops) {
            this.ops = ops;
        }

        MlxLinear dense(int out, int in, long[] bytes) {
            return denseAs(out, in, MlxC.MLX_BFLOAT16, bytes);
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
