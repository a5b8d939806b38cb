package org.mtporacle.conformance.loop;

import org.mtporacle.api.DraftModel;
import org.mtporacle.api.DraftRows;
import org.mtporacle.api.DraftSampling;
import org.mtporacle.api.HiddenTap;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.LoadedTarget;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.RowCheckpoint;
import org.mtporacle.api.TargetCheckpoint;
import org.mtporacle.api.TargetModel;
import org.mtporacle.api.TargetOutput;
import org.mtporacle.api.TargetRows;
import org.mtporacle.reference.target.SpeculativeDecoding;

import java.util.List;

/**
 * A backend whose target and drafter share a buffer, as a fused engine's do: the target's verify writes its taps
 * into a tap buffer (and its tokens, and its commit the counts it accepted), and the drafter's commit reads its
 * context from that buffer, not from its argument. Each component is correct alone (with nothing in the buffer the
 * drafter uses its argument), so drafter chains and target chains pass; only chains that interleave both show the
 * {@link Bug} (but the two clamp bugs, which refuse nothing wherever they run, for the loop's bad calls).
 */
final class FusedEngine {
    /** How the shared buffer goes wrong. */
    enum Bug {
        /** None: the buffer always holds the last verify's taps. */
        NONE,
        /** A zero-draft verify (width 1) does not refresh the buffer ("nothing was drafted"), so the drafter's
         * commit after a zero-draft round reads the previous round's taps: the drafter is fed a stale tap. */
        STALE_TAP_AFTER_ZERO_DRAFT_ROUND,
        /** The drafter's commit takes each row's count from the target's last commit as the tokens the target kept
         * ({@code accepted + 1}, the pending token included) instead of the drafts accepted: off by one, clamped to
         * the depth, so the drafter keeps a rejected draft whenever the target rejected one. */
        DRAFTER_COUNT_FROM_TARGET_OFF_BY_ONE,
        /**
         * Keep and rebuild mixed up, one way: the drafter's commit after a verify takes the counts the target accepted
         * whatever it is told (an engine with {@code keep} built in), so under a declared {@code rebuild}, whose
         * commit is 0, it keeps the drafted rows and then the rebuild appends the accepted drafts a second time.
         */
        KEEPS_WHAT_THE_TARGET_ACCEPTED,
        /**
         * Keep and rebuild mixed up, the other way: the drafter's commit re-runs the accepted drafts with the verify's
         * taps (an engine with vLLM's {@code rebuild} built in), so under a declared {@code keep} the drafted rows'
         * K/V are the taps' instead of the drafter's own: the same P and retained hidden, other K/V.
         */
        REBUILDS_ON_COMMIT,
        /** Not an interleaving bug: the target's commit clamps an accepted count into {@code [0, W − 1]} instead of
         * refusing it (spec §13.3). */
        TARGET_CLAMPS_ACCEPTED,
        /** Not an interleaving bug: the drafter's commit clamps an accepted count into {@code [0, depth]} instead of
         * refusing it (spec §5.8). */
        DRAFTER_CLAMPS_ACCEPTED
    }

    private final Bug bug;
    private final HiddenTap tap;
    private HostTensor taps; // [B, W, H] the last verify's taps, as the buffer holds them
    private int[] kept;      // [B] the tokens each row kept at the target's last commit (accepted + 1)
    private int[][] verified; // [B][W] the last verify's tokens

    final LoadedTarget target;
    final DraftModel drafter;

    FusedEngine(LoadedTarget target, DraftModel drafter, HiddenTap tap, Bug bug) {
        this.bug = bug;
        this.tap = tap;
        this.target = new Target(target);
        this.drafter = new Drafter(drafter);
    }

    /** The buffer's first {@code w} positions, when it holds {@code b} rows of at least {@code w}; else null. */
    private HostTensor buffered(int b, int w) {
        if (taps == null || taps.dim(0) != b || taps.dim(1) < w) {
            return null;
        }
        int n = taps.dim(1);
        int h = taps.dim(2);
        float[] all = taps.toFloatArray();
        float[] out = new float[b * w * h];
        for (int r = 0; r < b; r++) {
            System.arraycopy(all, r * n * h, out, r * w * h, w * h);
        }
        return HostTensor.ofFloats(out, b, w, h);
    }

    /**
     * The drafter's accepted counts: its argument; under the count bug the target's kept counts, clamped; under the
     * keep bug the target's accepted counts; under the clamp bug the argument clamped.
     */
    private int[] counts(int[] accepted, int depth) {
        if (bug == Bug.DRAFTER_CLAMPS_ACCEPTED && accepted != null) {
            return clamp(accepted, depth);
        }
        boolean fromTarget = bug == Bug.DRAFTER_COUNT_FROM_TARGET_OFF_BY_ONE || bug == Bug.KEEPS_WHAT_THE_TARGET_ACCEPTED;
        if (!fromTarget || kept == null || accepted == null || kept.length != accepted.length) {
            return accepted;
        }
        int[] out = new int[accepted.length];
        for (int b = 0; b < out.length; b++) {
            out[b] = Math.min(bug == Bug.KEEPS_WHAT_THE_TARGET_ACCEPTED ? kept[b] - 1 : kept[b], depth);
        }
        return out;
    }

