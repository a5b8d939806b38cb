package org.mtporacle.bench;

import org.mtporacle.api.DeviceProbe;
import org.mtporacle.api.DraftModel;
import org.mtporacle.api.DraftRows;
import org.mtporacle.api.DraftSampling;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MtpBackend;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.RowCheckpoint;
import org.mtporacle.reference.fixture.FixtureModels;

import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Consumer;

/**
 * A backend's draft round (depth 1, then commit with nothing accepted) at real model shapes, against the time its
 * weight bytes take to stream on the backend's own device, measured in the same run: the floor is
 * {@code weightBytes ÷ copy bandwidth}, where the bandwidth comes from the loaded model ({@link DeviceProbe}) and
 * counts bytes read and written. A backend that cannot measure its device gets times without a floor.
 */
public final class DeviceDraftBench {
    /** The buffer streamed for the bandwidth figure: far larger than any GPU's L2. */
    static final long BANDWIDTH_BYTES = 1L << 30;
    private static final int HISTORY = 64;
    /** Warm-up before the timed rounds of each configuration: this many rounds, or {@link #WARMUP_NANOS}. */
    static final int WARMUP_ROUNDS = 1000;
    static final long WARMUP_NANOS = 3_000_000_000L;

    /**
     * One timed configuration: the round's median and its draft and commit parts; the bandwidth floor and the round
     * as a multiple of it; the operations the round issues and their fixed cost at the measured per-operation time
     * (NaN where the backend is no {@link DeviceProbe}); and how much of the round the device spent evaluating
     * ({@link DeviceProbe#evaluationNanos()}; the rest is host work: checks, graph building, uploads, hand-offs).
     */
    public record Row(String preset, String weights, int batch, long weightBytes, double ms, double draftMs,
                      double commitMs, double floorMs, double ratio, double opsPerRound, double opsMs,
                      double evalMs, double workerMs, String variant) {
    }

    /** Every row, with the device, the bandwidth the floors use and the per-operation time. */
    public record Result(String backend, String numerics, String device, double copyBytesPerSecond,
                         double operationSeconds, int rounds, List<Row> rows) {
        public String toTable() {
            StringBuilder sb = new StringBuilder();
            sb.append(String.format(Locale.ROOT, "%s draft round (depth 1 + commit), median of %d after %d warm-up "
                    + "rounds or %.1f s, on %s%n", backend, rounds, WARMUP_ROUNDS, WARMUP_NANOS / 1e9, device));
            sb.append(Double.isNaN(copyBytesPerSecond) ? "  (no bandwidth figure from this backend: no floor)\n"
                    : String.format(Locale.ROOT, "  device copy bandwidth %.0f GB/s (bytes read + written, %d MiB "
                            + "buffer, same run); floor = weight bytes / that%n", copyBytesPerSecond / 1e9,
                            BANDWIDTH_BYTES >> 20));
            if (Double.isFinite(operationSeconds)) {
                sb.append(String.format(Locale.ROOT, "  one operation in a dependent chain: %.1f µs (the fixed cost "
                        + "each operation of a round pays); ops ms = operations per round × that%n",
                        operationSeconds * 1e6));
            }
            sb.append("  eval ms = time inside the device's evaluations (graph run and wait); worker ms = time on the"
                    + " backend's own thread (evaluations, graph building, uploads); round ms − worker ms is the"
                    + " hand-off to that thread and back, and the caller's checks\n");
            boolean varied = rows.stream().anyMatch(r -> !r.variant().isEmpty());
            sb.append(String.format(Locale.ROOT, "  %-14s %-7s %3s %10s %9s %9s %9s %9s %8s %8s %8s %8s %9s%s%n",
                    "preset", "weights", "B", "weights MB", "round ms", "draft ms", "commit ms", "floor ms",
                    "x floor", "ops", "ops ms", "eval ms", "worker ms", varied ? "  options" : ""));
            for (Row r : rows) {
                sb.append(String.format(Locale.ROOT,
                        "  %-14s %-7s %3d %10.1f %9.3f %9.3f %9.3f %9.3f %8.2f %8.0f %8.3f %8.3f %9.3f%s%n",
                        r.preset(), r.weights(), r.batch(), r.weightBytes() / 1e6, r.ms(), r.draftMs(),
                        r.commitMs(), r.floorMs(), r.ratio(), r.opsPerRound(), r.opsMs(), r.evalMs(),
                        r.workerMs(), varied ? "  " + r.variant() : ""));
            }
            sb.append("  numerics: ").append(numerics).append('\n');
            return sb.toString();
        }

        public String toJson() {
            StringBuilder sb = new StringBuilder(String.format(Locale.ROOT,
                    "{\"backend\": \"%s\", \"device\": \"%s\", \"copyBytesPerSecond\": %s, \"operationSeconds\": %s, "
                            + "\"rounds\": %d, \"rows\": [", backend, device, num(copyBytesPerSecond),
                    num(operationSeconds), rounds));
            for (int i = 0; i < rows.size(); i++) {
                Row r = rows.get(i);
                sb.append(i == 0 ? "" : ", ").append(String.format(Locale.ROOT, "{\"preset\": \"%s\", \"weights\": "
                        + "\"%s\", \"batch\": %d, \"weightBytes\": %d, \"ms\": %.4f, \"draftMs\": %.4f, "
                        + "\"commitMs\": %.4f, \"floorMs\": %s, \"ratio\": %s, \"opsPerRound\": %s, \"opsMs\": %s, "
                        + "\"evalMs\": %s, \"workerMs\": %s, \"options\": \"%s\"}",
                        r.preset(), r.weights(), r.batch(), r.weightBytes(), r.ms(), r.draftMs(), r.commitMs(),
                        num(r.floorMs()), num(r.ratio()), num(r.opsPerRound()), num(r.opsMs()), num(r.evalMs()), num(r.workerMs()),
                        r.variant()));
            }
            return sb.append("]}").toString();
        }

        private static String num(double v) {
            return Double.isFinite(v) ? String.format(Locale.ROOT, "%.5g", v) : "null";
        }
    }

