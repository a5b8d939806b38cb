package org.mtporacle.conformance.target.chain;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Predicate;

/**
 * Shrinks a failing target chain to a minimal one that still fails the same way, as the drafter's shrinker does:
 * drops runs of actions (halving run lengths, then single actions), then makes each remaining action smaller (fewer
 * appended rows, narrower verifies, all-true or all-random drafts, shorter prefills, simpler acceptance), repeating
 * until nothing more can be removed or reduced.
 */
public final class TargetShrinker {
    private final Predicate<List<TargetAction>> stillFails;
    private final int maxAttempts;
    private int attempts;

    /**
     * @param stillFails  true when a candidate fails in the same category as the original
     * @param maxAttempts how many candidates to try at most
     */
    public TargetShrinker(Predicate<List<TargetAction>> stillFails, int maxAttempts) {
        this.stillFails = stillFails;
        this.maxAttempts = maxAttempts;
    }

    public int attempts() {
        return attempts;
    }

    public List<TargetAction> shrink(List<TargetAction> failing) {
        List<TargetAction> best = new ArrayList<>(failing);
        boolean progress = true;
        while (progress && attempts < maxAttempts) {
            progress = false;
            for (int run = Math.max(1, best.size() / 2); run >= 1 && attempts < maxAttempts; run /= 2) {
                for (int start = best.size() - run; start >= 0 && attempts < maxAttempts; start--) {
                    List<TargetAction> cand = new ArrayList<>(best.subList(0, start));
                    cand.addAll(best.subList(Math.min(best.size(), start + run), best.size()));
                    if (test(cand)) {
                        best = cand;
                        progress = true;
                        start = Math.min(start, best.size() - run + 1);
                    }
                }
            }
            for (int i = 0; i < best.size() && attempts < maxAttempts; i++) {
                for (TargetAction smaller : smaller(best.get(i))) {
                    List<TargetAction> cand = new ArrayList<>(best);
                    cand.set(i, smaller);
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

    private boolean test(List<TargetAction> cand) {
        attempts++;
        return stillFails.test(cand);
    }

    /** Simpler variants of one action, simplest first. */
    static List<TargetAction> smaller(TargetAction a) {
        List<TargetAction> out = new ArrayList<>();
        switch (a) {
            case TargetAction.Append ap -> {
                for (int i = 0; i < ap.slots().size() && ap.slots().size() > 1; i++) {
                    List<Integer> fewer = new ArrayList<>(ap.slots());
                    fewer.remove(i);
                    out.add(new TargetAction.Append(fewer));
                }
            }
            case TargetAction.Verify v -> {
                for (int depth = 0; depth < v.depth(); depth = depth == 0 ? 1 : depth * 2) {
                    out.add(new TargetAction.Verify(depth, v.seed(), v.truePercent()));
                }
                if (v.depth() > 1) {
                    out.add(new TargetAction.Verify(v.depth() - 1, v.seed(), v.truePercent()));
                }
                if (v.truePercent() != 0 && v.truePercent() != 100) {
                    out.add(new TargetAction.Verify(v.depth(), v.seed(), 100));
                    out.add(new TargetAction.Verify(v.depth(), v.seed(), 0));
                }
            }
            case TargetAction.Prefill p -> {
                for (int len = 1; len < p.length(); len *= 2) {
                    out.add(new TargetAction.Prefill(len, p.seed()));
                }
                if (p.length() > 1) {
                    out.add(new TargetAction.Prefill(p.length() - 1, p.seed()));
                }
            }
            case TargetAction.Commit c -> {
                if (c.acceptance() == TargetAction.Acceptance.RANDOM
                        || c.acceptance() == TargetAction.Acceptance.MATCHED) {
                    out.add(new TargetAction.Commit(TargetAction.Acceptance.NONE, c.seed()));
                    out.add(new TargetAction.Commit(TargetAction.Acceptance.FULL, c.seed()));
                }
            }
            case TargetAction.Filter f -> {
                if (!f.keepAll()) {
                    out.add(new TargetAction.Filter(f.seed(), true));
                }
            }
            case TargetAction.Capture c -> {
            }
            case TargetAction.Bad b -> {
            }
        }
        return out;
    }
}
