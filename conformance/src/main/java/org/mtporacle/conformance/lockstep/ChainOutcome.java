package org.mtporacle.conformance.lockstep;

import org.mtporacle.conformance.compare.RouterTally;
import org.mtporacle.conformance.compare.Judge;

import org.mtporacle.conformance.chain.Action;
import org.mtporacle.conformance.compare.GapHistogram;
import org.mtporacle.conformance.compare.Divergence;

import java.util.List;

/**
 * The result of one chain in lockstep: how far it ran, the first divergence (null when it passed), and what was
 * compared.
 */
public record ChainOutcome(long seed, List<Action> chain, int executed, Divergence divergence, Stats stats) {
    public ChainOutcome {
        chain = List.copyOf(chain);
    }

    public boolean passed() {
        return divergence == null;
    }

    /** Counts and worst values of the comparisons a chain made. */
    public record Stats(int comparedTokens, int nearTies, int comparedCheckpoints, double maxKvNmse,
                        double maxHiddenNmse, int badCalls, int skippedBadCalls, double maxNearTieGap,
                        long[] nearTieBins, GapHistogram gaps, RouterTally router) {
        public static final Stats NONE = new Stats(0, 0, 0, 0, 0, 0, 0, 0, new long[Judge.NEAR_TIE_BINS],
                new GapHistogram(), RouterTally.NONE);

        public Stats {
            gaps = gaps.copy();
            router = router == null ? RouterTally.NONE : router;
        }

        @Override
        public GapHistogram gaps() {
            return gaps.copy();
        }

        /** The values, arrays included (a record prints them as {@code [J@57adfab0}). */
        @Override
        public String toString() {
            return "Stats[comparedTokens=" + comparedTokens + ", nearTies=" + nearTies + ", comparedCheckpoints="
                    + comparedCheckpoints + ", maxKvNmse=" + maxKvNmse + ", maxHiddenNmse=" + maxHiddenNmse
                    + ", badCalls=" + badCalls + ", skippedBadCalls=" + skippedBadCalls + ", maxNearTieGap="
                    + maxNearTieGap + ", nearTieBins=" + java.util.Arrays.toString(nearTieBins) + ", gaps=" + gaps
                    + ", router=" + router + "]";
        }

        public Stats plus(Stats o) {
            long[] bins = nearTieBins.clone();
            for (int i = 0; i < bins.length; i++) {
                bins[i] += o.nearTieBins[i];
            }
            GapHistogram sum = gaps.copy();
            sum.addAll(o.gaps);
            return new Stats(comparedTokens + o.comparedTokens, nearTies + o.nearTies,
                    comparedCheckpoints + o.comparedCheckpoints, Math.max(maxKvNmse, o.maxKvNmse),
                    Math.max(maxHiddenNmse, o.maxHiddenNmse), badCalls + o.badCalls,
                    skippedBadCalls + o.skippedBadCalls, Math.max(maxNearTieGap, o.maxNearTieGap), bins, sum,
                    router.plus(o.router));
        }
    }
}
