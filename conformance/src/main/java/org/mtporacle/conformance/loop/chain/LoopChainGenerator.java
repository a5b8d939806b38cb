package org.mtporacle.conformance.loop.chain;

import org.mtporacle.conformance.target.chain.TargetAction.Acceptance;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * Seeded random loop chains (spec §13.5): requests joining cold or restored, prompts and further prompt pieces,
 * rounds of draft depth 0 … {@code maxDepth} (zero-draft rounds one in four) each followed by the target's verify and
 * both commits with matched, none, full or seeded acceptance, captures and leaves. Valid by construction ({@link
 * LoopShape#allows}); the loop has no bad calls, which the drafter and target chains cover.
 */
public final class LoopChainGenerator {
    /** Limits of generated chains. */
    public record Limits(int maxActions, int maxRows, int maxDepth, int maxPrefill) {
        /** 40 actions, 4 rows, depths 0–4, prefills of 1–8 tokens. */
        public static Limits defaults() {
            return new Limits(40, 4, 4, 8);
        }
    }

    private final Limits limits;

    public LoopChainGenerator(Limits limits) {
        this.limits = limits;
    }

    public Limits limits() {
        return limits;
    }

    /** The chain of {@code seed}: the same seed always gives the same chain. */
    public List<LoopAction> generate(long seed) {
        SplittableRandom rnd = new SplittableRandom(seed);
        List<LoopAction> out = new ArrayList<>();
        LoopShape s = LoopShape.empty();
        int n = 1 + rnd.nextInt(limits.maxActions());
        while (out.size() < n) {
            LoopAction a = switch (s.round()) {
                case DRAFTED -> new LoopAction.Verify();
                case VERIFIED -> new LoopAction.Commit(commitAcceptance(rnd), rnd.nextLong());
                case NONE -> between(rnd, s);
            };
            out.add(a);
            s = s.next(a);
        }
        return out;
    }

    /** Matched (the greedy loop) half the time; else none, full or seeded. */
    private static Acceptance commitAcceptance(SplittableRandom rnd) {
        int pick = rnd.nextInt(6);
        return pick < 3 ? Acceptance.MATCHED : pick == 3 ? Acceptance.RANDOM : pick == 4 ? Acceptance.FULL
                : Acceptance.NONE;
    }

    private LoopAction between(SplittableRandom rnd, LoopShape s) {
        if (s.rows() == 0 || (s.rows() < limits.maxRows() && rnd.nextInt(8) == 0)) {
            int k = 1 + rnd.nextInt(Math.max(1, Math.min(2, limits.maxRows() - s.rows())));
            List<Integer> slots = new ArrayList<>();
            for (int i = 0; i < k; i++) {
                slots.add(s.poolSize() > 0 && rnd.nextInt(3) > 0 ? rnd.nextInt(s.poolSize()) : -1);
            }
            return new LoopAction.Join(slots);
        }
        if (s.hasColdRow() || rnd.nextInt(12) == 0) {
            return new LoopAction.Prefill(1 + rnd.nextInt(limits.maxPrefill()), rnd.nextLong());
        }
        int pick = rnd.nextInt(10);
        if (pick < 7) {
            return new LoopAction.Draft(rnd.nextInt(4) == 0 ? 0 : 1 + rnd.nextInt(limits.maxDepth()));
        }
        if (pick < 9) {
            return new LoopAction.Capture(rnd.nextLong());
        }
        return new LoopAction.Leave(rnd.nextLong(), rnd.nextBoolean());
    }
}
