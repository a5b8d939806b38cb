package org.mtporacle.conformance.target.router;

import org.mtporacle.api.HostTensor;
import org.mtporacle.api.LoadedTarget;
import org.mtporacle.api.TargetCheckpoint;
import org.mtporacle.api.TargetModel;
import org.mtporacle.api.TargetOutput;
import org.mtporacle.api.TargetRouterChoices;
import org.mtporacle.api.TargetRows;
import org.mtporacle.reference.target.ReferenceTarget;
import org.mtporacle.reference.target.ReferenceTargetRows;

import java.util.List;

/**
 * A test-only MoE target whose router has one real bug at a near-tie, and which reports its choices
 * ({@link TargetRouterChoices}): the reference target's arithmetic with each MoE layer's choice replaced by {@link
 * Bug}'s. Everything else is the reference's, so any divergence the kit finds is the router's.
 */
final class RouterMutantTarget implements LoadedTarget {

    /** The router's bug. */
    enum Bug {
        /** None: the reference's own choices (the kit must pass it). */
        NONE,
        /**
         * The last slot takes the runner-up expert (the {@code K+1}-th) when it trails the {@code K}-th by less than
         * {@link #NEAR}: a top-k that breaks near-ties toward the higher probability rank's neighbour, as an unstable
         * partial sort does.
         */
        RUNNER_UP_AT_NEAR_TIE,
        /**
         * Among experts whose probabilities are within {@link #NEAR} of the {@code K}-th's, the last slot takes the
         * highest index instead of the lowest: ties broken toward the higher expert index.
         */
        HIGHER_INDEX_AT_NEAR_TIE,
        /**
         * As {@link #RUNNER_UP_AT_NEAR_TIE} within {@link #WIDE} instead of {@link #NEAR}: a router whose top-k is
         * off by more than bf16 rounding explains (a wrong expert, not a near-tie).
         */
        RUNNER_UP_WITHIN_WIDE_MARGIN
    }

    /** The wide margin of {@link Bug#RUNNER_UP_WITHIN_WIDE_MARGIN}: far above the bf16 router gap. */
    static final double WIDE = 0.2;

    /** What counts as a near-tie for the bug (probability units): well above f32 noise, often reached. */
    static final double NEAR = 0.05;

    private final ReferenceTarget target;
    private final Bug bug;

    RouterMutantTarget(ReferenceTarget target, Bug bug) {
        this.target = target;
        this.bug = bug;
    }

    @Override
    public TargetModel model() {
        return target.model();
    }

    @Override
    public String numerics() {
        return "reference arithmetic, router mutant " + bug;
    }

    @Override
    public TargetRows openRows(List<TargetCheckpoint> checkpoints) {
        return new Rows(target.openReferenceRows(checkpoints));
    }

    @Override
    public void close() {
        target.close();
    }

    /** The experts the buggy router uses where the reference chose {@code chosen} under {@code probs}. */
    int[] route(float[] probs, int[] chosen) {
        int k = chosen.length;
        int last = chosen[k - 1];
        int runnerUp = -1;
        for (int e = 0; e < probs.length; e++) {
            if (!contains(chosen, e) && (runnerUp < 0 || probs[e] > probs[runnerUp])) {
                runnerUp = e;
            }
        }
        int[] out = chosen.clone();
        switch (bug) {
            case NONE -> {
            }
            case RUNNER_UP_AT_NEAR_TIE, RUNNER_UP_WITHIN_WIDE_MARGIN -> {
                double margin = bug == Bug.RUNNER_UP_AT_NEAR_TIE ? NEAR : WIDE;
                if (runnerUp >= 0 && probs[last] - probs[runnerUp] < margin) {
                    out[k - 1] = runnerUp;
                }
            }
            case HIGHER_INDEX_AT_NEAR_TIE -> {
                int pick = last;
                for (int e = 0; e < probs.length; e++) {
                    boolean free = e == last || !contains(chosen, e);
                    if (free && e > pick && probs[last] - probs[e] < NEAR) {
                        pick = e;
                    }
                }
                out[k - 1] = pick;
            }
        }
        return out;
    }

    private static boolean contains(int[] a, int x) {
        for (int v : a) {
            if (v == x) {
                return true;
            }
        }
        return false;
    }

    /** The reference's rows with the buggy router armed for every forward; they report what they used. */
    private final class Rows implements TargetRows, TargetRouterChoices {
        private final ReferenceTargetRows rows;

        Rows(ReferenceTargetRows rows) {
            this.rows = rows;
        }

        private void arm() {
            rows.chooseExpertsNextCall((row, position, layer, probs, chosen) -> route(probs, chosen));
        }

        @Override
        public TargetOutput prefill(HostTensor tokens) {
            arm();
            return rows.prefill(tokens);
        }

        @Override
        public TargetOutput verify(HostTensor tokens) {
            arm();
            return rows.verify(tokens);
        }

        @Override
        public List<Choice> lastRouterChoices() {
            return rows.lastRouterChoices();
        }

        @Override
        public int rowCount() {
            return rows.rowCount();
        }

        @Override
        public int[] processedTokens() {
            return rows.processedTokens();
        }

        @Override
        public void append(List<TargetCheckpoint> checkpoints) {
            rows.append(checkpoints);
        }

        @Override
        public void filterRows(int[] keep) {
            rows.filterRows(keep);
        }

        @Override
        public void commit(int[] accepted) {
            rows.commit(accepted);
        }

        @Override
        public TargetCheckpoint capture(int row) {
            return rows.capture(row);
        }

        @Override
        public boolean isClosed() {
            return rows.isClosed();
        }

        @Override
        public void close() {
            rows.close();
        }
    }
}
