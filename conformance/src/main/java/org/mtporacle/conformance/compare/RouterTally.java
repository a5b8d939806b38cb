package org.mtporacle.conformance.compare;

/**
 * What the router comparisons of a MoE layer came to (spec §12.5): choices compared, router near-ties among them,
 * the largest near-tie gap (probability units). All zero for a dense layer or a backend that does not report its
 * choices.
 */
public record RouterTally(long compared, long nearTies, double maxGap) {
    public static final RouterTally NONE = new RouterTally(0, 0, 0);

    public RouterTally plus(RouterTally o) {
        return o == null ? this : new RouterTally(compared + o.compared, nearTies + o.nearTies,
                Math.max(maxGap, o.maxGap));
    }
}
