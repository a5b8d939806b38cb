package org.mtporacle.tools;

import org.mtporacle.api.DraftModel;
import org.mtporacle.api.DraftRows;
import org.mtporacle.api.DraftSampling;
import org.mtporacle.api.MtpBackend;
import org.mtporacle.api.MtpModel;
import org.mtporacle.conformance.FixtureRecipe;
import org.mtporacle.conformance.chain.ChainData;
import org.mtporacle.reference.ReferenceBackend;
import org.mtporacle.bench.BenchOptions;
import org.mtporacle.bench.BenchReport;
import org.mtporacle.bench.DeviceDraftBench;
import org.mtporacle.bench.KernelBench;
import org.mtporacle.reference.fixture.FixtureModels;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;

/**
 * {@code mtp bench}: kernel and draft-step figures of the reference, each with its ratio to a baseline measured in
 * the same run (read bandwidth, the bandwidth floor, OpenBLAS sgemm); with {@code --backend}, a backend's draft round
 * beside the reference's on the same model.
 */
@Command(name = "bench", mixinStandardHelpOptions = true,
        description = {"Measure the reference's kernels and draft step against same-run baselines.",
                "Figures: STREAM-style read bandwidth and vector FMA peak; BF16 and 4-bit mat-vec as a fraction of "
                        + "the bandwidth; a draft step against the bandwidth floor, with its compute floor beside it; "
                        + "the lifecycle's overhead; prefill against OpenBLAS sgemm "
                        + "(set OPENBLAS_CORETYPE=SkylakeX on AVX-512 CPUs; skipped with a note when absent); "
                        + "the hybrid target's verify step (d+1 = 4 tokens + commit) against its bandwidth floor, "
                        + "the GDN recurrence's share of it, recurrent against chunked prefill; the 27B and "
                        + "35B-A3B targets' verify step estimated from one interval of layers."})
final class BenchCommand implements Callable<Integer> {
    @picocli.CommandLine.Mixin
    Mixins.Engine engine;

    @Option(names = "--preset", paramLabel = "NAME",
            description = "Model shape (default: qwen3.5-0.8b, or small with --quick).")
    String preset;

    @Option(names = "--threads", paramLabel = "N[,N...]", split = ",", hideParamSyntax = true,
            description = "Thread counts (default: 1,2).")
    List<Integer> threads;

    @Option(names = "--repetitions", paramLabel = "N", description = "Timed repetitions; medians are reported "
            + "(memory-bound figures take at least 15 rounds, each with a read of the same bytes).")
    Integer repetitions;

    @Option(names = "--quick", description = "A short smoke run (small shapes, fewer repetitions).")
    boolean quick;

    @Option(names = "--only", paramLabel = "PART[,PART...]", split = ",", hideParamSyntax = true,
            description = "Measure only these groups: matvec, draft, prefill, target, target-large (the baselines "
                    + "always run); "
                    + "backend alone skips the reference's kernels and times only --backend.")
    List<String> only;

    @Option(names = "--device-presets", paramLabel = "NAME[,NAME...]", split = ",", hideParamSyntax = true,
            description = "The --backend table's shapes (default: qwen3.5-0.8b, qwen3.5-4b, qwen3.5-27b; small "
                    + "with --quick).")
    List<String> devicePresets;

    @Option(names = "--weights", paramLabel = "W[,W...]", split = ",", hideParamSyntax = true,
            description = "Weight formats of the --backend device table: bf16, q4 (default: both).")
    List<String> weights;

    @Option(names = "--batches", paramLabel = "B[,B...]", split = ",", hideParamSyntax = true,
            description = "Batch sizes of the --backend device table (default: 1,8).")
    List<Integer> batches;

    @Option(names = "--vary", paramLabel = "KEY=V1,V2[,...]",
            description = "Time the --backend device table once per value of this load option, in one run against "
                    + "one bandwidth figure (e.g. moe=gather,per-expert for the MLX backend's MoE paths).")
    String vary;

    @Option(names = "--no-openblas", description = "Skip the OpenBLAS comparison.")
    boolean noOpenBlas;

