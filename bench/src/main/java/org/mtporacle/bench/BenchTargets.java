package org.mtporacle.bench;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import java.util.SortedSet;
import java.util.TreeSet;
import org.mtporacle.api.DType;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.LinearWeight;
import org.mtporacle.api.MlpWeights;
import org.mtporacle.api.MtpConfig;
import org.mtporacle.api.TargetConfig;
import org.mtporacle.api.TargetConfig.LayerType;
import org.mtporacle.api.TargetModel;
import org.mtporacle.api.TargetWeights;
import org.mtporacle.reference.fixture.FixtureModels;
import org.mtporacle.reference.fixture.TargetFixtures;
import org.mtporacle.reference.kernels.Kernels;
import org.mtporacle.reference.target.TargetTrace;

/**
 * The hybrid targets (spec §13) the target figures run on, built in memory, and the bytes one verify must move: the
 * floor the verify step is measured against.
 */
final class BenchTargets {
    private BenchTargets() {
    }

    /**
     * {@code p}'s whole target in BF16 with {@link TargetFixtures}' synthetic values, every layer its own weights
     * (a shared layer could be served from cache across layers, which a real model's cannot).
     */
    static TargetModel distinct(TargetFixtures.Preset p, long seed) {
        TargetFixtures.SyntheticHead head = TargetFixtures.syntheticHead(p, seed, DType.BF16);
        List<TargetWeights.Layer> layers = new ArrayList<>();
        for (int l = 0; l < p.config().layerCount(); l++) {
            layers.add(TargetFixtures.syntheticLayer(p, seed, DType.BF16, l));
        }
        return model(p.config(), new TargetWeights(head.embedding(), layers, head.finalNorm(), head.head()),
                "bench-" + p.name());
    }

    /** The target made of {@code m}'s first {@code n} layers and its head (the same weight objects). */
    static TargetModel firstLayers(TargetModel m, int n) {
        TargetConfig c = m.config();
        TargetWeights w = m.weights();
        return model(new TargetConfig(c.shape(), c.layers().subList(0, n), c.gdn()), new TargetWeights(w.embedding(),
                w.layers().subList(0, n), w.finalNorm(), w.head()), m.identity() + "-first" + n);
    }

    /**
     * One full-attention interval of {@code p} (three GDN layers, which are one object, then an attention layer)
     * with {@link BenchWeights} values in {@code arena}: the large presets' layers outgrow the last-level cache, so
     * the shared object is read from memory each time. The embedding is a second view of the head's bytes (untied, as
     * in the release; a verify reads only its rows).
     */
    static TargetModel interval(Arena arena, TargetFixtures.Preset p) {
        TargetConfig c = p.config();
        TargetConfig four = new TargetConfig(c.shape(), List.of(LayerType.LINEAR_ATTENTION,
                LayerType.LINEAR_ATTENTION, LayerType.LINEAR_ATTENTION, LayerType.FULL_ATTENTION), c.gdn());
        int h = c.shape().hiddenSize();
        int v = c.shape().vocabSize();
        TargetWeights.Layer gdn = patternLayer(arena, p, true);
        TargetWeights.Layer attention = patternLayer(arena, p, false);
        LinearWeight head = BenchWeights.bf16(arena, v, h, 21);
        LinearWeight embedding = p.tied() ? head : new LinearWeight.Dense(HostTensor.view(DType.BF16,
                new int[] {v, h}, ((LinearWeight.Dense) head).weight().data()));
        return model(four, new TargetWeights(embedding, List.of(gdn, gdn, gdn, attention), ones(h), head),
                "bench-" + p.name() + "-interval");
    }

