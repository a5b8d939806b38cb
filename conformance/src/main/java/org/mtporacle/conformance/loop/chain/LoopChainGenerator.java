package org.mtporacle.conformance.loop.chain;

import org.mtporacle.conformance.chain.BadCall;
import org.mtporacle.conformance.target.chain.TargetAction.Acceptance;
import org.mtporacle.conformance.target.chain.TargetBadCall;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * Seeded random loop chains (spec §13.5): requests joining cold or restored, prompts and further prompt pieces,
 * rounds of draft depth 0 … {@code maxDepth} (zero-draft rounds one in four) each followed by the target's verify and
 * both commits with matched, none, full or seeded acceptance, captures and leaves, valid by construction ({@link
 * LoopShape#allows}); and, at {@code badRate} before each of them, an invalid call to either group drawn from the
 * target's and the drafter's catalogues among those that apply in the loop's state (mid-round too). The bad calls are
 * drawn from a stream of their own, so a chain's loop actions are those of the same seed without bad calls.
 */
public final class LoopChainGenerator {
    /** Limits of generated chains; {@code badRate} is the chance of a bad call before each loop action. */
    public record Limits(int maxActions, int maxRows, int maxDepth, int maxPrefill, double badRate) {
        /** 40 actions, 4 rows, depths 0–4, prefills of 1–8 tokens, a bad call before one action in ten. */
        public static Limits defaults() {
            return new Limits(40, 4, 4, 8, 0.1);
        }

        /** These limits with no bad calls. */
        public Limits withoutBadCalls() {
            return new Limits(maxActions, maxRows, maxDepth, maxPrefill, 0);
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
        SplittableRandom bad = new SplittableRandom(seed ^ 0x6261642d63616c6cL);
        List<LoopAction> out = new ArrayList<>();
        LoopShape s = LoopShape.empty();
        int n = 1 + rnd.nextInt(limits.maxActions());
        while (out.size() < n) {
            if (limits.badRate() > 0 && bad.nextDouble() < limits.badRate()) {
                LoopAction b = badCall(bad, s);
                if (b != null) {
                    out.add(b);
                    continue;
                }
            }
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

    /** A bad call to either group that applies in {@code s}, or null when none does. */
    private static LoopAction badCall(SplittableRandom rnd, LoopShape s) {
        List<LoopAction> applicable = new ArrayList<>();
        for (TargetBadCall c : TargetBadCall.values()) {
            if (c.appliesTo(s.targetShape())) {
                applicable.add(new LoopAction.BadTarget(c, 0));
            }
        }
        for (BadCall c : BadCall.values()) {
            if (c.appliesTo(s.drafterShape())) {
                applicable.add(new LoopAction.BadDrafter(c, 0));
            }
        }
        if (applicable.isEmpty()) {
            return null;
        }
        long seed = rnd.nextLong();
        return switch (applicable.get(rnd.nextInt(applicable.size()))) {
            case LoopAction.BadTarget t -> new LoopAction.BadTarget(t.call(), seed);
            case LoopAction.BadDrafter d -> new LoopAction.BadDrafter(d.call(), seed);
            default -> throw new IllegalStateException();
        };
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
