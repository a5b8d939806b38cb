package org.mtporacle.bench;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import org.mtporacle.reference.fixture.FixtureModels;

/**
 * What {@link KernelBench} measures: the model shape ({@link FixtureModels#PRESETS}), thread counts, repetitions (the
 * median is reported), the read baseline buffer, the prefill row count, the draft batch sizes and KV history, and
 * whether to try OpenBLAS. {@link #defaults()} is the full run; {@link #quick()} a smoke run of a few seconds.
 *
 * @param preset        a {@link FixtureModels} preset name: {@code qwen3.5-0.8b} (the shapes), {@code small},
 *                      {@code tiny}
 * @param threads       each thread count measured, e.g. {@code [1, 2]}
 * @param repetitions   timed runs per figure after warm-up; the median is reported
 * @param shortWarmup   short warm-up (0.6 s instead of 1.5 s)
 * @param baselineBytes bytes of the read-bandwidth buffer
 * @param prefillRows   input rows of the prefill matmuls
 * @param draftBatches  batch sizes B of the draft-step figures
 * @param kvHistory     KV positions each draft row holds before the measured steps
 * @param openBlas      compare prefill with OpenBLAS {@code cblas_sgemm} when {@code libopenblas.so.0} loads
 * @param parts         which groups of figures to measure, a subset of {@link #PARTS}; the baselines (read
 *                      bandwidth, FMA peak) are always measured
 */
public record BenchOptions(String preset, List<Integer> threads, int repetitions, boolean shortWarmup, long baselineBytes,
        int prefillRows, List<Integer> draftBatches, int kvHistory, boolean openBlas, Set<String> parts) {
    /**
     * The groups of figures: mat-vec, draft step and round, prefill, the hybrid target's verify step and prefill
     * forms at the preset's target twin, and the large targets' verify step estimated.
     */
    public static final List<String> PARTS = List.of("matvec", "draft", "prefill", "target", "target-large");

    public BenchOptions {
        FixtureModels.preset(preset);
        threads = List.copyOf(threads);
        draftBatches = List.copyOf(draftBatches);
        parts = Set.copyOf(parts);
        for (String part : parts) {
            if (!PARTS.contains(part)) {
                throw new IllegalArgumentException("bench: unknown part '" + part + "', expected one or more of "
                        + String.join(", ", PARTS));
            }
        }
        if (parts.isEmpty()) {
            throw new IllegalArgumentException("bench: no part to measure; expected one or more of "
                    + String.join(", ", PARTS));
        }
        if (repetitions < 1 || baselineBytes < (1 << 20) || prefillRows < 1 || kvHistory < 1 || threads.isEmpty()
                || threads.stream().anyMatch(t -> t < 1) || draftBatches.stream().anyMatch(b -> b < 1)) {
            throw new IllegalArgumentException("bench: repetitions, baseline bytes (≥ 1 MiB), prefill rows, KV history,"
                    + " threads and batches must be positive, got " + repetitions + ", " + baselineBytes + ", "
                    + prefillRows + ", " + kvHistory + ", " + threads + ", " + draftBatches);
        }
    }

    /** The full run: qwen3.5-0.8b, 1 and 2 threads, 5 repetitions, 1 GiB baseline, 2048 prefill rows, B 1 and 8. */
    public static BenchOptions defaults() {
        return new BenchOptions("qwen3.5-0.8b", List.of(1, 2), 5, false, 1L << 30, 2048, List.of(1, 8), 64, true,
                Set.copyOf(PARTS));
    }

    /** A smoke run: the small preset, 3 repetitions, short warm-up, 256 MiB baseline, 128 prefill rows. */
    public static BenchOptions quick() {
        return new BenchOptions("small", List.of(1, 2), 3, true, 256L << 20, 128, List.of(1, 8), 64, true,
                Set.copyOf(PARTS));
    }

    public BenchOptions withPreset(String name) {
        return new BenchOptions(name, threads, repetitions, shortWarmup, baselineBytes, prefillRows, draftBatches, kvHistory,
                openBlas, parts);
    }

    public BenchOptions withThreads(List<Integer> counts) {
        return new BenchOptions(preset, counts, repetitions, shortWarmup, baselineBytes, prefillRows, draftBatches,
                kvHistory, openBlas, parts);
    }

    public BenchOptions withRepetitions(int n) {
        return new BenchOptions(preset, threads, n, shortWarmup, baselineBytes, prefillRows, draftBatches, kvHistory,
                openBlas, parts);
    }

    public BenchOptions withOpenBlas(boolean on) {
        return new BenchOptions(preset, threads, repetitions, shortWarmup, baselineBytes, prefillRows, draftBatches,
                kvHistory, on, parts);
    }

    /** Only these groups of figures ({@link #PARTS}). */
    public BenchOptions withParts(List<String> names) {
        return new BenchOptions(preset, threads, repetitions, shortWarmup, baselineBytes, prefillRows, draftBatches,
                kvHistory, openBlas, new LinkedHashSet<>(names));
    }

    /** Whether {@code part} is measured. */
    public boolean measures(String part) {
        return parts.contains(part);
    }

    /**
     * Options from command-line words: {@code --quick}, {@code --preset NAME}, {@code --threads 1,2},
     * {@code --repetitions N}, {@code --only matvec,draft,prefill,target,target-large}, {@code --no-openblas}.
     *
     * @throws IllegalArgumentException for an unknown word or a missing value
     */
    public static BenchOptions parse(List<String> args) {
        BenchOptions o = args.contains("--quick") ? quick() : defaults();
        for (int i = 0; i < args.size(); i++) {
            String a = args.get(i);
            switch (a) {
                case "--quick" -> { }
                case "--no-openblas" -> o = o.withOpenBlas(false);
                case "--preset", "--threads", "--repetitions", "--only" -> {
                    if (i + 1 >= args.size()) {
                        throw new IllegalArgumentException("bench: " + a + " needs a value");
                    }
                    String v = args.get(++i);
                    o = switch (a) {
                        case "--preset" -> o.withPreset(v);
                        case "--threads" -> o.withThreads(ints(v));
                        case "--only" -> o.withParts(List.of(v.split(",")));
                        default -> o.withRepetitions(Integer.parseInt(v));
                    };
                }
                default -> throw new IllegalArgumentException("bench: unknown option '" + a + "', expected --quick,"
                        + " --preset NAME, --threads 1,2, --repetitions N, --only PARTS or --no-openblas");
            }
        }
        return o;
    }

    private static List<Integer> ints(String csv) {
        List<Integer> out = new ArrayList<>();
        for (String s : csv.split(",")) {
            out.add(Integer.parseInt(s.trim()));
        }
        return out;
    }
}