    private DeviceDraftBench() {
    }

    /**
     * Times {@code backend} with {@code options} at each preset × weight format ({@code bf16}, {@code q4}) × batch.
     *
     * @throws IllegalArgumentException for an unknown preset or weight format, or a batch or round count below 1
     */
    public static Result run(MtpBackend backend, Map<String, String> options, List<String> presets,
                             List<String> weights, List<Integer> batches, int rounds, Consumer<String> progress) {
        return run(backend, options, List.of(Map.of()), presets, weights, batches, rounds, progress);
    }

    /**
     * {@link #run} once per entry of {@code variants} (options added to {@code options}), each loaded in turn on the
     * same synthetic model, so alternatives (the MLX backend's {@code moe=gather} and {@code moe=per-expert}) are
     * timed in one run against one bandwidth figure.
     */
    public static Result run(MtpBackend backend, Map<String, String> options, List<Map<String, String>> variants,
                             List<String> presets, List<String> weights, List<Integer> batches, int rounds,
                             Consumer<String> progress) {
        for (String w : weights) {
            if (!w.equals("bf16") && !w.equals("q4")) {
                throw new IllegalArgumentException("bench: weights '" + w + "', expected bf16 or q4");
            }
        }
        if (rounds < 1 || batches.isEmpty() || Collections.min(batches) < 1) {
            throw new IllegalArgumentException("bench: rounds and batches must be ≥ 1, got " + rounds + ", "
                    + batches);
        }
        List<FixtureModels.Preset> shapes = new ArrayList<>();
        for (String p : presets) {
            shapes.add(FixtureModels.preset(p));
        }
        List<Row> rows = new ArrayList<>();
        double bandwidth = Double.NaN;
        double opSeconds = Double.NaN;
        String numerics = "";
        String device = backend.name();
        for (FixtureModels.Preset p : shapes) {
            for (String w : weights) {
                progress.accept("building " + p.name() + " " + w + " weights");
                try (Arena arena = Arena.ofShared()) {
                    MtpModel model = DraftStepBench.syntheticModel(arena, p, w.equals("q4"));
                    for (Map<String, String> variant : variants) {
                        Map<String, String> opts = new java.util.LinkedHashMap<>(options);
                        opts.putAll(variant);
                        String label = variant.entrySet().stream().map(e -> e.getKey() + "=" + e.getValue())
                                .collect(java.util.stream.Collectors.joining(","));
                        progress.accept("loading " + p.name() + " " + w + " into " + backend.name() + " " + label);
                        try (DraftModel dm = backend.load(model, opts)) {
                            numerics = dm.numerics();
                            if (dm instanceof DeviceProbe probe && Double.isNaN(bandwidth)) {
                                progress.accept("measuring " + probe.device() + " copy bandwidth");
                                bandwidth = probe.copyBytesPerSecond(BANDWIDTH_BYTES, 10);
                                opSeconds = probe.operationSeconds(10);
                                device = probe.device();
                            }
                            for (int b : batches) {
                                progress.accept(p.name() + " " + w + " B=" + b);
                                Times t = time(dm, model, b, rounds);
                                long bytes = DraftStepBench.weightBytes(model, b);
                                double floor = bytes / bandwidth * 1e3;
                                rows.add(new Row(p.name(), w, b, bytes, t.round(), t.draft(), t.commit(), floor,
                                        t.round() / floor, t.opsPerRound(), t.opsPerRound() * opSeconds * 1e3,
                                        t.evalMs(), t.workerMs(), label));
                            }
                        }
                    }
                }
            }
        }
        return new Result(backend.name(), numerics, device, bandwidth, opSeconds, rounds, List.copyOf(rows));
    }

