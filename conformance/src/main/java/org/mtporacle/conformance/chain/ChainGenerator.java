package org.mtporacle.conformance.chain;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * Seeded random action chains over the whole lifecycle (spec §5): cold and restored rows, prefill chunks of random
 * length, draft rounds of depth 0…{@code maxDepth}, every acceptance pattern, filters and reorders, capture and
 * re-append (also across backends), and deliberately bad calls. Mostly valid by construction ({@link ShapeRules}).
 */
public final class ChainGenerator {
    /** Limits of generated chains. */
    public record Limits(int maxActions, int maxRows, int maxDepth, int maxPrefill, double badRate,
                         double stochasticRate) {
        public static Limits defaults() {
            return new Limits(30, 4, 8, 12, 0.12, 0.3);
        }
    }

    private final Limits limits;

    public ChainGenerator(Limits limits) {
        this.limits = limits;
    }

    /** The chain of {@code seed}: the same seed always gives the same chain. */
    public List<Action> generate(long seed) {
        SplittableRandom rnd = new SplittableRandom(seed);
        List<Action> out = new ArrayList<>();
        GroupShape s = GroupShape.empty();
        int n = 1 + rnd.nextInt(limits.maxActions());
        BadCall[] bad = BadCall.values();
        while (out.size() < n) {
            Action a;
            if (rnd.nextDouble() < limits.badRate()) {
                BadCall call = bad[rnd.nextInt(bad.length)];
                if (!call.appliesTo(s)) {
                    continue;
                }
                a = new Action.Bad(call, rnd.nextLong());
            } else if (s.roundOpen()) {
                Action.Acceptance acc = Action.Acceptance.values()[rnd.nextInt(3)];
                a = new Action.Commit(acc, rnd.nextLong());
            } else if (s.rows() == 0 || (s.rows() < limits.maxRows() && rnd.nextInt(8) == 0)) {
                int k = 1 + rnd.nextInt(Math.max(1, Math.min(3, limits.maxRows() - s.rows())));
                List<Integer> slots = new ArrayList<>();
                for (int i = 0; i < k; i++) {
                    slots.add(s.poolSize() > 0 && rnd.nextBoolean() ? rnd.nextInt(s.poolSize()) : -1);
                }
                a = new Action.Append(slots, s.poolSize() > 0 && rnd.nextInt(4) == 0);
            } else if (s.hasColdRow() || rnd.nextInt(7) == 0) {
                a = new Action.Prefill(1 + rnd.nextInt(limits.maxPrefill()), rnd.nextLong());
            } else {
                int pick = rnd.nextInt(10);
                if (pick < 6) {
                    a = new Action.Draft(rnd.nextInt(limits.maxDepth() + 1), rnd.nextLong(),
                            rnd.nextDouble() < limits.stochasticRate());
                } else if (pick < 8) {
                    a = new Action.Capture(rnd.nextLong());
                } else {
                    a = new Action.Filter(rnd.nextLong(), rnd.nextInt(3) > 0);
                }
            }
            out.add(a);
            s = ShapeRules.next(s, a);
        }
        return out;
    }
}