    /**
     * Whether a context argument is one the buffer may stand in for: F32, finite, of the buffer's shape. Anything else
     * goes to the drafter as given, so the engine refuses what the contract refuses (spec §5.8).
     */
    private static boolean plain(HostTensor context, HostTensor buffered) {
        try {
            if (context.dtype() != org.mtporacle.api.DType.F32
                    || !java.util.Arrays.equals(context.shape(), buffered.shape())) {
                return false;
            }
            for (float v : context.toFloatArray()) {
                if (!Float.isFinite(v)) {
                    return false;
                }
            }
            return true;
        } catch (RuntimeException released) {
            return false;
        }
    }

    private static int[] clamp(int[] accepted, int max) {
        int[] out = accepted.clone();
        for (int b = 0; b < out.length; b++) {
            out[b] = Math.max(0, Math.min(max, out[b]));
        }
        return out;
    }

    /** Each row's last verify's drafts (its tokens after the pending one), or null when none is buffered. */
    private int[][] verifiedDrafts(int b) {
        if (verified == null || verified.length != b) {
            return null;
        }
        int[][] out = new int[b][];
        for (int r = 0; r < b; r++) {
            out[r] = java.util.Arrays.copyOfRange(verified[r], 1, verified[r].length);
        }
        return out;
    }

    private final class Target implements LoadedTarget {
        private final LoadedTarget inner;

        Target(LoadedTarget inner) {
            this.inner = inner;
        }

        @Override
        public TargetModel model() {
            return inner.model();
        }

        @Override
        public String numerics() {
            return inner.numerics() + " (fused, " + bug + ")";
        }

        @Override
        public TargetRows openRows(List<TargetCheckpoint> checkpoints) {
            TargetRows rows = inner.openRows(checkpoints);
            taps = null; // a new group starts with empty buffers, so each chain stands alone
            kept = null;
            verified = null;
            return new TargetRows() {
                @Override
                public int rowCount() {
                    return rows.rowCount();
                }

                @Override
                public int[] processedTokens() {
                    return rows.processedTokens();
                }

                @Override
                public void append(List<TargetCheckpoint> c) {
                    rows.append(c);
                }

                @Override
                public void filterRows(int[] keep) {
                    rows.filterRows(keep);
                }

                @Override
                public TargetOutput prefill(HostTensor tokens) {
                    return rows.prefill(tokens);
                }

                @Override
                public TargetOutput verify(HostTensor tokens) {
                    TargetOutput out = rows.verify(tokens);
                    if (bug != Bug.STALE_TAP_AFTER_ZERO_DRAFT_ROUND || tokens.dim(1) > 1) {
                        taps = out.taps(tap);
                    }
                    int w = tokens.dim(1);
                    int[] flat = tokens.toIntArray();
                    verified = new int[tokens.dim(0)][];
                    for (int r = 0; r < verified.length; r++) {
                        verified[r] = java.util.Arrays.copyOfRange(flat, r * w, (r + 1) * w);
                    }
                    width = w;
                    return out;
                }

                private int width;

                @Override
                public void commit(int[] accepted) {
                    rows.commit(bug == Bug.TARGET_CLAMPS_ACCEPTED && accepted != null ? clamp(accepted, width - 1)
                            : accepted);
                    kept = new int[accepted.length];
                    for (int b = 0; b < accepted.length; b++) {
                        kept[b] = accepted[b] + 1;
                    }
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
            };
        }

        @Override
        public void close() {
            inner.close();
        }
    }

    private final class Drafter implements DraftModel {
        private final DraftModel inner;

        Drafter(DraftModel inner) {
            this.inner = inner;
        }

        @Override
        public MtpModel model() {
            return inner.model();
        }

        @Override
        public String numerics() {
            return inner.numerics();
        }

        @Override
        public DraftRows openRows(List<RowCheckpoint> checkpoints) {
            DraftRows rows = inner.openRows(checkpoints);
            return new DraftRows() {
                @Override
                public int rowCount() {
                    return rows.rowCount();
                }

                @Override
                public void append(List<RowCheckpoint> c) {
                    rows.append(c);
                }

                @Override
                public void filterRows(int[] keep) {
                    rows.filterRows(keep);
                }

                @Override
                public void prefill(HostTensor tokens, HostTensor context) {
                    rows.prefill(tokens, context);
                }

                @Override
                public int[][] draft(int[] pending, int depth, long[] steps, DraftSampling sampling) {
                    return rows.draft(pending, depth, steps, sampling);
                }

                @Override
                public void commit(int[] accepted, HostTensor context) {
                    HostTensor b = context == null ? null : buffered(context.dim(0), context.dim(1));
                    HostTensor ctx = b == null || !plain(context, b) ? context : b;
                    int[][] drafts = verifiedDrafts(context.dim(0));
                    if (bug == Bug.REBUILDS_ON_COMMIT && accepted != null && context.dim(1) > 1 && drafts != null) {
                        rows.commit(new int[accepted.length], ctx);
                        SpeculativeDecoding.rebuild(inner, rows, accepted, drafts, ctx);
                        return;
                    }
                    rows.commit(counts(accepted, context.dim(1) - 1), ctx);
                }

                @Override
                public RowCheckpoint capture(int row) {
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
            };
        }

        @Override
        public void close() {
            inner.close();
        }
    }
}