    private static TargetWeights.Layer patternLayer(Arena arena, TargetFixtures.Preset p, boolean isGdn) {
        MtpConfig s = p.config().shape();
        TargetConfig.Gdn g = p.config().gdn();
        int h = s.hiddenSize();
        TargetWeights.Mixer mixer;
        if (isGdn) {
            float[] conv = BenchWeights.pattern(g.convDim() * g.convKernel());
            for (int i = 0; i < conv.length; i++) {
                conv[i] *= 0.5f;
            }
            mixer = new TargetWeights.Gdn(BenchWeights.bf16(arena, g.convDim(), h, 31),
                    BenchWeights.bf16(arena, g.valueDim(), h, 32), BenchWeights.bf16(arena, g.numValueHeads(), h, 33),
                    BenchWeights.bf16(arena, g.numValueHeads(), h, 34), conv, new float[g.numValueHeads()],
                    new float[g.numValueHeads()], ones(g.valueHeadDim()), BenchWeights.bf16(arena, h, g.valueDim(), 35));
        } else {
            int q = s.numHeads() * s.headDim();
            int kv = s.numKvHeads() * s.headDim();
            mixer = new TargetWeights.Attention(BenchWeights.bf16(arena, 2 * q, h, 41), BenchWeights.bf16(arena, kv, h,
                    42), BenchWeights.bf16(arena, kv, h, 43), BenchWeights.bf16(arena, h, q, 44), ones(s.headDim()),
                    ones(s.headDim()));
        }
        int i = s.intermediateSize();
        long salt = isGdn ? 0 : 1000;
        MlpWeights mlp;
        if (p.moe() == null) {
            mlp = new MlpWeights.Dense(BenchWeights.bf16(arena, i, h, 51 + salt), BenchWeights.bf16(arena, i, h,
                    52 + salt), BenchWeights.bf16(arena, h, i, 53 + salt));
        } else {
            List<MlpWeights.Dense> experts = new ArrayList<>();
            for (int e = 0; e < p.moe().numExperts(); e++) {
                experts.add(new MlpWeights.Dense(BenchWeights.bf16(arena, i, h, 100 + 3 * e + salt),
                        BenchWeights.bf16(arena, i, h, 101 + 3 * e + salt),
                        BenchWeights.bf16(arena, h, i, 102 + 3 * e + salt)));
            }
            int sw = p.moe().sharedWidth();
            mlp = new MlpWeights.Moe(BenchWeights.bf16(arena, p.moe().numExperts(), h, 61 + salt), experts,
                    new MlpWeights.Dense(BenchWeights.bf16(arena, sw, h, 62 + salt),
                            BenchWeights.bf16(arena, sw, h, 63 + salt), BenchWeights.bf16(arena, h, sw, 64 + salt)),
                    BenchWeights.bf16(arena, 1, h, 65 + salt), p.moe().topK(), true);
        }
        return new TargetWeights.Layer(ones(h), mixer, ones(h), mlp);
    }

    /**
     * The bytes one verify of {@code w} tokens on each of {@code b} rows holding {@code history} positions moves at
     * least once (spec §13.3). Weights: every layer's linears (for a MoE MLP the router, the shared expert and its
     * gate, and the experts in {@code experts.get(layer)}; all of them when that is null), the head, and the
     * embedding rows of the {@code b·w} tokens. GDN state, per layer and row: the recurrent state and the conv window
     * read once and the kept ones written once (f32). Attention caches, per layer and row: {@code history + w}
     * positions of K and V read, {@code w} written (f32). The snapshots a verify keeps for each token (spec §13.3)
     * are not counted: an implementation can rebuild the kept state at commit instead.
     */
    static VerifyBytes verifyBytes(TargetModel m, int b, int w, int history, List<? extends Set<Integer>> experts) {
        TargetConfig c = m.config();
        TargetWeights tw = m.weights();
        long weights = tw.head().byteSize()
                + (long) Math.min(b * w, c.shape().vocabSize()) * rowBytes(tw.embedding());
        for (int l = 0; l < c.layerCount(); l++) {
            for (LinearWeight x : linears(tw.layers().get(l), experts == null ? null : experts.get(l))) {
                weights += x.byteSize();
            }
        }
        TargetConfig.Gdn g = c.gdn();
        long states = 2L * Float.BYTES * b * c.count(LayerType.LINEAR_ATTENTION)
                * ((long) g.stateSize() + g.windowSize());
        MtpConfig s = c.shape();
        long perPosition = 2L * Float.BYTES * s.numKvHeads() * s.headDim(); // K and V
        long caches = (long) b * c.count(LayerType.FULL_ATTENTION) * perPosition * (history + 2L * w);
        return new VerifyBytes(weights, states, caches);
    }

    /** What {@link #verifyBytes} counts, in bytes. */
    record VerifyBytes(long weights, long states, long caches) {
        long total() {
            return weights + states + caches;
        }
    }

