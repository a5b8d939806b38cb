package org.mtporacle.conformance.loop.lockstep;

import org.mtporacle.conformance.compare.Divergence;
import org.mtporacle.conformance.target.lockstep.TargetDivergence;

/**
 * Where a backend's loop left the reference's (spec §13.5): which group ({@code target} or {@code drafter}), the kind
 * and category its own judge gave ({@link TargetDivergence.Kind}, {@link Divergence.Kind}), the action, the row and
 * position when they apply, and the judge's one line.
 *
 * @param group       {@code "target"} or {@code "drafter"}
 * @param kind        the judge's kind
 * @param category    the judge's category; shrinking keeps the group and category
 * @param actionIndex the chain action, from 0
 * @param row         the row, or -1
 * @param position    the position, or -1
 * @param message     what differs, both values, the threshold
 */
public record LoopDivergence(String group, String kind, String category, int actionIndex, int row, int position,
                             String message) {

    /** A target divergence ({@link org.mtporacle.conformance.target.lockstep.TargetJudge}'s). */
    public static LoopDivergence of(TargetDivergence d, int index) {
        return new LoopDivergence("target", d.kind().name(), d.category().name(), index, d.row(), d.position(),
                d.message());
    }

    /** A drafter divergence ({@link org.mtporacle.conformance.compare.Judge}'s). */
    public static LoopDivergence of(Divergence d, int index) {
        return new LoopDivergence("drafter", d.kind().name(), d.category().name(), index, d.row(), d.position(),
                d.message());
    }

    /** What a shrunk chain must keep: the group and the category. */
    public String shrinkKey() {
        return group + "/" + category;
    }

    @Override
    public String toString() {
        return "action " + actionIndex + " (" + group + ", " + kind + "): " + message;
    }
}
