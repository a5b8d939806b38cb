package org.mtporacle.reference.target;

import java.util.ArrayDeque;
import java.util.IdentityHashMap;
import java.util.Map;

/**
 * The recurrent-state arrays of one group (spec §13.3), reused: a verify writes a new state per token and the commit
 * keeps one, so every round would otherwise allocate (and zero) {@code d} states per row and GDN layer. Arrays come
 * back only when a call has published a storage that no longer refers to them, and leave fully overwritten: a forward
 * writes every element of a state before it is read.
 */
final class StateArrays {
    private final int size;
    private final ArrayDeque<float[]> spare = new ArrayDeque<>();
    /** The most arrays one forward took: the pool never holds more. */
    private int most;
    private int taken;

    StateArrays(int size) {
        this.size = size;
    }

    /** Starts counting the arrays of one forward. */
    void begin() {
        taken = 0;
    }

    /** An array of the state's size whose contents are stale: the caller overwrites every element. */
    float[] take() {
        taken++;
        most = Math.max(most, taken);
        float[] a = spare.pollLast();
        return a != null ? a : new float[size];
    }

    /** Takes back the states of {@code superseded} that {@code current} does not refer to. */
    void reclaim(ReferenceTargetRows.Rows superseded, ReferenceTargetRows.Rows current) {
        Map<float[], Boolean> live = new IdentityHashMap<>();
        states(current, live);
        Map<float[], Boolean> old = new IdentityHashMap<>();
        states(superseded, old);
        for (float[] a : old.keySet()) {
            if (!live.containsKey(a) && a.length == size && spare.size() < most) {
                spare.addLast(a);
            }
        }
    }

    private static void states(ReferenceTargetRows.Rows s, Map<float[], Boolean> into) {
        for (TargetRowState r : s.rows()) {
            for (float[] a : r.rec()) {
                into.put(a, Boolean.TRUE);
            }
        }
        if (s.round() != null) {
            for (GdnLayer.States layer : s.round()) {
                for (float[][] row : layer.rec()) {
                    for (float[] a : row) {
                        into.put(a, Boolean.TRUE);
                    }
                }
            }
        }
    }
}
