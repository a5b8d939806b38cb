package org.mtporacle.bench;

import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.mtporacle.api.DraftSampling;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.LinearWeight;
import org.mtporacle.api.MlpWeights;
import org.mtporacle.api.MtpConfig;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.MtpWeights;
import org.mtporacle.api.RowCheckpoint;
import org.mtporacle.reference.block.MtpBlock;
import org.mtporacle.reference.ReferenceDraftModel;
import org.mtporacle.reference.ReferenceDraftRows;
import org.mtporacle.reference.block.RowKv;
import org.mtporacle.reference.block.TargetHead;
import org.mtporacle.reference.fixture.FixtureModels;
import org.mtporacle.reference.kernels.KernelMode;
import org.mtporacle.reference.kernels.Kernels;

/**
 * One draft step at a preset's shape over an in-memory BF16 model with synthetic weights and a tied embedding as the
 * head: the bare compute ({@link MtpBlock#forward} + {@link TargetHead#logProbs}) and the same work as one draft round
 * through {@link ReferenceDraftRows} (draft depth 1, then commit with nothing accepted), timed alternately.
 */
final class DraftStepBench {
    private final MtpModel model;

    DraftStepBench(Arena arena, FixtureModels.Preset p) {
        this.model = syntheticModel(arena, p, false);
    }

    /**
     * An in-memory model at {@code p}'s shape with synthetic off-heap weights and a tied embedding as the head: BF16
     * linears, or every linear (head included) 4-bit group-64 affine with BF16 scales when {@code affine4}.
     */
    static MtpModel syntheticModel(Arena arena, FixtureModels.Preset p, boolean affine4) {
        int h = p.hiddenSize();
        int d = p.headDim();
        int nH = p.numHeads();
        int nKv = p.numKvHeads();
        int inter = p.intermediateSize();
        MtpConfig c = new MtpConfig(h, nH, nKv, d, (int) (d * 0.25) / 2 * 2, 1e7, 1e-6, p.vocabSize(), inter);
        java.util.function.Function<int[], LinearWeight> linear = affine4
                ? s -> BenchWeights.affine4(arena, s[0], s[1])
                : s -> BenchWeights.bf16(arena, s[0], s[1], s[2]);
        LinearWeight emb = linear.apply(new int[] {p.vocabSize(), h, 11});
        MlpWeights mlp;
        if (p.moe() == null) {
            mlp = new MlpWeights.Dense(linear.apply(new int[] {inter, h, 6}), linear.apply(new int[] {inter, h, 7}),
                    linear.apply(new int[] {h, inter, 8}));
        } else {
            // the router stays BF16 (MLX keeps it dense or 8-bit); experts and the shared expert as the rest
            List<MlpWeights.Dense> experts = new ArrayList<>();
            for (int e = 0; e < p.moe().numExperts(); e++) {
                experts.add(new MlpWeights.Dense(linear.apply(new int[] {inter, h, 100 + 3 * e}),
                        linear.apply(new int[] {inter, h, 101 + 3 * e}), linear.apply(new int[] {h, inter, 102 + 3 * e})));
            }
            int sw = p.moe().sharedWidth();
            mlp = new MlpWeights.Moe(BenchWeights.bf16(arena, p.moe().numExperts(), h, 12), experts,
                    new MlpWeights.Dense(linear.apply(new int[] {sw, h, 13}), linear.apply(new int[] {sw, h, 14}),
                            linear.apply(new int[] {h, sw, 15})), BenchWeights.bf16(arena, 1, h, 16), p.moe().topK(),
                    true);
        }
        MtpWeights w = new MtpWeights(linear.apply(new int[] {h, 2 * h, 1}), ones(h), ones(h), ones(h),
                linear.apply(new int[] {nH * 2 * d, h, 2}), linear.apply(new int[] {nKv * d, h, 3}),
                linear.apply(new int[] {nKv * d, h, 4}), linear.apply(new int[] {h, nH * d, 5}), ones(d), ones(d),
                ones(h), mlp, ones(h), emb, emb);
        return new MtpModel(c, w, "bench-" + p.name() + (affine4 ? "-q4" : ""), "in-memory", "bench", List.of());
    }

