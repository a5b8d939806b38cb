package org.mtporacle.reference.block;

/**
 * The one seam between the row lifecycle and the block math (spec §1.9): {@link MtpBlock} in production, a fake
 * whose K is the embedding and V the hidden in lifecycle tests, so bookkeeping is checked independently of the math.
 */
public interface BlockForward {
    /**
     * Appends {@code s} positions per row to {@code kvs} and returns {@code Y [kvs.length·s, H]}.
     *
     * @see MtpBlock#forward
     */
    float[] forward(float[] e, float[] hin, RowKv[] kvs, int s, ForwardTrace trace);

    /**
     * {@link #forward(float[], float[], RowKv[], int, ForwardTrace)} whose MoE router choices go through {@code hook}
     * (spec §12.5); a block without a MoE layer ignores it.
     */
    default float[] forward(float[] e, float[] hin, RowKv[] kvs, int s, ForwardTrace trace, RouterHook hook) {
        return forward(e, hin, kvs, s, trace);
    }
}
