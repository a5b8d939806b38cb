package org.mtporacle.conformance.loop.chain;

import org.mtporacle.api.HostTensor;
import org.mtporacle.conformance.target.chain.TargetAction;
import org.mtporacle.conformance.target.chain.TargetChainData;
import org.mtporacle.conformance.target.chain.TargetShape;

/**
 * Concrete arguments of loop actions, from each action's seed, the loop's shape and the reference's outputs; the
 * seeded parts are the target chains' ({@link TargetChainData}), so both kinds read a seed the same way.
 */
public final class LoopChainData {
    private LoopChainData() {
    }

    /** A prefill's tokens {@code [b, length]}. */
    public static HostTensor tokens(LoopAction.Prefill p, int b, int vocab) {
        return TargetChainData.tokens(p.seed(), b, p.length(), vocab);
    }

    /** The rows a leave keeps, in their new order. */
    public static int[] keep(LoopAction.Leave l, int b) {
        return TargetChainData.keep(l.seed(), b, l.keepAll());
    }

    /**
     * Accepted counts per row of a round of {@code depth} drafts: the loop's greedy rule ({@code MATCHED}: the
     * longest prefix of drafts equal to the reference target's greedy tokens {@code greedy [b][depth + 1]}), none,
     * all, or seeded (a sampling engine accepts drafts that are not the greedy tokens).
     */
    public static int[] accepted(LoopAction.Commit c, int[][] verified, int[][] greedy, int depth) {
        return TargetChainData.accepted(new TargetAction.Commit(c.acceptance(), c.seed()), verified.length, depth + 1,
                TargetChainData.matched(verified, greedy));
    }

    /** The row a capture takes: the seeded choice among warm rows, or -1 when none. */
    public static int captureRow(LoopAction.Capture c, LoopShape shape) {
        if (shape.roundOpen()) {
            return -1;
        }
        return TargetChainData.captureRow(c.seed(), new TargetShape(shape.warm(), false, 0, shape.poolSize()));
    }
}
