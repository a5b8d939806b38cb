package org.mtporacle.bench;

import org.mtporacle.api.DeviceBandwidth;
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
 * {@code weightBytes ÷ copy bandwidth}, where the bandwidth comes from the loaded model ({@link DeviceBandwidth}) and
 * counts bytes read and written. A backend that cannot measure its device gets times without a floor.
 */
public final class DeviceDraftBench {
    /** The buffer streamed for the bandwidth figure: far larger than any GPU's L2. */
    static final long BANDWIDTH_BYTES = 1L << 30;
    private static final int HISTORY = 64;
    private static final int WARMUP = 3;

    /** One timed configuration; {@code floorMs} and {@code ratio} are NaN without a bandwidth figure. */
    public record Row(String preset, String weights, int batch, long weightBytes, double ms, double floorMs,
                      double ratio) {
    }

    /** Every row, with the device and the bandwidth the floors use. */
    public record Result(String backend, String numerics, String device, double copyBytesPerSecond, int rounds,
                         List<Row> rows) {
        public String toTable() {
            StringBuilder sb = new StringBuilder();
            sb.append(String.format(Locale.ROOT, "%s draft round (depth 1 + commit), median of %d, on %s%n", backend,
                    rounds, device));
            sb.append(Double.isNaN(copyBytesPerSecond) ? "  (no bandwidth figure from this backend: no floor)\n"
                    : String.format(Locale.ROOT, "  device copy bandwidth %.0f GB/s (bytes read + written, %d MiB "
                            + "buffer, same run); floor = weight bytes / that%n", copyBytesPerSecond / 1e9,
                            BANDWIDTH_BYTES >> 20));
            sb.append(String.format(Locale.ROOT, "  %-14s %-7s %3s %11s %10s %10s %8s%n", "preset", "weights", "B",
                    "weights MB", "round ms", "floor ms", "x floor"));
            for (Row r : rows) {
                sb.append(String.format(Locale.ROOT, "  %-14s %-7s %3d %11.1f %10.3f %10.3f %8.2f%n", r.preset(),
                        r.weights(), r.batch(), r.weightBytes() / 1e6, r.ms(), r.floorMs(), r.ratio()));
            }
            sb.append("  numerics: ").append(numerics).append('\n');
            return sb.toString();
        }

        public String toJson() {
            StringBuilder sb = new StringBuilder(String.format(Locale.ROOT,
                    "{\"backend\": \"%s\", \"device\": \"%s\", \"copyBytesPerSecond\": %s, \"rounds\": %d, \"rows\": [",
                    backend, device, num(copyBytesPerSecond), rounds));
            for (int i = 0; i < rows.size(); i++) {
                Row r = rows.get(i);
                sb.append(i == 0 ? "" : ", ").append(String.format(Locale.ROOT, "{\"preset\": \"%s\", \"weights\": "
                        + "\"%s\", \"batch\": %d, \"weightBytes\": %d, \"ms\": %.4f, \"floorMs\": %s, \"ratio\": %s}",
                        r.preset(), r.weights(), r.batch(), r.weightBytes(), r.ms(), num(r.floorMs()),
                        num(r.ratio())));
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
        String numerics = "";
        String device = backend.name();
        for (FixtureModels.Preset p : shapes) {
            for (String w : weights) {
                progress.accept("building " + p.name() + " " + w + " weights");
                try (Arena arena = Arena.ofShared()) {
                    MtpModel model = DraftStepBench.syntheticModel(arena, p, w.equals("q4"));
                    progress.accept("loading " + p.name() + " " + w + " into " + backend.name());
                    try (DraftModel dm = backend.load(model, options)) {
                        numerics = dm.numerics();
                        if (dm instanceof DeviceBandwidth probe && Double.isNaN(bandwidth)) {
                            progress.accept("measuring " + probe.device() + " copy bandwidth");
                            bandwidth = probe.copyBytesPerSecond(BANDWIDTH_BYTES, 10);
                            device = probe.device();
                        }
                        for (int b : batches) {
                            progress.accept(p.name() + " " + w + " B=" + b);
                            double ms = medianRoundMillis(dm, model, b, rounds);
                            long bytes = DraftStepBench.weightBytes(model, b);
                            double floor = bytes / bandwidth * 1e3;
                            rows.add(new Row(p.name(), w, b, bytes, ms, floor, ms / floor));
                        }
                    }
                }
            }
        }
        return new Result(backend.name(), numerics, device, bandwidth, rounds, List.copyOf(rows));
    }

    /** Median milliseconds of a greedy draft round of depth 1 plus a commit accepting nothing, over {@code b} rows. */
    static double medianRoundMillis(DraftModel dm, MtpModel model, int b, int rounds) {
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
            double[] t = new double[rounds + WARMUP];
            for (int r = 0; r < t.length; r++) {
                int[] pending = new int[b];
                long[] steps = new long[b];
                Arrays.fill(pending, r % vocab);
                Arrays.fill(steps, r);
                long start = System.nanoTime();
                rows.draft(pending, 1, steps, greedy);
                rows.commit(accepted, context);
                t[r] = (System.nanoTime() - start) / 1e6;
            }
            double[] timed = Arrays.copyOfRange(t, WARMUP, t.length);
            Arrays.sort(timed);
            return timed[timed.length / 2];
        }
    }
}