    @Mixin
    Mixins.Backend backend;

    @Option(names = "--rounds", paramLabel = "N", defaultValue = "20",
            description = "Draft rounds timed per side with --backend (default: ${DEFAULT-VALUE}).")
    int rounds;

    @Option(names = "--wire", description = "Only the wire-protocol benchmark: empty-call latency, 8 MiB context "
            + "transfer, whole lockstep chains on small with the reference in process and behind `mtp serve-wire` "
            + "(or the engine of --backend exec:...).")
    boolean wire;

    @Option(names = "--wire-chains", paramLabel = "N", defaultValue = "40",
            description = "Chains timed per side with --wire (default: ${DEFAULT-VALUE}).")
    int wireChains;

    @Mixin
    Mixins.Json json;

    @Mixin
    Mixins.Quiet quiet;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() {
        BenchOptions o = Mixins.Usage.lookup(spec, this::options); // a bad value: a usage error (exit 2)
        boolean backendOnly = only != null && only.equals(List.of("backend"));
        if (backendOnly && !backend.given()) {
            throw new ParameterException(spec.commandLine(), "--only backend needs --backend NAME");
        }
        if (wire) {
            String engine = backend.given() && backend.name.startsWith("exec:") ? backend.name.substring(5) : null;
            ProgressLine p = new ProgressLine(quiet.quiet || json.json);
            WireBenchRun.Result r = WireBenchRun.run(engine, "small", wireChains, line -> p.status("bench: " + line));
            p.finish();
            System.out.print(json.json ? r.json() + "\n" : r.table());
            return MtpCommand.EXIT_OK;
        }
        MtpBackend b = backend.given() ? backend.resolve(null) : null; // before measuring: an unavailable one fails fast
        ProgressLine progress = new ProgressLine(quiet.quiet || json.json);
        BenchReport report = backendOnly ? null : KernelBench.run(o, line -> progress.status("bench: " + line));
        String comparison = b == null ? null : compare(b, o.preset(), progress);
        DeviceDraftBench.Result device = b == null ? null : deviceTable(b, progress);
        progress.finish();
        if (json.json) {
            System.out.println(comparison == null ? report.toJson()
                    : "{\"kernels\": " + (report == null ? "null" : report.toJson()) + ", \"backendComparison\": "
                    + comparison + ", \"device\": " + device.toJson() + "}");
        } else {
            if (report != null) {
                System.out.print(report.toTable());
            }
            if (device != null) {
                System.out.print(device.toTable());
            }
        }
        return MtpCommand.EXIT_OK;
    }

    /** The benchmark options from the flags; IllegalArgumentException names a bad value. */
    private BenchOptions options() {
        BenchOptions o = quick ? BenchOptions.quick() : BenchOptions.defaults();
        if (preset != null) {
            o = o.withPreset(preset);
        }
        if (threads != null) {
            Mixins.Usage.require(spec, !threads.isEmpty() && threads.stream().allMatch(t -> t != null && t >= 1),
                    "--threads " + String.join(",", threads.stream().map(String::valueOf).toList())
                            + ": every thread count must be ≥ 1");
            o = o.withThreads(threads);
        }
        if (repetitions != null) {
            Mixins.Usage.require(spec, repetitions >= 1, "--repetitions " + repetitions + ": must be ≥ 1");
            o = o.withRepetitions(repetitions);
        }
        if (noOpenBlas) {
            o = o.withOpenBlas(false);
        }
        if (only != null && !only.equals(List.of("backend"))) {
            o = o.withParts(only);
        }
        return o;
    }

    /**
     * A profile's load options with the user's {@code --option}s laid over them: the profile keeps what the user did
     * not set (so {@code mlx/f32} stays f32 under {@code --option device=cpu}), and the user's value wins otherwise.
     */
    static Map<String, String> profileOptions(Map<String, String> profile, Map<String, String> user) {
        Map<String, String> merged = new java.util.TreeMap<>(profile);
        merged.putAll(user);
        return Map.copyOf(merged);
    }

