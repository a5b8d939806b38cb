package org.mtporacle.reference.block;

import org.mtporacle.api.MtpWeights;
import org.mtporacle.reference.kernels.Kernels;

/** The target ports the block borrows (spec §1.7): token embedding and the logits head, no final norm. */
public final class TargetHead {
    private final MtpWeights w;
    private final Kernels k;
    private final int hidden;
    private final int vocab;

    public TargetHead(MtpWeights weights, Kernels kernels) {
        this.w = weights;
        this.k = kernels;
        this.hidden = weights.embedding().inFeatures();
        this.vocab = weights.head().outFeatures();
    }

    public int vocabSize() {
        return vocab;
    }

    /** {@code [ids.length, H]} rows of {@code embed_tokens} (no embedding scale for Qwen). */
    public float[] embed(int[] ids) {
        float[] out = new float[ids.length * hidden];
        for (int i = 0; i < ids.length; i++) {
            k.embed(out, i * hidden, w.embedding(), ids[i]);
        }
        return out;
    }

    /** {@code [n, V]} logits {@code h · Wᵀ} for {@code h [n, H]}. */
    public float[] logits(float[] h, int n) {
        float[] out = new float[n * vocab];
        k.matmul(out, 0, w.head(), h, 0, n);
        return out;
    }

    /** {@code [n, V]} log-probabilities {@code logits − logsumexp(logits)} per row. */
    public float[] logProbs(float[] h, int n) {
        float[] logits = logits(h, n);
        for (int r = 0; r < n; r++) {
            k.logSoftmax(logits, r * vocab, logits, r * vocab, vocab); // in place: each element is read, then written
        }
        return logits;
    }
}
