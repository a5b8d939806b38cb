package org.mtporacle.bench;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Consumer;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.LinearWeight;
import org.mtporacle.api.TargetConfig;
import org.mtporacle.api.TargetModel;
import org.mtporacle.api.TargetRows;
import org.mtporacle.api.TargetWeights;
import org.mtporacle.reference.fixture.FixtureModels;
import org.mtporacle.reference.fixture.TargetFixtures;
import org.mtporacle.reference.kernels.KernelMode;
import org.mtporacle.reference.kernels.Kernels;
import org.mtporacle.reference.target.ReferenceTarget;
import org.mtporacle.reference.target.ReferenceTargetRows;

/**
 * The hybrid target's figures at a preset's shape (spec §13): one verify of {@link #WIDTH} tokens per row plus its
 * commit through {@link ReferenceTargetRows} against its bandwidth floor ({@link BenchTargets#verifyBytes}), the
 * Gated DeltaNet recurrence's share of that step, and a prefill in the recurrent and the chunked form.
 */
final class TargetStepBench {
    /** Tokens per row of the timed verify: the pending token and {@code d = 3} drafts. */
    static final int WIDTH = 4;
    /** Positions each row holds before the timed verifies (a prompt; every round then keeps one more). */
    static final int HISTORY = 16;
    /** Fewest rounds of a batched verify (B = 8 at qwen3.5-0.8b takes about a second on one thread). */
    static final int BATCHED_ROUNDS = 5;
    /**
     * Layers of the prefill comparison: the first, a GDN layer (where the two forms differ; a 2048-token prefill of
     * one layer takes about a second on one thread, of the 0.8b model's 24 about a minute).
     */
    static final int PREFILL_LAYERS = 1;

    private final TargetFixtures.Preset preset;
    private final TargetModel model;

    private TargetStepBench(TargetFixtures.Preset preset, TargetModel model) {
        this.preset = preset;
        this.model = model;
    }

    /** Measures the target figures for the bench's preset, or notes why there are none. */
    static void run(BenchOptions o, Map<Integer, Double> peak, List<BenchReport.Row> rows,
            List<String> notes, Consumer<String> progress) {
        TargetFixtures.Preset p = BenchTargets.targetOf(FixtureModels.preset(o.preset()));
        if (p == null) {
            notes.add("target figures skipped: preset " + o.preset() + " has no target twin (" + o.preset()
                    + "-target); use qwen3.5-0.8b, small or tiny");
            return;
        }
        progress.accept("building the " + p.name() + " target (every layer its own synthetic BF16 weights)");
        TargetStepBench t = new TargetStepBench(p, BenchTargets.distinct(p, 7));
        for (int threads : o.threads()) {
            for (int b : o.draftBatches()) {
                t.verify(o, threads, b, peak.get(threads), rows, notes, progress);
            }
        }
        t.prefill(o, rows, notes, progress);
    }

