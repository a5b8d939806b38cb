package org.mtporacle.conformance.loop.chain;

import org.mtporacle.conformance.chain.ChainShrinker;
import org.mtporacle.conformance.target.chain.TargetAction.Acceptance;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Predicate;

/**
 * Shrinks a failing loop chain ({@link ChainShrinker}): drops actions (a round that loses its draft, verify or commit
 * leaves the actions after it skipped, as {@link LoopShape#allows} says), then makes each action smaller: fewer
 * joining rows, shallower drafts, shorter prefills, simpler acceptance, leaves that keep every row.
 */
public final class LoopShrinker {
    private LoopShrinker() {
    }

    /** A shrinker of loop chains that keeps a candidate when {@code stillFails}. */
    public static ChainShrinker<LoopAction> of(Predicate<List<LoopAction>> stillFails, int maxAttempts) {
        return new ChainShrinker<>(stillFails, LoopShrinker::smaller, maxAttempts);
    }

    /** Simpler variants of one action, simplest first. */
    static List<LoopAction> smaller(LoopAction a) {
        List<LoopAction> out = new ArrayList<>();
        switch (a) {
            case LoopAction.Join j -> {
                for (int i = 0; i < j.slots().size() && j.slots().size() > 1; i++) {
                    List<Integer> fewer = new ArrayList<>(j.slots());
                    fewer.remove(i);
                    out.add(new LoopAction.Join(fewer));
                }
            }
            case LoopAction.Draft d -> {
                for (int depth = 0; depth < d.depth(); depth = depth == 0 ? 1 : depth * 2) {
                    out.add(new LoopAction.Draft(depth));
                }
                if (d.depth() > 1) {
                    out.add(new LoopAction.Draft(d.depth() - 1));
                }
            }
            case LoopAction.Prefill p -> {
                for (int len = 1; len < p.length(); len *= 2) {
                    out.add(new LoopAction.Prefill(len, p.seed()));
                }
                if (p.length() > 1) {
                    out.add(new LoopAction.Prefill(p.length() - 1, p.seed()));
                }
            }
            case LoopAction.Commit c -> {
                if (c.acceptance() != Acceptance.NONE) {
                    out.add(new LoopAction.Commit(Acceptance.NONE, c.seed()));
                }
                if (c.acceptance() == Acceptance.RANDOM || c.acceptance() == Acceptance.MATCHED) {
                    out.add(new LoopAction.Commit(Acceptance.FULL, c.seed()));
                }
            }
            case LoopAction.Leave l -> {
                if (!l.keepAll()) {
                    out.add(new LoopAction.Leave(l.seed(), true));
                }
            }
            case LoopAction.Verify v -> {
            }
            case LoopAction.Capture c -> {
            }
            case LoopAction.BadTarget b -> {
            }
            case LoopAction.BadDrafter b -> {
            }
        }
        return out;
    }
}
