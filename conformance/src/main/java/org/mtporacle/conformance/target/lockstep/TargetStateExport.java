package org.mtporacle.conformance.target.lockstep;

/**
 * Optional for a backend's target rows: a row's state as the backend stores it, in the layout it declares (spec
 * §13.2). Lockstep then compares that, normalised by the declared {@link TargetStateLayout}, after every state change;
 * rows without it are compared through {@code capture}, whose checkpoint is in the reference's layout by contract.
 */
public interface TargetStateExport {

    /** The layout the backend declares for {@link #nativeState}. */
    TargetStateLayout stateLayout();

    /** Row {@code row}'s committed state (no round open; the row warm), as independent copies. */
    NativeState nativeState(int row);

    /**
     * One row's state in the declared layout.
     *
     * @param processed P
     * @param conv      {@code [nGDN, convDim, columns]}
     * @param recurrent {@code [nGDN, Hv, ·, ·]} in the declared orientation
     * @param keys      {@code [nFull, nKV, P, D]}, keys after k_norm and RoPE
     * @param values    {@code [nFull, nKV, P, D]}
     */
    record NativeState(int processed, float[] conv, float[] recurrent, float[] keys, float[] values) {
    }
}