    /** Medians of a round, its draft and its commit (ms), and the operations a round issues (NaN if unknown). */
    record Times(double round, double draft, double commit, double opsPerRound, double evalMs, double workerMs) {
    }

    /** A greedy draft round of depth 1 plus a commit accepting nothing, over {@code b} rows, {@code rounds} times. */
    static Times time(DraftModel dm, MtpModel model, int b, int rounds) {
        int h = model.config().hiddenSize();
        int vocab = model.config().vocabSize();
        List<RowCheckpoint> cold = new ArrayList<>(Collections.nCopies(b, null));
        try (DraftRows rows = dm.openRows(cold)) {
            int[] tokens = new int[b * HISTORY];
            for (int i = 0; i < tokens.length; i++) {
                tokens[i] = (int) ((i * 2654435761L >>> 5) % vocab);
            }
            rows.prefill(HostTensor.ofInts(tokens, b, HISTORY),
                    HostTensor.ofFloats(BenchWeights.pattern(b * HISTORY * h), b, HISTORY, h));
            HostTensor context = HostTensor.ofFloats(BenchWeights.pattern(b * 2 * h), b, 2, h);
            DraftSampling greedy = DraftSampling.greedy(b);
            int[] accepted = new int[b];
            // Warm up until the host side is compiled code, as in a serving process: at least WARMUP_ROUNDS rounds
            // or WARMUP_NANOS, whichever comes first. On the H200 a qwen3.5-0.8b round settled only after about a
            // thousand rounds (1.51, 1.11, 1.07 ms over three runs of 800); 300 rounds still measured 1.40 ms.
            long warmEnd = System.nanoTime() + WARMUP_NANOS;
            for (int r = 0; r < WARMUP_ROUNDS && (r < 3 || System.nanoTime() < warmEnd); r++) {
                round(rows, b, r, vocab, greedy, accepted, context);
            }
            double[] draft = new double[rounds];
            double[] commit = new double[rounds];
            double[] round = new double[rounds];
            double[] evalMs = new double[rounds];
            double[] workerMs = new double[rounds];
            long opsBefore = dm instanceof DeviceProbe p ? p.operations() : 0;
            for (int r = 0; r < rounds; r++) {
                long evalBefore = dm instanceof DeviceProbe p ? p.evaluationNanos() : -1;
                long workerBefore = dm instanceof DeviceProbe p ? p.workerNanos() : -1;
                long[] t = round(rows, b, r, vocab, greedy, accepted, context);
                long evalAfter = dm instanceof DeviceProbe p ? p.evaluationNanos() : -1;
                long workerAfter = dm instanceof DeviceProbe p ? p.workerNanos() : -1;
                evalMs[r] = evalBefore < 0 || evalAfter < 0 ? Double.NaN : (evalAfter - evalBefore) / 1e6;
                workerMs[r] = workerBefore < 0 || workerAfter < 0 ? Double.NaN : (workerAfter - workerBefore) / 1e6;
                draft[r] = (t[1] - t[0]) / 1e6;
                commit[r] = (t[2] - t[1]) / 1e6;
                round[r] = (t[2] - t[0]) / 1e6;
            }
            double ops = dm instanceof DeviceProbe p ? (double) (p.operations() - opsBefore) / rounds : Double.NaN;
            return new Times(median(round), median(draft), median(commit), ops, median(evalMs), median(workerMs));
        }
    }

    /** One round (draft of depth 1, then commit of {@code accepted}); returns its start, middle and end (ns). */
    private static long[] round(DraftRows rows, int b, int r, int vocab, DraftSampling greedy, int[] accepted,
                                HostTensor context) {
        int[] pending = new int[b];
        long[] steps = new long[b];
        Arrays.fill(pending, r % vocab);
        Arrays.fill(steps, r);
        long start = System.nanoTime();
        rows.draft(pending, 1, steps, greedy);
        long mid = System.nanoTime();
        rows.commit(accepted, context);
        return new long[] {start, mid, System.nanoTime()};
    }

    private static double median(double[] all) {
        double[] timed = all.clone();
        Arrays.sort(timed);
        return timed[timed.length / 2];
    }
}
