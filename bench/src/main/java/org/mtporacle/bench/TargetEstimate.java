package org.mtporacle.bench;

import java.lang.foreign.Arena;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.SortedSet;
import java.util.function.Consumer;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.LinearWeight;
import org.mtporacle.api.TargetModel;
import org.mtporacle.reference.fixture.TargetFixtures;
import org.mtporacle.reference.kernels.KernelMode;
import org.mtporacle.reference.kernels.Kernels;
import org.mtporacle.reference.target.ReferenceTarget;
import org.mtporacle.reference.target.ReferenceTargetRows;
import org.mtporacle.reference.target.TargetTrace;

/**
 * The verify step of a target too large to hold, estimated (spec §13): one full-attention interval (three GDN
 * layers and an attention layer, {@link BenchTargets#interval}) with the real head is verified at B = 1, the head's
 * logits timed alone in the same rounds, and the whole model's step is taken as {@code head + (L/4) · (interval −
 * head)}; its floor counts the same bytes scaled alike ({@link BenchTargets#verifyBytes}), plus every layer's state.
 */
final class TargetEstimate {
    private TargetEstimate() {
    }

    /** The presets estimated: the large dense and MoE shapes, or their small twins for a smoke run. */
    static List<String> presets(boolean quick) {
        return quick ? List.of("small-target", "tiny-moe-target")
                : List.of("qwen3.5-27b-target", "qwen3.5-35b-a3b-target");
    }

    static void run(BenchOptions o, List<BenchReport.Row> rows, List<String> notes, Consumer<String> progress) {
        for (String name : presets(o.shortWarmup())) {
            TargetFixtures.Preset p = TargetFixtures.preset(name);
            progress.accept("target estimate " + name + ": building one interval (3 GDN + 1 attention) and the head");
            try (Arena arena = Arena.ofShared()) {
                estimate(o, p, BenchTargets.interval(arena, p), rows, notes, progress);
            }
        }
    }

    private static void estimate(BenchOptions o, TargetFixtures.Preset p, TargetModel four, List<BenchReport.Row> rows,
            List<String> notes, Consumer<String> progress) {
        int w = TargetStepBench.WIDTH;
        int layers = p.config().layerCount();
        int h = p.config().shape().hiddenSize();
        LinearWeight head = four.weights().head();
        double[][] s;
        long read;
        List<SortedSet<Integer>> experts;
        try (ReferenceTarget target = new ReferenceTarget(four, new Kernels(KernelMode.VECTOR, 1));
             ReferenceTargetRows group = target.openReferenceRows(Collections.singletonList(null));
             Kernels k = new Kernels(KernelMode.VECTOR, 1)) {
            progress.accept("target estimate " + p.name() + ": prefill of " + TargetStepBench.HISTORY + " tokens");
            group.prefill(HostTensor.ofInts(ids(p, TargetStepBench.HISTORY, 3), 1, TargetStepBench.HISTORY));
            HostTensor tokens = HostTensor.ofInts(ids(p, w, 5), 1, w);
            TargetTrace trace = new TargetTrace();
            group.traceNextCall(trace);
            group.verify(tokens);
            group.commit(new int[1]);
            experts = BenchTargets.chosenExperts(four, trace, k);
            boolean moe = experts.stream().anyMatch(e -> !e.isEmpty());
            float[] x = BenchWeights.pattern(w * h);
            float[] logits = new float[w * p.config().shape().vocabSize()];
            progress.accept("target estimate " + p.name() + ": timing the interval and the head");
            try (ReadBandwidth rb = ReadBandwidth.over(BenchTargets.weightSegments(four, moe ? experts : null), 1)) {
                s = Timing.interleaved(o.repetitions(), Timing.MIN_ROUNDS, o.shortWarmup(), () -> rb.read(1), () -> {
                    group.verify(tokens);
                    group.commit(new int[1]);
                }, () -> k.matmul(logits, 0, head, x, 0, w));
                read = rb.bytes(1);
            }
            if (moe) {
                notes.add(String.format(Locale.ROOT, "target estimate %s: the verify's %d tokens chose %s of %d "
                                + "experts in the interval's layers (its floor counts those)", p.name(), w,
                        experts.stream().map(e -> Integer.toString(e.size())).toList(), p.moe().numExperts()));
            }
        }
        // the whole model's bytes: the head and embedding rows once, the interval's layers L/4 times, every state
        BenchTargets.VerifyBytes one = BenchTargets.verifyBytes(four, 1, w, TargetStepBench.HISTORY,
                experts.stream().anyMatch(e -> !e.isEmpty()) ? experts : null);
        long headBytes = head.byteSize() + (long) w * (four.weights().embedding().byteSize()
                / four.weights().embedding().outFeatures());
        double bytes = wholeModel(headBytes, one.total(), layers);
        double[] est = new double[s[0].length];
        double[] ratio = new double[est.length];
        for (int i = 0; i < est.length; i++) {
            est[i] = wholeModel(s[2][i], s[1][i], layers);
            ratio[i] = est[i] / (bytes * s[0][i] / read);
        }
        double t = Timing.median(est);
        String name = String.format(Locale.ROOT, "target verify d+1=%d B=1 %s (estimate)", w,
                p.name().replace("-target", ""));
        rows.add(BenchReport.Row.compared(name, 1, t, "GB/s", bytes / t / 1e9, Timing.median(ratio),
                "bandwidth floor"));
        rows.add(BenchReport.Row.info("  per verified token", 1, t / w, "tok/s", w / t));
        notes.add(String.format(Locale.ROOT, "target estimate %s (%d layers): one interval of 3 GDN + 1 attention "
                        + "layers with pattern weights (the GDN layers one object of %.0f MB) verified at B=1 in "
                        + "%.1f ms with its head alone in %.1f ms, so the model is about head + %.0f × (interval − "
                        + "head); floor %.2f GB per verify", p.name(), layers,
                BenchTargets.linears(four.weights().layers().get(0), Set.of()).stream()
                        .mapToLong(LinearWeight::byteSize).sum() / 1e6, Timing.median(s[1]) * 1e3,
                Timing.median(s[2]) * 1e3, layers / 4.0, bytes / 1e9));
    }

    /**
     * A whole model of {@code layers} layers from its head part and one interval of four layers that includes the
     * head: {@code head + (layers / 4) · (interval − head)} (seconds or bytes).
     */
    static double wholeModel(double head, double interval, int layers) {
        return head + layers / 4.0 * (interval - head);
    }

    private static int[] ids(TargetFixtures.Preset p, int n, int salt) {
        int v = p.config().shape().vocabSize();
        int[] out = new int[n];
        for (int i = 0; i < n; i++) {
            out[i] = (int) (((i + 31L * salt) * 2654435761L >>> 5) % v);
        }
        return out;
    }
}
