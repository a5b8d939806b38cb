package org.mtporacle.conformance.chain;

import org.mtporacle.api.DraftSampling;
import org.mtporacle.api.FloatFormats;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.RowSampler;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * Concrete arguments derived from an action's seed and the group's row count. Every value a chain feeds a backend
 * comes from here, so a trace (the actions) replays exactly. Hiddens are N(0, 1) rounded to bfloat16, so a backend
 * that computes in bf16 receives exactly the inputs the reference receives.
 */
public final class ChainData {
    private ChainData() {
    }

    /** Token ids {@code [b, l]} uniform in {@code [0, vocab)}. */
    public static HostTensor tokens(SplittableRandom rnd, int b, int l, int vocab) {
        int[] v = new int[b * l];
        for (int i = 0; i < v.length; i++) {
            v[i] = rnd.nextInt(vocab);
        }
        return HostTensor.ofInts(v, b, l);
    }

    /** Hiddens {@code [b, l, h]} as F32 holding bf16-exact N(0, 1) values. */
    public static HostTensor hiddens(SplittableRandom rnd, int b, int l, int h) {
        float[] v = new float[b * l * h];
        for (int i = 0; i < v.length; i++) {
            double u = rnd.nextDouble();
            double w = rnd.nextDouble();
            double g = Math.sqrt(-2 * StrictMath.log(1 - u)) * StrictMath.cos(2 * Math.PI * w); // Box–Muller
            v[i] = FloatFormats.roundToBf16((float) g);
        }
        return HostTensor.ofFloats(v, b, l, h);
    }

    /** Prefill arguments for {@code b} rows. */
    public record PrefillArgs(HostTensor tokens, HostTensor context) {
    }

    public static PrefillArgs prefill(long seed, int b, int length, int vocab, int hidden) {
        SplittableRandom rnd = new SplittableRandom(seed);
        return new PrefillArgs(tokens(rnd, b, length, vocab), hiddens(rnd, b, length, hidden));
    }

    /** Draft arguments for {@code b} rows. */
    public record DraftArgs(int[] pending, long[] steps, DraftSampling sampling) {
    }

    public static DraftArgs draft(long seed, int b, int vocab, boolean stochastic) {
        SplittableRandom rnd = new SplittableRandom(seed);
        int[] pending = new int[b];
        long[] steps = new long[b];
        List<RowSampler> samplers = new ArrayList<>();
        for (int r = 0; r < b; r++) {
            pending[r] = rnd.nextInt(vocab);
            steps[r] = rnd.nextInt(1000);
            if (stochastic) {
                double t = 0.5 + rnd.nextDouble();
                int k = rnd.nextBoolean() ? 0 : 1 + rnd.nextInt(50);
                double p = rnd.nextBoolean() ? 1.0 : 0.5 + 0.5 * rnd.nextDouble();
                samplers.add(RowSampler.of(t, k, p, rnd.nextLong()));
            } else {
                samplers.add(RowSampler.GREEDY);
            }
        }
        return new DraftArgs(pending, steps, new DraftSampling(samplers));
    }

    /** Commit arguments for {@code b} rows of a round of {@code depth}. */
    public record CommitArgs(int[] accepted, HostTensor context) {
    }

    public static CommitArgs commit(long seed, Action.Acceptance acceptance, int b, int depth, int hidden) {
        SplittableRandom rnd = new SplittableRandom(seed);
        int[] accepted = new int[b];
        for (int r = 0; r < b; r++) {
            accepted[r] = switch (acceptance) {
                case NONE -> 0;
                case FULL -> depth;
                case RANDOM -> rnd.nextInt(depth + 1);
            };
        }
        return new CommitArgs(accepted, hiddens(rnd, b, depth + 1, hidden));
    }

    /** Filter indices: a seeded permutation of a seeded subset (all rows when {@code keepAll}). */
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

    /** The row a capture takes: the seeded choice among rows with a retained hidden, or -1 when none. */
    public static int captureRow(long seed, GroupShape shape) {
        int n = shape.capturableRows();
        if (n == 0) {
            return -1;
        }
        int pick = new SplittableRandom(seed).nextInt(n);
        for (int r = 0; r < shape.rows(); r++) {
            if (shape.hasHidden(r) && pick-- == 0) {
                return r;
            }
        }
        throw new IllegalStateException();
    }
}
