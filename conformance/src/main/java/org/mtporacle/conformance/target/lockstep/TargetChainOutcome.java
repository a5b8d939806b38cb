package org.mtporacle.conformance.target.lockstep;

import org.mtporacle.conformance.compare.RouterTally;
import org.mtporacle.conformance.target.chain.TargetAction;

import java.util.List;

/**
 * One target chain in lockstep: how far it ran, the first divergence (null when it passed), what was compared, the
 * bad calls made and skipped, and how many rows of matched-acceptance commits accepted each count ({@code [a]}: rows
 * that kept {@code a} drafts the reference's own greedy tokens agreed with), and the MoE router comparisons (spec
 * §12.5).
 */
public record TargetChainOutcome(long seed, List<TargetAction> chain, int executed, TargetDivergence divergence,
                                 TargetJudge.Counts counts, int badCalls, int skippedBadCalls,
                                 long[] matchedAccepts, RouterTally router) {
    public TargetChainOutcome {
        chain = List.copyOf(chain);
        matchedAccepts = matchedAccepts.clone();
        router = router == null ? RouterTally.NONE : router;
    }

    /** An outcome without router comparisons (a dense target, or a backend that does not report its choices). */
    public TargetChainOutcome(long seed, List<TargetAction> chain, int executed, TargetDivergence divergence,
                              TargetJudge.Counts counts, int badCalls, int skippedBadCalls, long[] matchedAccepts) {
        this(seed, chain, executed, divergence, counts, badCalls, skippedBadCalls, matchedAccepts, null);
    }

    public boolean passed() {
        return divergence == null;
    }
}
