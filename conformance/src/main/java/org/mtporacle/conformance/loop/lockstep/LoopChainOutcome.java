package org.mtporacle.conformance.loop.lockstep;

import org.mtporacle.conformance.compare.Judge;
import org.mtporacle.conformance.loop.chain.LoopAction;
import org.mtporacle.conformance.target.lockstep.TargetJudge;

import java.util.List;

/**
 * One loop chain in lockstep: how far it ran, the first divergence (null when it passed), what both judges compared,
 * how many actions the shape skipped, and how many rows of commits accepted each count ({@code accepts[a]}).
 */
public record LoopChainOutcome(long seed, List<LoopAction> chain, int executed, LoopDivergence divergence,
                               Stats stats, int skipped, long[] accepts) {
    public LoopChainOutcome {
        chain = List.copyOf(chain);
        accepts = accepts.clone();
    }

    public boolean passed() {
        return divergence == null;
    }

    /**
     * What both judges compared: greedy tokens (verify and prefill positions, draft positions) and near-ties, row
     * states (target states and drafter checkpoints), the worst state NMSE (target tensors, drafter K/V) and output
     * NMSE (logits and taps, the drafter's retained hidden), and the bad calls made (to either group).
     */
    public record Stats(long comparedTokens, long nearTies, long comparedStates, double maxStateNmse,
                        double maxOutputNmse, long badCalls) {
        public static final Stats NONE = new Stats(0, 0, 0, 0, 0, 0);

        /** Both judges' counts together, with the bad calls made. */
        public static Stats of(TargetJudge.Counts t, Judge.Counts d, long badCalls) {
            return new Stats(t.comparedTokens() + d.comparedTokens(), t.nearTies() + d.nearTies(),
                    t.comparedStates() + d.comparedCheckpoints(), Math.max(t.maxStateNmse(), d.maxKvNmse()),
                    Math.max(t.maxOutputNmse(), d.maxHiddenNmse()), badCalls);
        }

        public Stats plus(Stats o) {
            return new Stats(comparedTokens + o.comparedTokens, nearTies + o.nearTies,
                    comparedStates + o.comparedStates, Math.max(maxStateNmse, o.maxStateNmse),
                    Math.max(maxOutputNmse, o.maxOutputNmse), badCalls + o.badCalls);
        }
    }
}
