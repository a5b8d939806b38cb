package org.mtporacle.mlx;

import org.mtporacle.api.DraftSampling;
import org.mtporacle.api.RowSampler;
import org.mtporacle.mlx.ffi.MlxC;
import org.mtporacle.mlx.handle.MlxArray;
import org.mtporacle.mlx.handle.MlxOps;
import org.mtporacle.reference.sampling.DraftSampler;
import org.mtporacle.reference.sampling.MlxRandom;

import java.util.ArrayList;
import java.util.List;

/**
 * One draft round's draws on the device (spec §7; conformance/SPEC.md, "Random stream for seeded draft sampling"
 * §6): greedy rows take the argmax; seeded rows run top-p, top-k, {@code × f32(1/T)} and the inverse-CDF categorical
 * draw as MLX ops, with the uniform from {@code mlx_random_uniform} under {@code key(stepKey(seed, step + t))}. The
 * keys of the whole round are built on the host and uploaded once, so drawing reads nothing back. Every array
 * belongs to the scope of the {@link MlxOps} that built the round.
 */
final class MlxDraftSampler {
    private final int rows;
    private final int vocab;
    private final boolean anySeeded;
    private final boolean anyTopP;
    private final boolean anyTopK;
    private final MlxArray greedy;      // [B] bool: the row takes the argmax
    private final MlxArray topP;        // [B, 1] bool: the row applies top-p
    private final MlxArray threshold;   // [B, 1] f32: f32(1 − topP)
    private final MlxArray topK;        // [B, 1] int32: tokens top-k keeps (V when off)
    private final MlxArray invT;        // [B, 1] f32: f32(1 / T) (1 for greedy rows)
    private final MlxArray keys;        // [d, B, 2] uint32: key(stepKey(seed_b, step_b + t))
    private final MlxArray negInf;      // f32 scalar −inf
    private final MlxArray zero;        // f32 scalar 0
    private final MlxArray none;        // int32 scalar −1
    private final MlxArray tokens;      // [V] int32: 0 … V−1

    private MlxDraftSampler(MlxOps ops, DraftSampling sampling, long[] steps, int depth, int vocab) {
        this.rows = sampling.rowCount();
        this.vocab = vocab;
        boolean[] isGreedy = new boolean[rows];
        boolean[] applyTopP = new boolean[rows];
        float[] thr = new float[rows];
        int[] k = new int[rows];
        float[] scale = new float[rows];
        int[] words = new int[depth * rows * 2];
        boolean seeded = false;
        boolean p = false;
        boolean kk = false;
        for (int r = 0; r < rows; r++) {
            RowSampler s = sampling.row(r);
            isGreedy[r] = s.isGreedy();
            applyTopP[r] = !s.isGreedy() && s.topP() > 0 && s.topP() < 1;
            thr[r] = (float) (1.0 - s.topP()); // 1 − topP in double, then f32 (§6.2)
            k[r] = !s.isGreedy() && s.topK() > 0 && s.topK() < vocab ? s.topK() : vocab;
            scale[r] = s.isGreedy() ? 1.0f : (float) (1.0 / s.temperature()); // 1/T in double, then f32 (§6.4)
            for (int t = 0; t < depth; t++) {
                MlxRandom.Key key = MlxRandom.key(DraftSampler.stepKey(s.seed(), steps[r] + t));
                words[(t * rows + r) * 2] = key.k0();
                words[(t * rows + r) * 2 + 1] = key.k1();
            }
            seeded |= !s.isGreedy();
            p |= applyTopP[r];
            kk |= k[r] < vocab;
        }
        this.anySeeded = seeded;
        this.anyTopP = p;
        this.anyTopK = kk;
        // an all-greedy round only takes the argmax: it uploads nothing
        this.greedy = seeded ? ops.fromBools(isGreedy, rows) : null;
        this.topP = seeded ? ops.fromBools(applyTopP, rows, 1) : null;
        this.threshold = seeded ? ops.fromFloats(thr, rows, 1) : null;
        this.topK = seeded ? ops.fromInts(k, rows, 1) : null;
        this.invT = seeded ? ops.fromFloats(scale, rows, 1) : null;
        this.keys = seeded ? ops.fromUints(words, depth, rows, 2) : null;
        this.negInf = seeded ? ops.fromFloats(new float[] {Float.NEGATIVE_INFINITY}) : null;
        this.zero = seeded ? ops.fromFloats(new float[] {0f}) : null;
        this.none = seeded ? ops.fromInts(new int[] {-1}) : null;
        this.tokens = seeded ? ops.arange(vocab) : null;
    }

    /** The samplers of a round of {@code depth} positions, row {@code b} at steps {@code steps[b] + t}. */
    static MlxDraftSampler forRound(MlxOps ops, DraftSampling sampling, long[] steps, int depth, int vocab) {
        return new MlxDraftSampler(ops, sampling, steps, depth, vocab);
    }

