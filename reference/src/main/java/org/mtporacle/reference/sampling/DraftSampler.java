package org.mtporacle.reference.sampling;

import org.mtporacle.api.RowSampler;

/** Placeholder until the seeded sampler lands: greedy only. */
public final class DraftSampler {
    private DraftSampler() {
    }

    public static int sample(float[] logprobs, int off, int vocab, RowSampler sampler, long step) {
        if (!sampler.isGreedy()) {
            throw new UnsupportedOperationException("stochastic sampling is not implemented yet");
        }
        int best = 0;
        for (int i = 1; i < vocab; i++) {
            if (logprobs[off + i] > logprobs[off + best]) {
                best = i;
            }
        }
        return best;
    }
}
