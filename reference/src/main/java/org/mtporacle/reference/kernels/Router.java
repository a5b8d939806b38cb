package org.mtporacle.reference.kernels;

/**
 * The MoE router's choice for one token (spec §12.3 steps 2–4): {@code p = softmax(logits)} in f32, the {@code K}
 * most probable experts in descending probability with the lower expert index first on exactly equal probability,
 * and their weights {@code w_j = p_{e_j} / Σ_j p_{e_j}} when renormalising, else {@code p_{e_j}}.
 *
 * <p>Arithmetic, one definition for both modes (the router is {@code E ≤ 512} values per token): {@code m = max l_e};
 * {@code z_e = (float) Exp(l_e − m)} with the difference in f32 and {@link Exp} in f64; {@code s = Σ z_e} in f32 in
 * expert order; {@code p_e = z_e / s} in f32. The renormalising sum runs over the slots in order, in f32, and each
 * weight is one f32 division.
 */
final class Router {
    private Router() {
    }

    /**
     * Fills {@code probs[pOff, pOff+n)}, {@code experts[0, k)} and {@code weights[0, k)} for the {@code n} logits at
     * {@code logits[off]}.
     */
    static void route(float[] probs, int pOff, int[] experts, float[] weights, float[] logits, int off, int n, int k,
                      boolean renormalise) {
        float max = Float.NEGATIVE_INFINITY;
        for (int e = 0; e < n; e++) {
            max = Math.max(max, logits[off + e]);
        }
        float sum = 0f;
        for (int e = 0; e < n; e++) {
            float z = (float) Exp.scalar(logits[off + e] - max);
            probs[pOff + e] = z;
            sum += z;
        }
        for (int e = 0; e < n; e++) {
            probs[pOff + e] = probs[pOff + e] / sum;
        }
        // selection by repeated scans: the first maximum among the unchosen wins, so equal probabilities go to the
        // lower index; K ≤ E ≤ 512 keeps this cheap
        boolean[] taken = new boolean[n];
        for (int j = 0; j < k; j++) {
            int best = -1;
            for (int e = 0; e < n; e++) {
                if (!taken[e] && (best < 0 || probs[pOff + e] > probs[pOff + best])) {
                    best = e;
                }
            }
            taken[best] = true;
            experts[j] = best;
        }
        weights(weights, probs, pOff, experts, k, renormalise);
    }

    /** {@code weights[j] = p[experts[j]]}, divided by their slot-order f32 sum when renormalising (step 4). */
    static void weights(float[] weights, float[] probs, int pOff, int[] experts, int k, boolean renormalise) {
        float chosen = 0f;
        for (int j = 0; j < k; j++) {
            weights[j] = probs[pOff + experts[j]];
            chosen += weights[j];
        }
        if (renormalise) {
            for (int j = 0; j < k; j++) {
                weights[j] = weights[j] / chosen;
            }
        }
    }
}