    /** The tokens {@code [B]} (int32) drawn at position {@code t} of the round from the log-probs {@code lp [B, V]}. */
    MlxArray draw(MlxOps ops, MlxArray lp, int t) {
        MlxArray best = ops.astype(ops.argmax(lp, -1, false), MlxC.MLX_INT32); // lowest index on ties
        if (!anySeeded) {
            return best;
        }
        // bf16 → f32 is exact, so the pipeline sees the widened log-probs the host would (§6)
        MlxArray x = lp.dtype() == MlxC.MLX_FLOAT32 ? lp : ops.astype(lp, MlxC.MLX_FLOAT32);
        if (anyTopP) {
            x = topP(ops, x);
        }
        if (anyTopK) {
            x = topK(ops, x);
        }
        x = ops.multiply(x, invT);
        return ops.where(greedy, best, inverseCdf(ops, x, uniforms(ops, t)));
    }

    /**
     * mlx-lm's {@code apply_top_p} on the rows that ask for it (§6.2): {@code exp(x)}, a stable ascending sort of
     * {@code x}, the inclusive f32 running sum in that order, and {@code −inf} where it is not above the threshold.
     */
    private MlxArray topP(MlxOps ops, MlxArray x) {
        MlxArray order = ops.argsort(x, -1);
        MlxArray running = ops.cumsum(ops.takeAlong(ops.exp(x), order, -1), -1, true);
        MlxArray rank = ops.argsort(order, -1); // the inverse permutation: token i sits at rank[i]
        MlxArray above = ops.takeAlong(ops.greater(running, threshold), rank, -1);
        return ops.where(ops.logicalAnd(ops.logicalNot(above), topP), negInf, x);
    }

    /**
     * Top-k (§6.3): exactly {@code k} tokens keep their value, lowest indices first among equals. A stable ascending
     * sort of {@code −x} orders by value descending and by index ascending on ties; a token is kept when its rank is
     * below {@code k}. (NaN log-probs would rank last here and first in the reference.)
     */
    private MlxArray topK(MlxOps ops, MlxArray x) {
        MlxArray order = ops.argsort(ops.negative(x), -1);
        MlxArray rank = ops.astype(ops.argsort(order, -1), MlxC.MLX_INT32);
        return ops.where(ops.less(rank, topK), x, negInf);
    }

    /**
     * The inverse-CDF draw (§5): {@code w = exp(x − max x)} (the indicator of the max when it is infinite), the
     * exclusive f32 running sum {@code c}, {@code u · S} with {@code S = c[V−1] + w[V−1]}, and the last {@code i} with
     * {@code c[i] ≤ u · S}, taken among the tokens of positive weight ({@link #lastDrawable}).
     */
    private MlxArray inverseCdf(MlxOps ops, MlxArray x, MlxArray u) {
        MlxArray m = ops.max(x, -1, true); // [B, 1]
        MlxArray w = ops.where(ops.isinf(m), ops.astype(ops.equal(x, m), MlxC.MLX_FLOAT32),
                ops.exp(ops.subtract(x, m)));
        MlxArray c = ops.cumsum(w, -1, false);
        int[] lastStart = {0, vocab - 1};
        int[] lastStop = {rows, vocab};
        MlxArray total = ops.add(ops.slice(c, lastStart, lastStop), ops.slice(w, lastStart, lastStop)); // [B, 1]
        return lastDrawable(ops, w, c, ops.multiply(u, total), tokens, zero, none);
    }

    /**
     * The last token {@code i} (int32 {@code [B]}) with {@code w[i] > 0} and {@code c[i] ≤ target}, for weights
     * {@code w [B, V]}, their exclusive running sums {@code c} and {@code target [B, 1]}. With a left-to-right sum
     * (MLX's CPU) {@code c} is constant across a run of zero weights, so this is the last {@code i} with
     * {@code c[i] ≤ target} that §5 asks for. A GPU scan adds partial sums in another order for neighbouring
     * outputs, so {@code c} can step by an ulp inside such a run (MLX's CUDA cumsum does,
     * docs/mlx-upstream/cumsum-zero-steps.md); a target in that step would otherwise draw a token of weight 0,
     * one that top-k or top-p removed. The first positive weight has {@code c = 0 ≤ target}, so some token qualifies.
     */
    static MlxArray lastDrawable(MlxOps ops, MlxArray w, MlxArray c, MlxArray target, MlxArray tokens,
                                 MlxArray zero, MlxArray none) {
        MlxArray drawable = ops.logicalAnd(ops.logicalNot(ops.less(target, c)), ops.greater(w, zero));
        return ops.max(ops.where(drawable, tokens, none), -1, false);
    }

    /** {@code uniform(key_b, 1)[0]} for every row at position {@code t}, as {@code [B, 1]} (§4). */
    private MlxArray uniforms(MlxOps ops, int t) {
        List<MlxArray> u = new ArrayList<>(rows);
        for (int r = 0; r < rows; r++) {
            MlxArray key = ops.reshape(ops.slice(keys, new int[] {t, r, 0}, new int[] {t + 1, r + 1, 2}), 2);
            u.add(ops.uniform(key, 1)); // MLX draws from one key at a time (random.bits wants shape [2])
        }
        return ops.reshape(ops.concatenate(u, 0), rows, 1);
    }
}
