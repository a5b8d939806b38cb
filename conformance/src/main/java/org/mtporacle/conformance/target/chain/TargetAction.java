package org.mtporacle.conformance.target.chain;

import java.util.List;

/**
 * One step of a target action chain (spec §13.3). Like the drafter's actions, they carry intent and seeds, not arrays:
 * tokens, drafts, accepted counts and row choices are derived when the action runs ({@link TargetChainData}), from the
 * seed, the group's shape and (for "greedy-true" drafts and matched acceptance) the reference's own outputs, so a
 * chain stays meaningful when shrinking removes rows or actions, and a trace replays from the actions alone.
 */
public sealed interface TargetAction {

    /** A short readable form for traces and reports. */
    String describe();

    /** Appends rows: each slot restores pool entry {@code slot mod poolSize}, or adds an empty row when negative. */
    record Append(List<Integer> slots) implements TargetAction {
        public Append {
            slots = List.copyOf(slots);
        }

        @Override
        public String describe() {
            return "append " + slots;
        }
    }

    /** Keeps a seeded subset of rows in a seeded order; {@code keepAll} keeps every row, reordered. */
    record Filter(long seed, boolean keepAll) implements TargetAction {
        @Override
        public String describe() {
            return "filterRows seed=" + seed + (keepAll ? " (all, reordered)" : "");
        }
    }

    /** Prefills {@code length} seeded tokens into every row. */
    record Prefill(int length, long seed) implements TargetAction {
        @Override
        public String describe() {
            return "prefill L=" + length + " seed=" + seed;
        }
    }

    /**
     * Verifies {@code W = depth + 1} tokens per row: a seeded pending token, then drafts; each row's drafts are the
     * reference's own greedy continuation ("true") with probability {@code truePercent}%, possibly broken at a seeded
     * position, else random, so that every acceptance length occurs.
     */
    record Verify(int depth, long seed, int truePercent) implements TargetAction {
        @Override
        public String describe() {
            return "verify W=" + (depth + 1) + " true=" + truePercent + "% seed=" + seed;
        }
    }

    /** How commit chooses each row's accepted count. */
    enum Acceptance {
        /** 0 for every row (the pending token only). */
        NONE,
        /** {@code W − 1}: every draft. */
        FULL,
        /** Uniform in {@code [0, W − 1]} per row. */
        RANDOM,
        /** The longest prefix of drafts equal to the reference's greedy tokens at the verify (the loop's rule). */
        MATCHED
    }

    /** Commits the open round with accepted counts per {@link Acceptance}. */
    record Commit(Acceptance acceptance, long seed) implements TargetAction {
        @Override
        public String describe() {
            return "commit " + acceptance.name().toLowerCase() + " seed=" + seed;
        }
    }

    /** Captures a seeded warm row on both sides into the checkpoint pool. */
    record Capture(long seed) implements TargetAction {
        @Override
        public String describe() {
            return "capture seed=" + seed;
        }
    }

    /** A deliberately invalid call; both sides must refuse it with the same kind and change nothing. */
    record Bad(TargetBadCall call, long seed) implements TargetAction {
        @Override
        public String describe() {
            return "bad " + call.name().toLowerCase().replace('_', '-') + " seed=" + seed;
        }
    }
}
