package org.mtporacle.conformance.target.lockstep;

import org.mtporacle.conformance.target.chain.TargetAction;

import java.util.List;

/**
 * One target chain in lockstep: how far it ran, the first divergence (null when it passed), what was compared, and
 * the bad calls made and skipped.
 */
public record TargetChainOutcome(long seed, List<TargetAction> chain, int executed, TargetDivergence divergence,
                                 TargetJudge.Counts counts, int badCalls, int skippedBadCalls) {
    public TargetChainOutcome {
        chain = List.copyOf(chain);
    }

    public boolean passed() {
        return divergence == null;
    }
}
