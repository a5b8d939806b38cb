package org.mtporacle.conformance.chain;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Predicate;

/**
 * Shrinks a failing chain to a minimal one that still fails the same way: drops runs of actions (halving run
 * lengths, then single actions), then makes each remaining action smaller (fewer appended rows, shallower drafts,
 * shorter prefills, no stochastic sampling), repeating until nothing more can be removed or reduced.
 */
public final class Shrinker {
    private final Predicate<List<Action>> stillFails;
    private final int maxAttempts;
    private int attempts;

    /**
     * @param stillFails  true when a candidate chain fails in the same category as the original
     * @param maxAttempts how many candidates to try at most
     */
    public Shrinker(Predicate<List<Action>> stillFails, int maxAttempts) {
        this.stillFails = stillFails;
        this.maxAttempts = maxAttempts;
    }

    /** Candidates tried so far. */
    public int attempts() {
        return attempts;
    }

    public List<Action> shrink(List<Action> failing) {
        List<Action> best = new ArrayList<>(failing);
        boolean progress = true;
        while (progress && attempts < maxAttempts) {
            progress = false;
            for (int run = Math.max(1, best.size() / 2); run >= 1 && attempts < maxAttempts; run /= 2) {
                for (int start = best.size() - run; start >= 0 && attempts < maxAttempts; start--) {
                    List<Action> cand = new ArrayList<>(best.subList(0, start));
                    cand.addAll(best.subList(Math.min(best.size(), start + run), best.size()));
                    if (test(cand)) {
                        best = cand;
                        progress = true;
                        start = Math.min(start, best.size() - run + 1);
                    }
                }
            }
            for (int i = 0; i < best.size() && attempts < maxAttempts; i++) {
                for (Action smaller : smaller(best.get(i))) {
                    List<Action> cand = new ArrayList<>(best);
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

    private boolean test(List<Action> cand) {
        attempts++;
        return stillFails.test(cand);
    }

    /** Simpler variants of one action, simplest first. */
    static List<Action> smaller(Action a) {
        List<Action> out = new ArrayList<>();
        switch (a) {
            case Action.Append ap -> {
                for (int i = 0; i < ap.slots().size() && ap.slots().size() > 1; i++) {
                    List<Integer> fewer = new ArrayList<>(ap.slots());
                    fewer.remove(i);
                    out.add(new Action.Append(fewer, ap.crossFeed()));
                }
                if (ap.crossFeed()) {
                    out.add(new Action.Append(ap.slots(), false));
                }
            }
            case Action.Draft d -> {
                if (d.stochastic()) {
                    out.add(new Action.Draft(d.depth(), d.seed(), false));
                }
                for (int depth = 0; depth < d.depth(); depth = depth == 0 ? 1 : depth * 2) {
                    out.add(new Action.Draft(depth, d.seed(), d.stochastic()));
                }
                if (d.depth() > 1) {
                    out.add(new Action.Draft(d.depth() - 1, d.seed(), d.stochastic()));
                }
            }
            case Action.Prefill p -> {
                for (int len = 1; len < p.length(); len *= 2) {
                    out.add(new Action.Prefill(len, p.seed()));
                }
                if (p.length() > 1) {
                    out.add(new Action.Prefill(p.length() - 1, p.seed()));
                }
            }
            case Action.Commit c -> {
                if (c.acceptance() == Action.Acceptance.RANDOM) {
                    out.add(new Action.Commit(Action.Acceptance.NONE, c.seed()));
                    out.add(new Action.Commit(Action.Acceptance.FULL, c.seed()));
                }
            }
            case Action.Filter f -> {
                if (!f.keepAll()) {
                    out.add(new Action.Filter(f.seed(), true));
                }
            }
            case Action.Capture c -> {
            }
            case Action.Bad b -> {
            }
        }
        return out;
    }
}
