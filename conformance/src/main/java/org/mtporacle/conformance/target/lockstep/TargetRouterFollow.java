package org.mtporacle.conformance.target.lockstep;

import org.mtporacle.api.TargetRouterChoices;
import org.mtporacle.conformance.target.lockstep.TargetDivergence.Kind;
import org.mtporacle.reference.target.ReferenceTargetRows;

import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

/**
 * The reference target following a backend's router choices (spec §12.5), for every lockstep that drives targets:
 * after the backend's {@code prefill} or {@code verify}, {@link #arm} makes the reference's same call judge each MoE
 * layer's experts at each token against the backend's (by row, position and layer, {@link
 * TargetJudge#routerChoice}) and continue on the backend's while they pass; {@link #finish}, after the reference's
 * call, reports a choice the backend listed where the reference computed none.
 */
public final class TargetRouterFollow {
    private final String what;
    private final Map<List<Integer>, int[]> theirs = new LinkedHashMap<>();
    private final Set<List<Integer>> seen = new HashSet<>();
    private final BooleanSupplier diverged;
    private final Consumer<TargetDivergence> diverge;

    private TargetRouterFollow(String what, BooleanSupplier diverged, Consumer<TargetDivergence> diverge) {
        this.what = what;
        this.diverged = diverged;
        this.diverge = diverge;
    }

    /**
     * Arms {@code oracle}'s next computing call with {@code subject}'s last choices.
     *
     * @param what     the call ({@code "prefill"}, {@code "verify"}), for messages
     * @param diverged true once the run has diverged (the reference then keeps its own choices)
     * @param diverge  takes a divergence (the run keeps the first)
     */
    public static TargetRouterFollow arm(String what, ReferenceTargetRows oracle, TargetRouterChoices subject,
                                         TargetJudge judge, BooleanSupplier diverged,
                                         Consumer<TargetDivergence> diverge) {
        TargetRouterFollow f = new TargetRouterFollow(what, diverged, diverge);
        for (TargetRouterChoices.Choice ch : subject.lastRouterChoices()) {
            f.theirs.put(List.of(ch.row(), ch.position(), ch.layer()), ch.experts());
        }
        oracle.chooseExpertsNextCall((row, pos, layer, probs, ours) -> {
            List<Integer> key = List.of(row, pos, layer);
            f.seen.add(key);
            int[] their = f.theirs.get(key);
            if (diverged.getAsBoolean()) {
                return ours;
            }
            if (their == null) {
                diverge.accept(TargetJudge.of(Kind.CONTRACT, row, pos, String.format(Locale.ROOT,
                        "%s row %d position %d layer %d: the backend reported no router choice for a MoE layer the "
                                + "call computed (spec §12.5)", what, row, pos, layer)));
                return ours;
            }
            diverge.accept(judge.routerChoice(what, row, pos, layer, probs, ours, their));
            return diverged.getAsBoolean() ? ours : their;
        });
        return f;
    }

    /** After the reference's call: a choice the backend reported that the reference did not compute diverges. */
    public void finish() {
        for (List<Integer> key : theirs.keySet()) {
            if (!diverged.getAsBoolean() && !seen.contains(key)) {
                diverge.accept(TargetJudge.of(Kind.CONTRACT, key.get(0), key.get(1), String.format(Locale.ROOT,
                        "%s row %d position %d layer %d: the backend reported a router choice the call did not "
                                + "compute (no MoE layer, row or token there)", what, key.get(0), key.get(1),
                        key.get(2))));
            }
        }
    }
}
