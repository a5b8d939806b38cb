package org.mtporacle.bench;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.function.Consumer;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.LinearWeight;
import org.mtporacle.reference.fixture.FixtureModels;
import org.mtporacle.reference.kernels.KernelMode;
import org.mtporacle.reference.kernels.Kernels;

/**
 * Measures the vector kernels against this machine's limits in one run: a STREAM-style read bandwidth
 * ({@link ReadBandwidth}) and a vector FMA peak ({@link FmaPeak}), BF16 and 4-bit mat-vec as a fraction of the
 * bandwidth, one draft step and one lifecycle round at a preset's shape against the bandwidth floor (with the
 * compute floor beside it), and prefill matmul in GFLOP/s beside OpenBLAS {@code cblas_sgemm} when
 * {@code libopenblas.so.0} is present. Every time is the median of {@link BenchOptions#repetitions()} timed runs
 * after warm-up. A memory-bound figure is timed in rounds with a plain read of the same weight bytes beside it
 * ({@link ReadBandwidth#over}, {@link Timing#interleaved}, at least {@link Timing#MIN_ROUNDS} rounds), and its ratio is
 * the median of the per-round ratios: on a shared virtual machine the read rate drifts by tens of percent over a run
 * and differs between allocations, and a ratio against another buffer read a minute earlier carries both.
 */
public final class KernelBench {
    private KernelBench() {
    }

    /** Runs every measurement; {@code progress} receives one line per step. */
    public static BenchReport run(BenchOptions o, Consumer<String> progress) {
        FixtureModels.Preset p = FixtureModels.preset(o.preset());
        List<BenchReport.Row> rows = new ArrayList<>();
        List<String> notes = new ArrayList<>();
        String kernels;
        try (Kernels probe = new Kernels(KernelMode.VECTOR, 1); Arena arena = Arena.ofShared()) {
            kernels = probe.describe().replace(", 1 thread(s)", "");
            try (ReadBandwidth rb = ReadBandwidth.buffer(o.baselineBytes(), Collections.max(o.threads()))) {
                for (int t : o.threads()) {
                    progress.accept("read bandwidth, " + t + " thread(s)");
                    double s = Timing.median(o.repetitions(), o.shortWarmup(), () -> rb.read(t));
                    rows.add(BenchReport.Row.info("read bandwidth " + (rb.bytes(t) >> 20) + " MiB (8 acc.)", t, s,
                            "GB/s", rb.bytes(t) / s / 1e9));
                }
            }
            Map<Integer, Double> peak = new TreeMap<>();
            for (int t : o.threads()) {
                try (FmaPeak f = new FmaPeak(t, o.shortWarmup() ? 2_000_000L : 20_000_000L)) {
                    progress.accept("vector FMA peak, " + t + " thread(s)");
                    double s = Timing.median(o.repetitions(), o.shortWarmup(), f::run);
                    peak.put(t, f.flops() / s / 1e9);
                    rows.add(BenchReport.Row.info("vector FMA peak (12 chains per thread)", t, s, "GFLOP/s",
                            peak.get(t)));
                }
            }
            if (o.measures("matvec")) {
                matVec(o, p, arena, rows, progress);
            }
            if (o.measures("draft")) {
                draftStep(o, p, arena, peak, rows, notes, progress);
            }
            if (o.measures("matvec") || o.measures("draft") || o.measures("target")) {
                notes.add("ratios to the read bandwidth and the bandwidth floor: medians of per-round ratios, each "
                        + "kernel run timed right after a plain read of its own weight bytes (the read bandwidth rows "
                        + "above read a separate buffer, alone)");
            }
            if (o.measures("prefill")) {
                prefill(o, p, arena, rows, notes, progress);
            }
            if (o.measures("target")) {
                TargetStepBench.run(o, peak, rows, notes, progress);
            }
            if (o.measures("target-large")) {
                TargetEstimate.run(o, rows, notes, progress);
            }
        }
        if (!o.preset().equals("qwen3.5-0.8b")) {
            notes.add("preset " + o.preset() + ": the targets are set for qwen3.5-0.8b; these weights may fit in "
                    + "cache, where the plain read of them is far faster than any kernel, so ratios and verdicts "
                    + "here say nothing about the targets");
        }
        return new BenchReport(kernels, System.getProperty("os.arch") + ", " + Runtime.getRuntime().availableProcessors()
                + " cpus", o.toString(), rows, notes);
    }

