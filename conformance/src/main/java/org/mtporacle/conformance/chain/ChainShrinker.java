package org.mtporacle.conformance.chain;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import java.util.function.Predicate;

/**
 * Shrinks a failing chain of any kind of action to a minimal one that still fails the same way: drops runs of actions
 * (halving run lengths, then single actions), then replaces each remaining action by a simpler variant, repeating
 * until nothing more can be removed or reduced. A chain kind supplies only what "simpler" means for its actions.
 *
 * @param <A> the chain's action type
 */
public final class ChainShrinker<A> {
    private final Predicate<List<A>> stillFails;
    private final Function<A, List<A>> smaller;
    private final int maxAttempts;
    private int attempts;

    /**
     * @param stillFails  true when a candidate fails in the same category as the original
     * @param smaller     simpler variants of one action, simplest first (empty: none)
     * @param maxAttempts how many candidates to try at most
     */
    public ChainShrinker(Predicate<List<A>> stillFails, Function<A, List<A>> smaller, int maxAttempts) {
        this.stillFails = stillFails;
        this.smaller = smaller;
        this.maxAttempts = maxAttempts;
    }

    /** How many candidates were tried. */
    public int attempts() {
        return attempts;
    }

    public List<A> shrink(List<A> failing) {
        List<A> best = new ArrayList<>(failing);
        boolean progress = true;
        while (progress && attempts < maxAttempts) {
            progress = false;
            for (int run = Math.max(1, best.size() / 2); run >= 1 && attempts < maxAttempts; run /= 2) {
                for (int start = best.size() - run; start >= 0 && attempts < maxAttempts; start--) {
                    List<A> cand = new ArrayList<>(best.subList(0, start));
                    cand.addAll(best.subList(Math.min(best.size(), start + run), best.size()));
                    if (test(cand)) {
                        best = cand;
                        progress = true;
                        start = Math.min(start, best.size() - run + 1);
                    }
                }
            }
            for (int i = 0; i < best.size() && attempts < maxAttempts; i++) {
                for (A simpler : smaller.apply(best.get(i))) {
                    List<A> cand = new ArrayList<>(best);
                    cand.set(i, simpler);
                    if (test(cand)) {
                        best = cand;
                        progress = true;
                        break;
                    }
                }
            }
        }
        return best;
    }

    private boolean test(List<A> cand) {
        attempts++;
        return stillFails.test(cand);
    }
}
