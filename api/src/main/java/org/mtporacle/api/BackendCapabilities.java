package org.mtporacle.api;

/**
 * What a backend says it can do, so conformance generates only what it can be asked (an engine over the wire declares
 * these in its handshake, conformance/WIRE.md §4). Bad calls beyond the limits are still sent: refusing them is the
 * contract.
 *
 * @param seededSampling whether it draws seeded stochastic samples (spec §7); when false, chains draft greedily
 * @param maxRows        the most rows one group is given
 * @param maxDepth       the deepest draft round it is asked for
 */
public record BackendCapabilities(boolean seededSampling, int maxRows, int maxDepth) {
    /** No limit beyond the contract's. */
    public static final BackendCapabilities ALL = new BackendCapabilities(true, Integer.MAX_VALUE,
            RowContract.MAX_DEPTH);
}
