package org.mtporacle.conformance.target.chain;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * Seeded random target chains (spec §13.3): empty and restored rows, prefills of random length (now and then longer
 * than a 64-token chunk), verify rounds of width 1 … {@code maxDepth + 1} (zero-draft rounds included) with drafts
 * that are the reference's own greedy tokens or random, commits with no, full, random or matched acceptance, filters
 * and reorders, captures, and bad calls. Mostly valid by construction ({@link TargetShape#next}).
 */
public final class TargetChainGenerator {
    /** Limits of generated chains. */
    public record Limits(int maxActions, int maxRows, int maxDepth, int maxPrefill, int longPrefill, double badRate) {
        /** 30 actions, 4 rows, verify widths 1–7, prefills of 1–12 (1 in 10 of 65–80), 8% bad calls. */
        public static Limits defaults() {
            return new Limits(30, 4, 6, 12, 80, 0.08);
        }
    }

    private final Limits limits;

    public TargetChainGenerator(Limits limits) {
        this.limits = limits;
    }

    public Limits limits() {
        return limits;
    }

    /** The chain of {@code seed}: the same seed always gives the same chain. */
    public List<TargetAction> generate(long seed) {
        SplittableRandom rnd = new SplittableRandom(seed);
        List<TargetAction> out = new ArrayList<>();
        TargetShape s = TargetShape.empty();
        int n = 1 + rnd.nextInt(limits.maxActions());
        TargetBadCall[] bad = TargetBadCall.values();
        while (out.size() < n) {
            TargetAction a;
            if (rnd.nextDouble() < limits.badRate()) {
                TargetBadCall call = bad[rnd.nextInt(bad.length)];
                if (!call.appliesTo(s)) {
                    continue;
                }
                a = new TargetAction.Bad(call, rnd.nextLong());
            } else if (s.roundOpen()) {
                a = new TargetAction.Commit(TargetAction.Acceptance.values()[rnd.nextInt(4)], rnd.nextLong());
            } else if (s.rows() == 0 || (s.rows() < limits.maxRows() && rnd.nextInt(8) == 0)) {
                int k = 1 + rnd.nextInt(Math.max(1, Math.min(3, limits.maxRows() - s.rows())));
                List<Integer> slots = new ArrayList<>();
                for (int i = 0; i < k; i++) {
                    slots.add(s.poolSize() > 0 && rnd.nextBoolean() ? rnd.nextInt(s.poolSize()) : -1);
                }
                a = new TargetAction.Append(slots);
            } else if (s.hasColdRow() || rnd.nextInt(7) == 0) {
                int len = rnd.nextInt(10) == 0 && limits.longPrefill() > 64
                        ? 65 + rnd.nextInt(limits.longPrefill() - 64) : 1 + rnd.nextInt(limits.maxPrefill());
                a = new TargetAction.Prefill(len, rnd.nextLong());
            } else {
                int pick = rnd.nextInt(10);
                if (pick < 6) {
                    int depth = rnd.nextInt(5) == 0 ? 0 : 1 + rnd.nextInt(limits.maxDepth());
                    int[] truth = {0, 50, 100};
                    a = new TargetAction.Verify(depth, rnd.nextLong(), truth[rnd.nextInt(3)]);
                } else if (pick < 8) {
                    a = new TargetAction.Capture(rnd.nextLong());
                } else {
                    a = new TargetAction.Filter(rnd.nextLong(), rnd.nextInt(3) > 0);
                }
            }
            out.add(a);
            s = s.next(a);
        }
        return out;
    }
}
