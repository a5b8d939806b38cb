package org.mtporacle.reference;

/**
 * Sees every draft position of the reference and may replace the token the sampler drew. The lockstep harness uses
 * it to record the reference's log-probs and continue on another backend's token (DESIGN "Numerics policy").
 */
@FunctionalInterface
public interface DraftChooser {
    /** Keeps the sampled token. */
    DraftChooser SAMPLED = (row, position, logprobs, offset, sampled) -> sampled;

    /**
     * The token row {@code row} takes at draft position {@code position}.
     *
     * @param logprobs the row's log-probabilities at {@code [offset, offset + V)}; read only
     * @param sampled  what the row's sampler drew
     */
    int choose(int row, int position, float[] logprobs, int offset, int sampled);
}