    /** Times draft rounds (depth 1, then commit) at B = 1 on the reference and on the backend; prints the ratio. */
    private String compare(MtpBackend b, String presetName, ProgressLine progress) {
        FixtureRecipe recipe = new FixtureRecipe("bench-" + presetName, presetName, 11, FixtureModels.Layout.HF,
                org.mtporacle.api.DType.BF16, 0, 0);
        progress.status("bench: writing/loading the " + presetName + " fixture for the backend comparison");
        MtpModel model = recipe.load(FixtureRecipe.defaultCache());
        List<String> lines = new ArrayList<>();
        StringBuilder js = new StringBuilder("[");
        double refMs = 0;
        List<String> labels = new ArrayList<>();
        List<Map<String, String>> options = new ArrayList<>();
        labels.add("reference");
        options.add(Map.of());
        b.profiles().forEach(p -> {
            labels.add(p.label());
            options.add(p.options());
        });
        for (int i = 0; i < labels.size(); i++) {
            MtpBackend side = i == 0 ? new ReferenceBackend() : b;
            Map<String, String> opts = i == 0 ? options.get(i) : profileOptions(options.get(i), backend.options);
            try (DraftModel dm = side.load(model, opts)) {
                double ms = medianRoundMillis(dm, model);
                if (i == 0) {
                    refMs = ms;
                }
                lines.add(String.format(Locale.ROOT, "%-16s draft round B=1 (depth 1 + commit): %9.2f ms  ratio %.3f  "
                        + "(%s)", labels.get(i), ms, ms / refMs, dm.numerics()));
                js.append(i == 0 ? "" : ",").append(String.format(Locale.ROOT,
                        "{\"profile\": \"%s\", \"ms\": %.4f, \"ratioToReference\": %.4f}", labels.get(i), ms,
                        ms / refMs));
            }
        }
        System.out.println("draft round on " + presetName + " (same run, median of " + rounds + "):");
        lines.forEach(System.out::println);
        System.out.println();
        return js.append("]").toString();
    }

    /** The backend's draft round at real shapes against its own device's bandwidth floor, per profile options. */
    private DeviceDraftBench.Result deviceTable(MtpBackend b, ProgressLine progress) {
        List<String> shapes = devicePresets != null ? devicePresets
                : quick ? List.of("small") : List.of("qwen3.5-0.8b", "qwen3.5-4b", "qwen3.5-27b");
        List<Map<String, String>> variants = new ArrayList<>();
        if (vary == null) {
            variants.add(Map.of());
        } else {
            int eq = vary.indexOf('=');
            if (eq <= 0 || eq == vary.length() - 1) {
                throw new ParameterException(spec.commandLine(), "--vary " + vary + ": expected KEY=V1,V2");
            }
            for (String v : vary.substring(eq + 1).split(",")) {
                variants.add(Map.of(vary.substring(0, eq), v));
            }
        }
        try {
            return DeviceDraftBench.run(b, backend.options, variants, shapes, weights != null ? weights
                            : List.of("bf16", "q4"), batches != null ? batches : List.of(1, 8), rounds,
                    line -> progress.status("bench: " + line));
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage(), e);
        }
    }

    private double medianRoundMillis(DraftModel dm, MtpModel model) {
        int h = model.config().hiddenSize();
        try (DraftRows rows = dm.openRows(Collections.singletonList(null))) {
            ChainData.PrefillArgs p = ChainData.prefill(3, 1, 64, model.config().vocabSize(), h);
            rows.prefill(p.tokens(), p.context());
            var ctx = ChainData.hiddens(new java.util.SplittableRandom(4), 1, 2, h);
            double[] t = new double[rounds + 3];
            for (int r = 0; r < t.length; r++) {
                long start = System.nanoTime();
                rows.draft(new int[] {r % model.config().vocabSize()}, 1, new long[] {r}, DraftSampling.greedy(1));
                rows.commit(new int[] {0}, ctx);
                t[r] = (System.nanoTime() - start) / 1e6;
            }
            double[] timed = Arrays.copyOfRange(t, 3, t.length); // the first rounds warm up
            Arrays.sort(timed);
            return timed[timed.length / 2];
        }
    }
}