    /** The verify step of {@code b} rows against its floor; at one thread and B = 1 also the GDN kernel's share. */
    private void verify(BenchOptions o, int threads, int b, double peakGflops, List<BenchReport.Row> rows,
            List<String> notes, Consumer<String> progress) {
        progress.accept("target verify " + preset.name() + " B=" + b + ", " + threads + " thread(s)");
        BenchTargets.VerifyBytes bytes = BenchTargets.verifyBytes(model, b, WIDTH, HISTORY, null);
        boolean share = threads == 1 && b == 1;
        double[][] s;
        long read;
        try (ReadBandwidth rb = ReadBandwidth.over(BenchTargets.weightSegments(model, null), threads);
             ReferenceTarget target = new ReferenceTarget(model, new Kernels(KernelMode.VECTOR, threads));
             TargetRows group = target.openRows(Collections.nCopies(b, null));
             Kernels alone = new Kernels(KernelMode.VECTOR, threads)) {
            group.prefill(HostTensor.ofInts(ids(b * HISTORY, 3), b, HISTORY));
            HostTensor tokens = HostTensor.ofInts(ids(b * WIDTH, 5), b, WIDTH);
            int[] accepted = new int[b];
            Runnable step = () -> {
                group.verify(tokens);
                group.commit(accepted);
            };
            GdnSteps kernel = share ? new GdnSteps(model.config(), WIDTH) : null;
            Runnable linears = share ? linearsAlone(alone, b * WIDTH) : null;
            int rounds = b == 1 ? Timing.MIN_ROUNDS : BATCHED_ROUNDS;
            s = share ? Timing.interleaved(o.repetitions(), rounds, o.shortWarmup(), () -> rb.read(threads), step,
                    () -> kernel.run(alone), linears)
                    : Timing.interleaved(o.repetitions(), rounds, o.shortWarmup(), () -> rb.read(threads), step);
            read = rb.bytes(threads);
        }
        double t = Timing.median(s[1]);
        double ratio = Timing.medianRatio((double) read / bytes.total(), s[1], s[0]);
        String name = String.format(Locale.ROOT, "target verify d+1=%d B=%d (+commit)", WIDTH, b);
        rows.add(threads == 1 && b == 1
                ? BenchReport.Row.atMost(name, threads, t, "GB/s", bytes.total() / t / 1e9, ratio, "bandwidth floor",
                        1.5)
                : BenchReport.Row.compared(name, threads, t, "GB/s", bytes.total() / t / 1e9, ratio,
                        "bandwidth floor"));
        double flops = BenchTargets.linearFlops(model, b * WIDTH);
        double floor = bytes.total() * Timing.median(s[0]) / read;
        rows.add(BenchReport.Row.compared("target verify B=" + b + " compute floor (FLOPs / FMA peak)", threads,
                flops / (peakGflops * 1e9), "GFLOP/s", peakGflops, flops / (peakGflops * 1e9) / floor,
                "bandwidth floor"));
        if (share) {
            int gdn = model.config().count(TargetConfig.LayerType.LINEAR_ATTENTION);
            double kernel = Timing.median(s[2]);
            rows.add(BenchReport.Row.compared(String.format(Locale.ROOT, "  GDN recurrence alone (%d tok x %d layers)",
                    WIDTH, gdn), threads, kernel, "µs/step", kernel / (WIDTH * gdn) * 1e6,
                    Timing.medianRatio(1, s[2], s[1]), "verify step"));
            rows.add(BenchReport.Row.compared(String.format(Locale.ROOT, "  linears and head alone (%d rows each)",
                    WIDTH), threads, Timing.median(s[3]), "GB/s", bytes.weights() / Timing.median(s[3]) / 1e9,
                    Timing.medianRatio((double) read / bytes.total(), s[3], s[0]), "bandwidth floor"));
            notes.add(String.format(Locale.ROOT, "target verify floor at %s, B=1: %.1f MB of weights (%s), %.1f MB "
                            + "of GDN state and conv windows (read once, written once), %.2f MB of attention caches; "
                            + "the per-token state snapshots (%.1f MB more) are not in the floor",
                    preset.name(), bytes.weights() / 1e6, "every layer, head, embedding rows", bytes.states() / 1e6,
                    bytes.caches() / 1e6, (WIDTH - 1) * bytes.states() / 2e6));
        }
    }

    /** Every linear of the model and the head multiplied by {@code rows} input rows, as a verify does, and nothing else. */
    private Runnable linearsAlone(Kernels k, int rows) {
        List<LinearWeight> all = new ArrayList<>();
        for (TargetWeights.Layer l : model.weights().layers()) {
            all.addAll(BenchTargets.linears(l, null));
        }
        all.add(model.weights().head());
        int in = all.stream().mapToInt(LinearWeight::inFeatures).max().orElse(1);
        int out = all.stream().mapToInt(LinearWeight::outFeatures).max().orElse(1);
        float[] x = BenchWeights.pattern(rows * in);
        float[] y = new float[rows * out];
        return () -> {
            for (LinearWeight w : all) {
                k.matmul(y, 0, w, x, 0, rows);
            }
        };
    }