    /**
     * The linears of {@code layer} a forward reads: mixer projections, then the MLP's (for MoE the router, shared
     * expert and gate, then the experts in {@code experts}, or all when it is null).
     */
    static List<LinearWeight> linears(TargetWeights.Layer layer, Set<Integer> experts) {
        List<LinearWeight> out = new ArrayList<>();
        switch (layer.mixer()) {
            case TargetWeights.Gdn g -> out.addAll(List.of(g.inProjQkv(), g.inProjZ(), g.inProjB(), g.inProjA(),
                    g.outProj()));
            case TargetWeights.Attention a -> out.addAll(List.of(a.qProj(), a.kProj(), a.vProj(), a.oProj()));
        }
        switch (layer.mlp()) {
            case MlpWeights.Dense d -> out.addAll(List.of(d.gateProj(), d.upProj(), d.downProj()));
            case MlpWeights.Moe moe -> {
                out.addAll(List.of(moe.router(), moe.sharedExpert().gateProj(), moe.sharedExpert().upProj(),
                        moe.sharedExpert().downProj(), moe.sharedExpertGate()));
                for (int e = 0; e < moe.numExperts(); e++) {
                    if (experts == null || experts.contains(e)) {
                        MlpWeights.Dense x = moe.experts().get(e);
                        out.addAll(List.of(x.gateProj(), x.upProj(), x.downProj()));
                    }
                }
            }
        }
        return out;
    }

    /** The memory a verify of {@code m} reads as weights: every layer's linears (touched experts only) and the head. */
    static List<MemorySegment> weightSegments(TargetModel m, List<? extends Set<Integer>> experts) {
        List<LinearWeight> all = new ArrayList<>();
        for (int l = 0; l < m.config().layerCount(); l++) {
            all.addAll(linears(m.weights().layers().get(l), experts == null ? null : experts.get(l)));
        }
        all.add(m.weights().head());
        return ReadBandwidth.segments(all);
    }

    /**
     * The experts each MoE layer's router chose for the rows of a traced forward (spec §12.3), recomputed from the
     * trace's {@code mixer_residual} with the layer's own norm and router; an empty set for a dense layer.
     */
    static List<SortedSet<Integer>> chosenExperts(TargetModel m, TargetTrace trace, Kernels k) {
        List<SortedSet<Integer>> out = new ArrayList<>();
        int h = m.config().shape().hiddenSize();
        for (int l = 0; l < m.config().layerCount(); l++) {
            SortedSet<Integer> set = new TreeSet<>();
            TargetWeights.Layer layer = m.weights().layers().get(l);
            if (layer.mlp() instanceof MlpWeights.Moe moe) {
                float[] res = trace.get(l, "mixer_residual");
                int rows = res.length / h;
                float[] n = new float[res.length];
                k.rmsNorm(n, 0, res, 0, layer.postAttentionNorm(), h, rows, m.config().shape().rmsNormEps());
                int e = moe.numExperts();
                float[] logits = new float[rows * e];
                k.matmul(logits, 0, moe.router(), n, 0, rows);
                float[] probs = new float[e];
                int[] chosen = new int[moe.topK()];
                for (int r = 0; r < rows; r++) {
                    k.route(probs, 0, chosen, new float[moe.topK()], logits, r * e, e, moe.topK(), moe.normTopK());
                    Arrays.stream(chosen).forEach(set::add);
                }
            }
            out.add(Collections.unmodifiableSortedSet(set));
        }
        return out;
    }

    /**
     * Floating-point operations of the linears and the head for {@code tokens} tokens (2 per multiply-add; for a MoE
     * MLP each token's top-k experts); the recurrence, attention and norms are left out, so {@code flops ÷ peak} is a
     * lower bound on the time.
     */
    static double linearFlops(TargetModel m, int tokens) {
        long macs = (long) m.weights().head().inFeatures() * m.weights().head().outFeatures();
        for (TargetWeights.Layer layer : m.weights().layers()) {
            for (LinearWeight x : linears(layer, Set.of())) {
                macs += (long) x.inFeatures() * x.outFeatures();
            }
            if (layer.mlp() instanceof MlpWeights.Moe moe) {
                macs += (long) moe.topK() * 3 * moe.expertWidth() * m.config().shape().hiddenSize();
            }
        }
        return 2.0 * tokens * macs;
    }

    /** The drafter preset's target twin ({@code qwen3.5-0.8b} → {@code qwen3.5-0.8b-target}), or null. */
    static TargetFixtures.Preset targetOf(FixtureModels.Preset p) {
        String name = p.name() + "-target";
        return TargetFixtures.isPreset(name) ? TargetFixtures.preset(name) : null;
    }

    private static long rowBytes(LinearWeight w) {
        return w.byteSize() / w.outFeatures();
    }

    private static TargetModel model(TargetConfig c, TargetWeights w, String name) {
        return new TargetModel(c, w, name, "in-memory", "qwen3_5", List.of());
    }

    private static float[] ones(int n) {
        float[] v = new float[n];
        Arrays.fill(v, 1f);
        return v;
    }
}
