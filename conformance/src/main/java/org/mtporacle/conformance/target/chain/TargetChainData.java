package org.mtporacle.conformance.target.chain;

import org.mtporacle.api.HostTensor;

import java.util.SplittableRandom;

/**
 * Concrete arguments of target actions, derived from each action's seed, the group's shape, and for greedy-true
 * drafts and matched acceptance from the reference's own outputs (which both sides then receive alike). Every value
 * a target chain feeds a backend comes from here, so a trace replays exactly.
 */
public final class TargetChainData {
    private TargetChainData() {
    }

    /** The reference's greedy continuation of a row: the {@code n} tokens it would emit after {@code pending}. */
    @FunctionalInterface
    public interface Greedy {
        int[] continuation(int row, int pending, int n);
    }

    /** Token ids {@code [b, l]} uniform in {@code [0, vocab)}. */
    public static HostTensor tokens(long seed, int b, int l, int vocab) {
        SplittableRandom rnd = new SplittableRandom(seed);
        int[] v = new int[b * l];
        for (int i = 0; i < v.length; i++) {
            v[i] = rnd.nextInt(vocab);
        }
        return HostTensor.ofInts(v, b, l);
    }

    /**
     * A verify's tokens {@code [b, depth + 1]}: per row a seeded pending token, then either seeded random drafts or
     * (with probability {@code truePercent}%) the reference's greedy continuation, replaced by random drafts from a
     * seeded position on (or never), so the accepted prefix has every length from 0 to {@code depth}.
     */
    public static int[][] verify(TargetAction.Verify v, int b, int vocab, Greedy greedy) {
        SplittableRandom rnd = new SplittableRandom(v.seed());
        int d = v.depth();
        int[][] out = new int[b][d + 1];
        for (int r = 0; r < b; r++) {
            out[r][0] = rnd.nextInt(vocab);
            boolean truthful = rnd.nextInt(100) < v.truePercent();
            int breakAt = rnd.nextInt(d + 2); // d + 1: unbroken
            int[] random = new int[d];
            for (int i = 0; i < d; i++) {
                random[i] = rnd.nextInt(vocab);
            }
            int[] drafts = truthful && d > 0 ? greedy.continuation(r, out[r][0], d) : random;
            for (int i = 0; i < d; i++) {
                out[r][i + 1] = i < breakAt ? drafts[i] : random[i];
            }
        }
        return out;
    }

    /** Accepted counts per row for a round of width {@code w}; {@code matched} is the loop's acceptance. */
    public static int[] accepted(TargetAction.Commit c, int b, int w, int[] matched) {
        SplittableRandom rnd = new SplittableRandom(c.seed());
        int[] out = new int[b];
        for (int r = 0; r < b; r++) {
            out[r] = switch (c.acceptance()) {
                case NONE -> 0;
                case FULL -> w - 1;
                case RANDOM -> rnd.nextInt(w);
                case MATCHED -> matched[r];
            };
        }
        return out;
    }

    /** The loop's acceptance (spec §13.4, greedy): the longest prefix of drafts equal to the greedy tokens. */
    public static int[] matched(int[][] tokens, int[][] greedy) {
        int[] out = new int[tokens.length];
        for (int r = 0; r < tokens.length; r++) {
            int a = 0;
            while (a + 1 < tokens[r].length && tokens[r][a + 1] == greedy[r][a]) {
                a++;
            }
            out[r] = a;
        }
        return out;
    }

    /** Filter indices: a seeded permutation of a seeded subset (every row when {@code keepAll}). */
    public static int[] keep(long seed, int b, boolean keepAll) {
        SplittableRandom rnd = new SplittableRandom(seed);
        int[] idx = new int[b];
        for (int i = 0; i < b; i++) {
            idx[i] = i;
        }
        for (int i = b - 1; i > 0; i--) {
            int j = rnd.nextInt(i + 1);
            int t = idx[i];
            idx[i] = idx[j];
            idx[j] = t;
        }
        int n = keepAll ? b : rnd.nextInt(b + 1);
        int[] out = new int[n];
        System.arraycopy(idx, 0, out, 0, n);
        return out;
    }

    /** The row a capture takes: the seeded choice among warm rows, or -1 when none. */
    public static int captureRow(long seed, TargetShape shape) {
        int n = shape.warmRows();
        if (n == 0) {
            return -1;
        }
        int pick = new SplittableRandom(seed).nextInt(n);
        for (int r = 0; r < shape.rows(); r++) {
            if (shape.warm(r) && pick-- == 0) {
                return r;
            }
        }
        throw new IllegalStateException();
    }
}
