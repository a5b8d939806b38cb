package org.mtporacle.reference.sampling;

import java.util.Arrays;
import java.util.Comparator;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.RowSampler;

/**
 * One draft sample from one row of log-probabilities (spec §7): greedy argmax when {@code temperature == 0},
 * otherwise top-p, then top-k, then {@code 1/T}, then a categorical draw keyed by {@link #stepKey}. Every step is
 * float32 as in mlx-lm's {@code make_sampler} on MLX's CPU backend; conformance/SPEC.md writes each one out.
 */
public final class DraftSampler {
    /** How {@code mx.random.categorical} draws from a {@code [1, V]} row, which changed in MLX 0.32.1. */
    public enum CategoricalRule {
        /** {@link MlxRandom#categorical}: argmax of logits plus V Gumbel draws (MLX ≤ 0.32.0). */
        GUMBEL_MAX,
        /** {@link MlxRandom#categoricalInverseCdf}: one uniform per key (MLX ≥ 0.32.1, the rule spec §7 states). */
        INVERSE_CDF
    }

    /** The rule spec §7 describes ("MLX draws a [1,V] categorical by inverse CDF with one uniform per key"). */
    public static final CategoricalRule SPEC_RULE = CategoricalRule.INVERSE_CDF;

    private static final long GOLDEN_GAMMA = 0x9E3779B97F4A7C15L;

    /**
     * A draw with what a divergence report needs: the token, its input log-prob, and the gap between the two largest
     * input log-probs (0 when they tie, {@code +inf} for a one-token vocabulary).
     */
    public record SampleResult(int token, float logprob, float top2Gap) {
    }

    private DraftSampler() {
    }

    /** {@code (seed XOR ((step + 1) · 0x9E3779B97F4A7C15)) mod 2^64}, the seed passed to {@code random.key} (§7). */
    public static long stepKey(long seed, long step) {
        return seed ^ ((step + 1) * GOLDEN_GAMMA);
    }

    /** The token drawn from {@code logprobs[off, off + vocab)} at {@code step}, with the spec's rule (§7). */
    public static int sample(float[] logprobs, int off, int vocab, RowSampler sampler, long step) {
        return sample(logprobs, off, vocab, sampler, step, SPEC_RULE);
    }

    /** The token drawn from {@code logprobs[off, off + vocab)} at {@code step} with an explicit categorical rule. */
    public static int sample(float[] logprobs, int off, int vocab, RowSampler sampler, long step,
            CategoricalRule rule) {
        checkRow(logprobs, off, vocab);
        if (sampler.isGreedy()) {
            return argmax(logprobs, off, vocab);
        }
        float[] x = filteredLogits(logprobs, off, vocab, sampler);
        MlxRandom.Key key = MlxRandom.key(stepKey(sampler.seed(), step));
        return switch (rule) {
            case GUMBEL_MAX -> MlxRandom.categorical(x, 0, vocab, key);
            case INVERSE_CDF -> MlxRandom.categoricalInverseCdf(x, 0, vocab, key);
        };
    }

    /** {@link #sample} plus the chosen token's input log-prob and the top-2 gap of the input row. */
    public static SampleResult sampleDetailed(float[] logprobs, int off, int vocab, RowSampler sampler, long step,
            CategoricalRule rule) {
        int token = sample(logprobs, off, vocab, sampler, step, rule);
        return new SampleResult(token, logprobs[off + token], top2Gap(logprobs, off, vocab));
    }

    /** {@code lp[first] − lp[second]} over the row: 0 on a tie, +∞ for a one-token vocabulary. */
    public static float top2Gap(float[] lp, int off, int vocab) {
        float first = Float.NEGATIVE_INFINITY;
        float second = Float.NEGATIVE_INFINITY;
        for (int i = 0; i < vocab; i++) {
            float v = lp[off + i];
            if (v > first) {
                second = first;
                first = v;
            } else if (v > second) {
                second = v;
            }
        }
        return vocab == 1 ? Float.POSITIVE_INFINITY : first - second;
    }