    private static void matVec(BenchOptions o, FixtureModels.Preset p, Arena arena, List<BenchReport.Row> rows,
            Consumer<String> progress) {
        int h = p.hiddenSize();
        int wide = p.name().equals("qwen3.5-0.8b") ? 4096 : 4 * h;
        Map<String, LinearWeight> ws = new LinkedHashMap<>();
        ws.put("bf16 mat-vec " + p.vocabSize() + "x" + h, BenchWeights.bf16(arena, p.vocabSize(), h, 0));
        ws.put("bf16 mat-vec " + 3 * wide + "x" + wide, BenchWeights.bf16(arena, 3 * wide, wide, 1));
        ws.put("4-bit g64 mat-vec " + p.vocabSize() + "x" + h, BenchWeights.affine4(arena, p.vocabSize(), h));
        for (int t : o.threads()) {
            try (Kernels k = new Kernels(KernelMode.VECTOR, t)) {
                for (Map.Entry<String, LinearWeight> e : ws.entrySet()) {
                    LinearWeight w = e.getValue();
                    progress.accept(e.getKey() + ", " + t + " thread(s)");
                    float[] x = BenchWeights.pattern(w.inFeatures());
                    float[] out = new float[w.outFeatures()];
                    double kernel;
                    double ratio;
                    try (ReadBandwidth rb = ReadBandwidth.over(ReadBandwidth.segments(List.of(w)), t)) {
                        double[][] s = Timing.interleaved(o.repetitions(), Timing.MIN_ROUNDS, o.shortWarmup(),
                                () -> rb.read(t), () -> k.matmul(out, 0, w, x, 0, 1));
                        kernel = Timing.median(s[1]);
                        // round i: (weight bytes / kernel_i) / (bytes read / read_i)
                        ratio = Timing.medianRatio((double) w.byteSize() / rb.bytes(t), s[0], s[1]);
                    }
                    double target = w instanceof LinearWeight.Affine ? 0.80 : 0.90;
                    rows.add(BenchReport.Row.atLeast(e.getKey(), t, kernel, "GB/s", w.byteSize() / kernel / 1e9, ratio,
                            "read bandwidth", target));
                }
            }
        }
    }

    /**
     * One draft step per batch size against its bandwidth floor (weight bytes ÷ the rate of a plain read of those bytes
     * in the same round), with its compute floor beside it (FLOPs ÷ same-run FMA peak): where the compute floor is
     * above the target, no kernel can reach the target on this machine, and a note says so.
     */
    private static void draftStep(BenchOptions o, FixtureModels.Preset p, Arena arena, Map<Integer, Double> peak,
            List<BenchReport.Row> rows, List<String> notes, Consumer<String> progress) {
        DraftStepBench d = new DraftStepBench(arena, p);
        for (int t : o.threads()) {
            for (int b : o.draftBatches()) {
                progress.accept("draft step " + p.name() + " B=" + b + ", " + t + " thread(s)");
                double[][] s;
                long read;
                try (ReadBandwidth rb = ReadBandwidth.over(ReadBandwidth.segments(d.linears(b, o.kvHistory())), t)) {
                    s = d.baselineBareAndRound(t, b, o.kvHistory(), o.repetitions(), o.shortWarmup(),
                            () -> rb.read(t));
                    read = rb.bytes(t);
                }
                double bare = Timing.median(s[1]);
                // the floor at round i's read rate is weightBytes · read_i / read
                double floor = d.weightBytes(b, o.kvHistory()) * Timing.median(s[0]) / read;
                String name = "draft step B=" + b + " (block+logits+log-softmax" + d.expertsTouched(b, o.kvHistory())
                        + ")";
                double target = b == 1 ? 1.2 : 1.35;
                rows.add(BenchReport.Row.atMost(name, t, bare, "GB/s", d.weightBytes(b, o.kvHistory()) / bare / 1e9,
                        Timing.medianRatio((double) read / d.weightBytes(b, o.kvHistory()), s[1], s[0]), "bandwidth floor",
                        target));
                double compute = d.flops(b, o.kvHistory()) / (peak.get(t) * 1e9);
                rows.add(BenchReport.Row.compared("draft step B=" + b + " compute floor (FLOPs / FMA peak)", t,
                        compute, "GFLOP/s", peak.get(t), compute / floor, "bandwidth floor"));
                unreachable(b, t, target, floor, d.flops(b, o.kvHistory()), peak.get(t)).ifPresent(notes::add);
                double round = Timing.median(s[2]);
                rows.add(BenchReport.Row.atMost("draft round B=" + b + " (ReferenceDraftRows d=1+commit)", t, round,
                        "GB/s", d.weightBytes(b, o.kvHistory()) / round / 1e9, Timing.medianRatio(1, s[2], s[1]), "bare step",
                        1.05));
            }
        }
    }

    /**
     * A note when a draft-step target ({@code ≤ target ×} the bandwidth floor of {@code floorSeconds}) is below the
     * compute floor ({@code flops} at {@code peakGflops}), i.e. when no kernel can reach it on this machine.
     */
    static Optional<String> unreachable(int b, int threads, double target, double floorSeconds, double flops,
            double peakGflops) {
        double ratio = flops / (peakGflops * 1e9) / floorSeconds;
        if (!(ratio > target)) {
            return Optional.empty();
        }
        return Optional.of(String.format(Locale.ROOT, "draft step B=%d, %d thread(s): the target ≤%.2f× the bandwidth floor is "
                + "below this machine's compute floor (%.2f×: %.2f GFLOP at the same-run FMA peak of %.1f GFLOP/s); "
                + "no kernel reaches it here", b, threads, target, ratio, flops / 1e9, peakGflops));
    }