    /**
     * Bytes of weights one step of {@code b} rows reads at least once: block linears (for MoE the router, the union of
     * the experts the {@code b} rows choose, the shared expert and its gate), head, {@code b} embedding rows.
     */
    long weightBytes(int b, int history) {
        if (!model.weights().isMoe()) {
            return weightBytes(model, b);
        }
        long sum = 0;
        for (LinearWeight l : linears(b, history)) {
            sum += l.byteSize();
        }
        LinearWeight emb = model.weights().embedding();
        return sum + (long) b * emb.byteSize() / emb.outFeatures();
    }

    /** {@link #weightBytes(int)} of any model: block linears, head, {@code b} embedding rows. */
    static long weightBytes(MtpModel model, int b) {
        MtpWeights w = model.weights();
        return w.blockBytes() + w.head().byteSize() + (long) b * w.embedding().byteSize() / w.embedding().outFeatures();
    }

    /**
     * The linears one step of {@code b} rows reads and the head: the weights {@link #weightBytes} counts whole (its
     * embedding rows aside). For MoE, the experts are those the bench's {@code b} rows choose after {@code history}
     * positions (spec §12.4).
     */
    List<LinearWeight> linears(int b, int history) {
        MtpWeights w = model.weights();
        List<LinearWeight> out = new ArrayList<>(List.of(w.fc(), w.qProj(), w.kProj(), w.vProj(), w.oProj()));
        switch (w.mlp()) {
            case MlpWeights.Dense d -> out.addAll(List.of(d.gateProj(), d.upProj(), d.downProj()));
            case MlpWeights.Moe m -> {
                out.addAll(List.of(m.router(), m.sharedExpert().gateProj(), m.sharedExpert().upProj(),
                        m.sharedExpert().downProj(), m.sharedExpertGate()));
                for (int e : chosenExperts(b, history)) {
                    MlpWeights.Dense x = m.experts().get(e);
                    out.addAll(List.of(x.gateProj(), x.upProj(), x.downProj()));
                }
            }
        }
        out.add(w.head());
        return out;
    }

    /**
     * The union of the experts the bench's {@code b} rows choose in the timed step (one traced forward on the same
     * inputs and history: routing depends on the attention output).
     */
    java.util.SortedSet<Integer> chosenExperts(int b, int history) {
        return chosen.computeIfAbsent(b + "/" + history, x -> {
            java.util.SortedSet<Integer> set = new java.util.TreeSet<>();
            try (Kernels k = new Kernels(KernelMode.VECTOR, 1)) { // the weights may live in a confined arena
                Setup s = setup(k, b, history);
                org.mtporacle.reference.block.ForwardTrace trace = new org.mtporacle.reference.block.ForwardTrace();
                s.block().forward(s.head().embed(s.pending()), s.hin(), s.kvs(), 1, trace);
                for (float e : trace.get("topk_indices")) {
                    set.add((int) e);
                }
            }
            return set;
        });
    }

    private final java.util.Map<String, java.util.SortedSet<Integer>> chosen = new java.util.HashMap<>();

    /** For a row name: {@code ", experts 8 of 256"} at a MoE preset (the union of the rows' choices), else empty. */
    String expertsTouched(int b, int history) {
        return model.weights().mlp() instanceof MlpWeights.Moe m
                ? ", experts " + chosenExperts(b, history).size() + " of " + m.numExperts() : "";
    }

    private record Setup(MtpBlock block, TargetHead head, RowKv[] kvs, int[] pending, float[] hin) {
    }

    private Setup setup(Kernels k, int b, int history) {
        MtpConfig c = model.config();
        int h = c.hiddenSize();
        MtpBlock block = new MtpBlock(c, model.weights(), k);
        TargetHead head = new TargetHead(model.weights(), k);
        RowKv[] kvs = new RowKv[b];
        for (int r = 0; r < b; r++) {
            kvs[r] = new RowKv(c.numKvHeads(), c.headDim());
            block.forward(head.embed(ids(history, r)), BenchWeights.pattern(history * h), new RowKv[] {kvs[r]},
                    history, null);
        }
        return new Setup(block, head, kvs, ids(b, 7), BenchWeights.pattern(b * h));
    }

