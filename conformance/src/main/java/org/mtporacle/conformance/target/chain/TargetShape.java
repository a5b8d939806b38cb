package org.mtporacle.conformance.target.chain;

import java.util.Arrays;

/**
 * What the chain engine knows of a target group between actions (spec §13.3): its rows, whether each is warm (has
 * processed a token), the open round's width, and the checkpoint pool's size. Tracked from the spec's rules, never
 * read from a backend; {@link #next} is the rule book.
 */
public record TargetShape(boolean[] warm, boolean roundOpen, int width, int poolSize) {
    public TargetShape {
        warm = warm.clone();
    }

    public static TargetShape empty() {
        return new TargetShape(new boolean[0], false, 0, 0);
    }

    public int rows() {
        return warm.length;
    }

    public boolean warm(int row) {
        return warm[row];
    }

    /** True when some row has processed nothing. */
    public boolean hasColdRow() {
        for (boolean w : warm) {
            if (!w) {
                return true;
            }
        }
        return false;
    }

    /** At least one row, every row warm, no round open: a verify may run. */
    public boolean canVerify() {
        return !roundOpen && rows() > 0 && !hasColdRow();
    }

    /** Rows a capture may take (none during a round). */
    public int warmRows() {
        if (roundOpen) {
            return 0;
        }
        int n = 0;
        for (boolean w : warm) {
            n += w ? 1 : 0;
        }
        return n;
    }

    /** The shape after {@code action} succeeds; an action that must fail leaves the shape as it is. */
    public TargetShape next(TargetAction action) {
        return switch (action) {
            case TargetAction.Append a -> {
                if (roundOpen) {
                    yield this;
                }
                boolean[] w = Arrays.copyOf(warm, rows() + a.slots().size());
                for (int i = 0; i < a.slots().size(); i++) {
                    w[rows() + i] = a.slots().get(i) >= 0 && poolSize > 0;
                }
                yield new TargetShape(w, false, 0, poolSize);
            }
            case TargetAction.Filter f -> {
                if (roundOpen) {
                    yield this;
                }
                int[] keep = TargetChainData.keep(f.seed(), rows(), f.keepAll());
                boolean[] w = new boolean[keep.length];
                for (int i = 0; i < keep.length; i++) {
                    w[i] = warm[keep[i]];
                }
                yield new TargetShape(w, false, 0, poolSize);
            }
            case TargetAction.Prefill p -> roundOpen || rows() == 0 || p.length() < 1 ? this
                    : new TargetShape(filled(rows()), false, 0, poolSize);
            case TargetAction.Verify v -> !canVerify() ? this : new TargetShape(warm, true, v.depth() + 1, poolSize);
            case TargetAction.Commit c -> !roundOpen ? this : new TargetShape(warm, false, 0, poolSize);
            case TargetAction.Capture c -> warmRows() == 0 ? this
                    : new TargetShape(warm, roundOpen, width, poolSize + 1);
            case TargetAction.Bad b -> this;
        };
    }

    private static boolean[] filled(int n) {
        boolean[] a = new boolean[n];
        Arrays.fill(a, true);
        return a;
    }
}