    private static void prefill(BenchOptions o, FixtureModels.Preset p, Arena arena, List<BenchReport.Row> rows,
            List<String> notes, Consumer<String> progress) {
        int m = o.prefillRows();
        Optional<OpenBlas> blas = o.openBlas() ? OpenBlas.load() : Optional.empty();
        if (o.openBlas() && blas.isEmpty()) {
            notes.add("OpenBLAS skipped: libopenblas.so.0 not found (apt-get install -y libopenblas0)");
        }
        if (blas.isPresent() && System.getenv("OPENBLAS_CORETYPE") == null) {
            notes.add("OPENBLAS_CORETYPE is unset; on AMD EPYC set OPENBLAS_CORETYPE=SkylakeX for the AVX-512 sgemm");
        }
        Map<String, int[]> shapes = shapes(p);
        for (int t : o.threads()) {
            double ours = 0;
            double theirs = 0;
            double flops = 0;
            try (Kernels k = new Kernels(KernelMode.VECTOR, t)) {
                for (Map.Entry<String, int[]> e : shapes.entrySet()) {
                    int outF = e.getValue()[0];
                    int in = e.getValue()[1];
                    LinearWeight w = BenchWeights.bf16(arena, outF, in, outF + in);
                    float[] x = BenchWeights.pattern(m * in);
                    float[] out = new float[m * outF];
                    double f = 2.0 * m * outF * in;
                    String name = "prefill bf16 " + e.getKey() + " (" + m + " rows)";
                    progress.accept(name + ", " + t + " thread(s)");
                    double s = Timing.median(o.repetitions(), o.shortWarmup(), () -> k.matmul(out, 0, w, x, 0, m));
                    if (blas.isPresent()) {
                        double b = sgemm(blas.get(), t, w, x, m, o);
                        theirs += b;
                        rows.add(BenchReport.Row.info("openblas sgemm " + e.getKey(), t, b, "GFLOP/s", f / b / 1e9));
                        rows.add(BenchReport.Row.atLeast(name, t, s, "GFLOP/s", f / s / 1e9, b / s, "openblas", 0.6));
                    } else {
                        rows.add(BenchReport.Row.info(name, t, s, "GFLOP/s", f / s / 1e9));
                    }
                    ours += s;
                    flops += f;
                }
            }
            String name = "prefill block total (" + shapes.size() + " linears)";
            rows.add(blas.isPresent()
                    ? BenchReport.Row.atLeast(name, t, ours, "GFLOP/s", flops / ours / 1e9, theirs / ours, "openblas",
                            0.6)
                    : BenchReport.Row.info(name, t, ours, "GFLOP/s", flops / ours / 1e9));
        }
    }

    private static double sgemm(OpenBlas blas, int threads, LinearWeight w, float[] x, int m, BenchOptions o) {
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
            return Timing.median(o.repetitions(), o.shortWarmup(), () -> {
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

    /** {@code [out, in]} of the block linears at the preset's shape: q (nH·2D), k, v, o, gate, up, down, fc. */
    private static Map<String, int[]> shapes(FixtureModels.Preset p) {
        int h = p.hiddenSize();
        int q = p.numHeads() * p.headDim();
        int kv = p.numKvHeads() * p.headDim();
        int i = p.intermediateSize();
        Map<String, int[]> m = new LinkedHashMap<>();
        m.put("q_proj " + 2 * q + "x" + h, new int[] {2 * q, h});
        m.put("k_proj " + kv + "x" + h, new int[] {kv, h});
        m.put("v_proj " + kv + "x" + h, new int[] {kv, h});
        m.put("o_proj " + h + "x" + q, new int[] {h, q});
        m.put("gate_proj " + i + "x" + h, new int[] {i, h});
        m.put("up_proj " + i + "x" + h, new int[] {i, h});
        m.put("down_proj " + h + "x" + i, new int[] {h, i});
        m.put("fc " + h + "x" + 2 * h, new int[] {h, 2 * h});
        return m;
    }

    /**
     * Runs the benchmark and prints the table, then the JSON. Options as {@link BenchOptions#parse}: {@code --quick},
     * {@code --preset NAME}, {@code --threads 1,2}, {@code --repetitions N}, {@code --no-openblas}.
     */
    public static void main(String[] args) {
        BenchReport r = run(BenchOptions.parse(List.of(args)), line -> System.err.println("… " + line));
        System.out.println(r.toTable());
        System.out.println(r.toJson());
    }
}
