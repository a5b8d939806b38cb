package org.mtporacle.bench;

import java.util.Arrays;
import org.mtporacle.api.TargetConfig;
import org.mtporacle.reference.kernels.Kernels;

/**
 * The Gated DeltaNet recurrence alone at a target's shape (spec §13.2), on synthetic inputs of the forward's kind
 * (q̂ and k̂ unit per head, q̂ scaled by {@code Dk^-½}, decays and write strengths in (0, 1)): {@link #run} is what a
 * verify of {@code tokens} tokens runs in the kernel, every GDN layer from its own state, each token into a new state
 * (spec §13.3's snapshots); the one-layer forms compare the recurrent and the chunked kernel over a prefill.
 */
final class GdnSteps {
    private final TargetConfig.Gdn g;
    private final int tokens;
    private final float[][] published;   // [nGDN][Hv·Dk·Dv]
    private final float[][][] next;      // [nGDN][tokens][Hv·Dk·Dv] for run, or null
    private final float[] work;          // [Hv·Dk·Dv]
    private final float[] q, k, v, gate, beta, out;

    GdnSteps(TargetConfig c, int tokens) {
        this.g = c.gdn();
        this.tokens = tokens;
        int layers = c.count(TargetConfig.LayerType.LINEAR_ATTENTION);
        int size = g.stateSize();
        published = new float[layers][];
        for (int l = 0; l < layers; l++) {
            published[l] = BenchWeights.pattern(size);
            for (int i = 0; i < size; i++) {
                published[l][i] *= 0.05f * (1 + l % 3);
            }
        }
        next = tokens <= 16 ? new float[layers][tokens][size] : null;
        work = new float[size];
        int kd = g.keyDim();
        q = unitHeads(BenchWeights.pattern(tokens * kd), g.keyHeadDim(), (float) (1 / Math.sqrt(g.keyHeadDim())));
        k = unitHeads(Arrays.copyOfRange(BenchWeights.pattern(tokens * kd + 7), 7, tokens * kd + 7), g.keyHeadDim(),
                1f);
        v = BenchWeights.pattern(tokens * g.valueDim());
        gate = new float[tokens * g.numValueHeads()];
        beta = new float[gate.length];
        for (int i = 0; i < gate.length; i++) {
            gate[i] = -0.05f - 0.5f * (i % 7) / 7f;
            beta[i] = 0.2f + 0.6f * (i % 5) / 5f;
        }
        out = new float[tokens * g.valueDim()];
    }

    /** Every GDN layer: {@code tokens} steps from its published state, token {@code t} into {@code next[l][t]}. */
    void run(Kernels kernels) {
        for (int l = 0; l < published.length; l++) {
            float[] from = published[l];
            for (int t = 0; t < tokens; t++) {
                step(kernels, next[l][t], from, t);
                from = next[l][t];
            }
        }
    }

    /** One layer's recurrence over all {@code tokens}, token by token in place (a recurrent prefill). */
    void recurrentOneLayer(Kernels kernels) {
        System.arraycopy(published[0], 0, work, 0, work.length);
        for (int t = 0; t < tokens; t++) {
            step(kernels, work, work, t);
        }
    }

    /** One layer's recurrence over all {@code tokens} in chunks of {@link Kernels#CHUNK} (a chunked prefill). */
    void chunkedOneLayer(Kernels kernels) {
        System.arraycopy(published[0], 0, work, 0, work.length);
        kernels.deltaRuleChunked(out, 0, work, 0, q, 0, k, 0, v, 0, gate, 0, beta, 0, tokens, g.numKeyHeads(),
                g.numValueHeads(), g.keyHeadDim(), g.valueHeadDim());
    }

    private void step(Kernels kernels, float[] to, float[] from, int t) {
        int kd = g.keyDim();
        int vd = g.valueDim();
        int hv = g.numValueHeads();
        kernels.deltaRuleStep(out, t * vd, to, 0, from, 0, q, t * kd, k, t * kd, v, t * vd, gate, t * hv, beta,
                t * hv, g.numKeyHeads(), hv, g.keyHeadDim(), g.valueHeadDim());
    }

    /** {@code x} with every head of {@code d} scaled to length {@code scale}. */
    private static float[] unitHeads(float[] x, int d, float scale) {
        for (int h = 0; h + d <= x.length; h += d) {
            double ss = 1e-6;
            for (int i = 0; i < d; i++) {
                ss += (double) x[h + i] * x[h + i];
            }
            float f = (float) (scale / Math.sqrt(ss));
            for (int i = 0; i < d; i++) {
                x[h + i] *= f;
            }
        }
        return x;
    }
}