    /**
     * The logits the categorical draw sees: top-p (when {@code 0 < topP < 1}), then top-k (when
     * {@code 0 < topK < vocab}), then each value times {@code float32(1 / T)}. A new array of length {@code vocab}.
     */
    public static float[] filteredLogits(float[] logprobs, int off, int vocab, RowSampler sampler) {
        checkRow(logprobs, off, vocab);
        float[] x = Arrays.copyOfRange(logprobs, off, off + vocab);
        if (sampler.topP() > 0 && sampler.topP() < 1) {
            applyTopP(x, sampler.topP());
        }
        if (sampler.topK() > 0 && sampler.topK() < vocab) {
            applyTopK(x, sampler.topK());
        }
        float invT = (float) (1.0 / sampler.temperature()); // Python computes 1/temp in double; MLX casts it to f32
        for (int i = 0; i < vocab; i++) {
            x[i] = x[i] * invT;
        }
        return x;
    }

    /**
     * mlx-lm's {@code apply_top_p}, in place: {@code p = exp(x)} (MLX's exp), stable ascending sort of {@code x}, an
     * inclusive float32 running sum of {@code p} in that order, and every token whose running sum is not greater
     * than {@code float32(1 − topP)} becomes {@code −inf}.
     */
    public static void applyTopP(float[] x, double topP) {
        Integer[] order = ascendingOrder(x);
        float threshold = (float) (1.0 - topP);
        boolean[] keep = new boolean[x.length];
        float cumulative = 0.0f;
        for (int rank = 0; rank < order.length; rank++) {
            int i = order[rank];
            cumulative = rank == 0 ? MlxCpuExpLog.exp(x[i]) : cumulative + MlxCpuExpLog.exp(x[i]);
            keep[i] = cumulative > threshold;
        }
        for (int i = 0; i < x.length; i++) {
            if (!keep[i]) {
                x[i] = Float.NEGATIVE_INFINITY;
            }
        }
    }

    /**
     * Top-k in place: exactly {@code k} tokens keep their value, the {@code k} largest, and the rest become
     * {@code −inf}. Ties at the k-th value keep the lowest indices (MLX's argpartition leaves that order unspecified).
     */
    public static void applyTopK(float[] x, int k) {
        if (k <= 0 || k >= x.length) {
            return;
        }
        Integer[] order = ascendingOrder(x);
        // Descending by value, ascending by index: walk the ascending order from the top, one run of equals at a time.
        boolean[] keep = new boolean[x.length];
        int kept = 0;
        int end = order.length;
        while (kept < k) {
            int start = end - 1;
            while (start > 0 && !nanAwareLess(x[order[start - 1]], x[order[start]])) {
                start--;
            }
            for (int r = start; r < end && kept < k; r++) { // the run [start, end) is in ascending index order
                keep[order[r]] = true;
                kept++;
            }
            end = start;
        }
        for (int i = 0; i < x.length; i++) {
            if (!keep[i]) {
                x[i] = Float.NEGATIVE_INFINITY;
            }
        }
    }

    /** MLX's argmax: the first index holding a strictly greatest value (lowest index on ties). */
    public static int argmax(float[] x, int off, int n) {
        int best = 0;
        for (int i = 1; i < n; i++) {
            if (x[off + i] > x[off + best]) {
                best = i;
            }
        }
        return best;
    }

    /** Indices in MLX's stable ascending argsort order: NaN last, equal values by ascending index. */
    private static Integer[] ascendingOrder(float[] x) {
        Integer[] order = new Integer[x.length];
        for (int i = 0; i < x.length; i++) {
            order[i] = i;
        }
        Comparator<Integer> byValue = (a, b) -> nanAwareLess(x[a], x[b]) ? -1 : nanAwareLess(x[b], x[a]) ? 1 : 0;
        Arrays.sort(order, byValue); // object sort is stable
        return order;
    }

    private static boolean nanAwareLess(float a, float b) {
        if (Float.isNaN(a)) {
            return false;
        }
        return Float.isNaN(b) || a < b;
    }

    private static void checkRow(float[] logprobs, int off, int vocab) {
        if (vocab <= 0 || off < 0 || off + vocab > logprobs.length) {
            throw MtpException.invalidArgument("sample: row [" + off + ", " + off + " + " + vocab
                    + ") is empty or outside log-probs of length " + logprobs.length + " (spec §7)");
        }
    }
}