    /**
     * The two GDN kernels alone over {@link BenchOptions#prefillRows} tokens of one layer, then a prefill of as many
     * tokens through {@link ReferenceTargetRows} on the first {@link #PREFILL_LAYERS} layers in each form (the kernels
     * first: their rounds also compile the chunked kernel, which the verifies never run).
     */
    private void prefill(BenchOptions o, List<BenchReport.Row> rows, List<String> notes, Consumer<String> progress) {
        int n = o.prefillRows();
        progress.accept("GDN kernels over " + n + " tokens, recurrent and chunked");
        GdnSteps kernels = new GdnSteps(model.config(), n);
        try (Kernels k = new Kernels(KernelMode.VECTOR, 1)) {
            double[][] g = Timing.interleaved(o.repetitions(), 5, o.shortWarmup(), () -> kernels.recurrentOneLayer(k),
                    () -> kernels.chunkedOneLayer(k));
            String kw = String.format(Locale.ROOT, "GDN kernel alone, %d tok, 1 layer", n);
            rows.add(BenchReport.Row.info(kw + ", recurrent", 1, Timing.median(g[0]), "tok/s",
                    n / Timing.median(g[0])));
            rows.add(BenchReport.Row.compared(kw + ", chunked", 1, Timing.median(g[1]), "tok/s",
                    n / Timing.median(g[1]), Timing.medianRatio(1, g[1], g[0]), "recurrent"));
        }
        int layers = Math.min(PREFILL_LAYERS, model.config().layerCount());
        TargetModel part = BenchTargets.firstLayers(model, layers);
        progress.accept("target prefill " + n + " tokens, " + layers + " layer(s), recurrent and chunked");
        HostTensor ids = HostTensor.ofInts(ids(n, 9), 1, n);
        double[][] s;
        try (ReferenceTarget rec = new ReferenceTarget(part, new Kernels(KernelMode.VECTOR, 1),
                ReferenceTarget.PrefillForm.RECURRENT);
             ReferenceTarget chunked = new ReferenceTarget(part, new Kernels(KernelMode.VECTOR, 1),
                     ReferenceTarget.PrefillForm.CHUNKED)) {
            s = Timing.rounds(1, o.repetitions(), () -> prefillOnce(rec, ids), () -> prefillOnce(chunked, ids));
        }
        String what = String.format(Locale.ROOT, "target prefill %d tok, %d layer%s", n, layers, layers == 1 ? "" : "s");
        rows.add(BenchReport.Row.info(what + ", recurrent", 1, Timing.median(s[0]), "tok/s", n / Timing.median(s[0])));
        rows.add(BenchReport.Row.compared(what + ", chunked", 1, Timing.median(s[1]), "tok/s",
                n / Timing.median(s[1]), Timing.medianRatio(1, s[1], s[0]), "recurrent"));
        if (layers < model.config().layerCount()) {
            notes.add(String.format(Locale.ROOT, "target prefill through ReferenceTargetRows on the first %d of %s's "
                    + "%d layers (a GDN layer: projections, conv, recurrence, gated norm, MLP; the head once), to keep "
                    + "the run short; the forms differ only in the recurrence, which the whole model runs in %d "
                    + "layers", layers, preset.name(), model.config().layerCount(),
                    model.config().count(TargetConfig.LayerType.LINEAR_ATTENTION)));
        }
    }

    private static void prefillOnce(ReferenceTarget target, HostTensor ids) {
        try (TargetRows r = target.openRows(Collections.singletonList(null))) {
            r.prefill(ids);
        }
    }

    /** Deterministic token ids in [0, V). */
    private int[] ids(int n, int salt) {
        int v = model.config().shape().vocabSize();
        int[] out = new int[n];
        for (int i = 0; i < n; i++) {
            out[i] = (int) (((i + 31L * salt) * 2654435761L >>> 5) % v);
        }
        return out;
    }
}
