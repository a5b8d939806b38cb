package org.mtporacle.conformance.loop.chain;

import org.mtporacle.conformance.chain.BadCall;
import org.mtporacle.conformance.target.chain.TargetAction.Acceptance;
import org.mtporacle.conformance.target.chain.TargetBadCall;

import java.util.List;

/**
 * One step of a loop chain (spec §13.5): an action of the speculative loop as an engine runs it, over a target group
 * and a drafter group that always hold the same requests in the same rows. Actions carry intent and seeds, not arrays:
 * tokens and choices come from the seed, and everything the loop derives from outputs (the pending tokens, the drafts
 * verified, the accepted counts) comes from the reference's outputs when the action runs ({@link LoopChainData}), so
 * a shrunk chain stays a loop and a trace replays from the actions alone. Besides the loop's own actions, a chain
 * makes invalid calls to either group from the target's and the drafter's bad-call catalogues ({@link BadTarget},
 * {@link BadDrafter}): both sides must refuse each with the catalogue's kind and change nothing.
 */
public sealed interface LoopAction {

    /** A short readable form for traces and reports. */
    String describe();

    /**
     * Requests join: each slot restores pool entry {@code slot mod poolSize} in both groups (target and drafter
     * checkpoints captured together, with the row's pending token), or adds a cold row to both when negative.
     */
    record Join(List<Integer> slots) implements LoopAction {
        public Join {
            slots = List.copyOf(slots);
        }

        @Override
        public String describe() {
            return "join " + slots;
        }
    }

    /** Requests leave: both groups keep the same seeded subset of rows in a seeded order ({@code keepAll}: all). */
    record Leave(long seed, boolean keepAll) implements LoopAction {
        @Override
        public String describe() {
            return "leave seed=" + seed + (keepAll ? " (all stay, reordered)" : "");
        }
    }

    /**
     * A prompt (or a further piece of one) of {@code length} seeded tokens per row: the target prefills it, then the
     * drafter prefills the same tokens with the target's declared tap; the next pending token is the reference
     * target's greedy token after it.
     */
    record Prefill(int length, long seed) implements LoopAction {
        @Override
        public String describe() {
            return "prefill L=" + length + " seed=" + seed;
        }
    }

    /** The drafter drafts {@code depth} tokens (0: a zero-draft round) greedily from every row's pending token. */
    record Draft(int depth) implements LoopAction {
        @Override
        public String describe() {
            return "draft d=" + depth;
        }
    }

    /** The target verifies {@code [pending, drafts]} of every row (the reference drafter's drafts). */
    record Verify() implements LoopAction {
        @Override
        public String describe() {
            return "verify";
        }
    }

    /**
     * Both groups commit the round: the target with accepted counts per {@link Acceptance} ({@code MATCHED}: the
     * loop's greedy rule on the reference target's verify), then the drafter with the same counts and its own
     * target's verify taps; each row's next pending token is the reference target's greedy token at its accepted
     * position.
     */
    record Commit(Acceptance acceptance, long seed) implements LoopAction {
        @Override
        public String describe() {
            return "commit " + acceptance.name().toLowerCase() + " seed=" + seed;
        }
    }

    /** Captures a seeded warm row in both groups (target and drafter together) into the checkpoint pool. */
    record Capture(long seed) implements LoopAction {
        @Override
        public String describe() {
            return "capture seed=" + seed;
        }
    }

    /**
     * An invalid call to the target group ({@link TargetBadCall}, made as the target's chains make it, in the loop's
     * state): both sides refuse it with the catalogue's kind, and neither group changes (an open round stays open).
     */
    record BadTarget(TargetBadCall call, long seed) implements LoopAction {
        @Override
        public String describe() {
            return "bad target " + call.name().toLowerCase(java.util.Locale.ROOT).replace('_', '-') + " seed=" + seed;
        }
    }

    /**
     * An invalid call to the drafter group ({@link BadCall}, made as the drafter's chains make it, in the loop's
     * state): both sides refuse it with the catalogue's kind, and neither group changes (an open round stays open).
     */
    record BadDrafter(BadCall call, long seed) implements LoopAction {
        @Override
        public String describe() {
            return "bad drafter " + call.name().toLowerCase(java.util.Locale.ROOT).replace('_', '-') + " seed=" + seed;
        }
    }
}