    /**
     * Floating-point operations of one step of {@code b} rows in its linears and head (2 per multiply-add); attention
     * over the history, norms and the log-softmax add well under 1% at the presets' shapes and are left out, so
     * {@code flops ÷ peak} is a lower bound on the step's time.
     */
    double flops(int b, int history) {
        long macs = 0;
        for (LinearWeight l : linears(b, history)) {
            macs += (long) l.inFeatures() * l.outFeatures();
        }
        if (model.weights().mlp() instanceof MlpWeights.Moe m) {
            // each row runs its own K experts, not the union
            long expert = 3L * m.expertWidth() * model.config().hiddenSize();
            macs += (m.topK() - (long) chosenExperts(b, history).size()) * expert;
        }
        return 2.0 * b * macs;
    }

    /**
     * The baseline, the bare step and the round timed in rounds on one kernel pool ({@link Timing#interleaved}):
     * {@code {baseline, bare, round}[round]} seconds.
     */
    double[][] baselineBareAndRound(int threads, int b, int history, int reps, boolean quick, Runnable baseline) {
        MtpConfig c = model.config();
        int h = c.hiddenSize();
        try (Kernels k = new Kernels(KernelMode.VECTOR, threads)) {
            MtpBlock block = new MtpBlock(c, model.weights(), k);
            TargetHead head = new TargetHead(model.weights(), k);
            RowKv[] kvs = new RowKv[b];
            for (int r = 0; r < b; r++) {
                kvs[r] = new RowKv(c.numKvHeads(), c.headDim());
                block.forward(head.embed(ids(history, r)), BenchWeights.pattern(history * h), new RowKv[] {kvs[r]},
                        history, null);
            }
            int[] pending = ids(b, 7);
            float[] hin = BenchWeights.pattern(b * h);
            List<RowCheckpoint> cps = new ArrayList<>();
            for (int r = 0; r < b; r++) {
                int n = kvs[r].length();
                cps.add(RowCheckpoint.sealed(RowCheckpoint.SCHEMA, n + 1, n, model.identity(),
                        HostTensor.ofFloats(new float[c.numKvHeads() * n * c.headDim()], 1, c.numKvHeads(), n,
                                c.headDim()),
                        HostTensor.ofFloats(new float[c.numKvHeads() * n * c.headDim()], 1, c.numKvHeads(), n,
                                c.headDim()),
                        HostTensor.ofFloats(Arrays.copyOf(hin, h), 1, 1, h)));
            }
            ReferenceDraftModel m = new ReferenceDraftModel(model, k);
            ReferenceDraftRows rows = m.openReferenceRows(cps);
            long[] steps = new long[b];
            DraftSampling greedy = DraftSampling.greedy(b);
            HostTensor context = HostTensor.ofFloats(BenchWeights.pattern(b * 2 * h), b, 2, h);
            int[] accepted = new int[b];
            int[] lengths = new int[b];
            for (int r = 0; r < b; r++) {
                lengths[r] = kvs[r].length();
            }
            return Timing.interleaved(reps, Timing.MIN_ROUNDS, quick, baseline, () -> {
                float[] y = block.forward(head.embed(pending), hin, kvs, 1, null);
                float[] lp = head.logProbs(y, b);
                if (Float.isNaN(lp[0])) {
                    throw new IllegalStateException("bench: draft step produced NaN");
                }
                for (int r = 0; r < b; r++) {
                    kvs[r].setLength(lengths[r]); // keep the bare step's history as long as the round's
                }
            }, () -> {
                rows.draft(pending, 1, steps, greedy);
                rows.commit(accepted, context);
            });
        }
    }

    private int[] ids(int n, int salt) {
        int[] v = new int[n];
        for (int i = 0; i < n; i++) {
            v[i] = (int) (((i + 31L * salt) * 2654435761L >>> 5) % model.config().vocabSize());
        }
        return v;
    }

    private static float[] ones(int n) {
        float[] v = new float[n];
        Arrays.fill(v, 1f);
        return v;
    }
}
