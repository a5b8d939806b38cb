package org.mtporacle.conformance.loop.chain;

import org.mtporacle.api.RowContract;
import org.mtporacle.conformance.chain.GroupShape;
import org.mtporacle.conformance.target.chain.TargetShape;

import java.util.Arrays;

/**
 * What the chain engine knows of a loop between actions (spec §13.5): its rows (the same in both groups), whether
 * each is warm (has processed a token in both), where the round stands (none, drafted, verified) and its depth, and
 * the checkpoint pool's size. Tracked from the spec's rules, never read from a backend; {@link #next} is the rule
 * book, and an action it calls invalid is skipped, so a shrunk chain is still a loop.
 */
public record LoopShape(boolean[] warm, Round round, int depth, int poolSize) {
    /** Where the open round stands. */
    public enum Round {
        /** No round open. */
        NONE,
        /** The drafter drafted; the target has not verified yet. */
        DRAFTED,
        /** The target verified the drafts; both commit next. */
        VERIFIED
    }

    public LoopShape {
        warm = warm.clone();
    }

    public static LoopShape empty() {
        return new LoopShape(new boolean[0], Round.NONE, 0, 0);
    }

    public int rows() {
        return warm.length;
    }

    public boolean warm(int row) {
        return warm[row];
    }

    public boolean roundOpen() {
        return round != Round.NONE;
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

    /** Rows a capture may take (none during a round). */
    public int warmRows() {
        if (roundOpen()) {
            return 0;
        }
        int n = 0;
        for (boolean w : warm) {
            n += w ? 1 : 0;
        }
        return n;
    }

    /** The target group's shape: its round is open once the drafts are verified, of width {@code depth + 1}. */
    public TargetShape targetShape() {
        boolean open = round == Round.VERIFIED;
        return new TargetShape(warm, open, open ? depth + 1 : 0, poolSize);
    }

    /** The drafter group's shape: its round is open from the draft to the commit, of {@code depth}. */
    public GroupShape drafterShape() {
        return new GroupShape(warm, roundOpen(), roundOpen() ? depth : 0, poolSize);
    }

    /**
     * Whether {@code action} runs here: a loop action when it is valid (the loop never makes a call the contract
     * refuses by accident), a bad call when it is invalid for the reason its catalogue names in the group's state.
     */
    public boolean allows(LoopAction action) {
        return switch (action) {
            case LoopAction.Join j -> !roundOpen();
            case LoopAction.Leave l -> !roundOpen();
            case LoopAction.Prefill p -> !roundOpen() && rows() > 0 && p.length() >= 1;
            case LoopAction.Draft d -> !roundOpen() && rows() > 0 && !hasColdRow() && d.depth() >= 0
                    && d.depth() <= RowContract.MAX_DEPTH;
            case LoopAction.Verify v -> round == Round.DRAFTED;
            case LoopAction.Commit c -> round == Round.VERIFIED;
            case LoopAction.Capture c -> warmRows() > 0;
            case LoopAction.BadTarget b -> b.call().appliesTo(targetShape());
            case LoopAction.BadDrafter b -> b.call().appliesTo(drafterShape());
        };
    }

    /** The shape after {@code action}; a bad call, or an action not {@link #allows allowed}, leaves it as it is. */
    public LoopShape next(LoopAction action) {
        if (!allows(action)) {
            return this;
        }
        return switch (action) {
            case LoopAction.Join j -> {
                boolean[] w = Arrays.copyOf(warm, rows() + j.slots().size());
                for (int i = 0; i < j.slots().size(); i++) {
                    w[rows() + i] = j.slots().get(i) >= 0 && poolSize > 0;
                }
                yield new LoopShape(w, Round.NONE, 0, poolSize);
            }
            case LoopAction.Leave l -> {
                int[] keep = LoopChainData.keep(l, rows());
                boolean[] w = new boolean[keep.length];
                for (int i = 0; i < keep.length; i++) {
                    w[i] = warm[keep[i]];
                }
                yield new LoopShape(w, Round.NONE, 0, poolSize);
            }
            case LoopAction.Prefill p -> {
                boolean[] w = new boolean[rows()];
                Arrays.fill(w, true);
                yield new LoopShape(w, Round.NONE, 0, poolSize);
            }
            case LoopAction.Draft d -> new LoopShape(warm, Round.DRAFTED, d.depth(), poolSize);
            case LoopAction.Verify v -> new LoopShape(warm, Round.VERIFIED, depth, poolSize);
            case LoopAction.Commit c -> new LoopShape(warm, Round.NONE, 0, poolSize);
            case LoopAction.Capture c -> new LoopShape(warm, round, depth, poolSize + 1);
            case LoopAction.BadTarget b -> this;
            case LoopAction.BadDrafter b -> this;
        };
    }
}
