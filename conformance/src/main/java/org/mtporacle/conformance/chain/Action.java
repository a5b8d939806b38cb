package org.mtporacle.conformance.chain;

import java.util.List;

/**
 * One step of a lifecycle action chain. Actions carry intent and seeds, not concrete arrays: the concrete arguments
 * (row indices, tokens, hiddens, accepted counts) are derived from the seed and the group's current row count when the
 * action runs ({@link ChainData}). So a chain stays meaningful when shrinking removes rows or actions, and a trace
 * replays exactly from the actions alone.
 */
public sealed interface Action {

    /** A short readable form for traces and reports ({@code "draft depth=3 greedy seed=…"}). */
    String describe();

    /** Appends rows: each slot restores pool entry {@code slot mod poolSize}, or adds a cold row when {@code slot < 0}
     * or the pool is empty. {@code crossFeed}: the subject restores the oracle's checkpoint (interchange, §10.1.7). */
    record Append(List<Integer> slots, boolean crossFeed) implements Action {
        public Append {
            slots = List.copyOf(slots);
        }

        @Override
        public String describe() {
            return "append " + slots + (crossFeed ? " cross-fed" : "");
        }
    }

    /** Keeps a seeded random subset of rows in a seeded order; {@code keepAll} keeps every row, reordered. */
    record Filter(long seed, boolean keepAll) implements Action {
        @Override
        public String describe() {
            return "filterRows seed=" + seed + (keepAll ? " (all, reordered)" : "");
        }
    }

    /** Prefills {@code length} new positions of seeded tokens and hiddens for every row. */
    record Prefill(int length, long seed) implements Action {
        @Override
        public String describe() {
            return "prefill L=" + length + " seed=" + seed;
        }
    }

    /** Drafts {@code depth} tokens per row with seeded pending tokens and steps; greedy or seeded samplers. */
    record Draft(int depth, long seed, boolean stochastic) implements Action {
        @Override
        public String describe() {
            return "draft depth=" + depth + (stochastic ? " seeded-sampling" : " greedy") + " seed=" + seed;
        }
    }

    /** How commit chooses each row's accepted count. */
    enum Acceptance { NONE, FULL, RANDOM }

    /** Commits the open round with seeded verify taps and accepted counts per {@link Acceptance}. */
    record Commit(Acceptance acceptance, long seed) implements Action {
        @Override
        public String describe() {
            return "commit " + acceptance.name().toLowerCase() + " seed=" + seed;
        }
    }

    /** Captures a seeded capturable row on both sides into the checkpoint pool. */
    record Capture(long seed) implements Action {
        @Override
        public String describe() {
            return "capture seed=" + seed;
        }
    }

    /** A deliberately invalid call; both sides must refuse it with the same kind and change nothing. */
    record Bad(BadCall call, long seed) implements Action {
        @Override
        public String describe() {
            return "bad " + call.name().toLowerCase().replace('_', '-') + " seed=" + seed;
        }
    }
}
