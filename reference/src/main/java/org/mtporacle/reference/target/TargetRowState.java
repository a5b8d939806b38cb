package org.mtporacle.reference.target;

import org.mtporacle.reference.block.RowKv;

/**
 * One row's target state after {@code P} tokens (spec §13.3), unpadded: per GDN layer its conv window and recurrent
 * state, per full-attention layer its KV cache. Arrays are replaced, never written, once published; a cache's own
 * length is only a write cursor, set from {@code P} before every forward, so positions past {@code P} are stale and
 * unread.
 *
 * @param conv [nGDN][convDim · (K−1)] the last K−1 raw conv inputs, channel-major, oldest first
 * @param rec  [nGDN][Hv · Dk · Dv] the recurrent states {@code S[h, i, j]}
 * @param kv   [nFull] the attention caches
 */
record TargetRowState(float[][] conv, float[][] rec, RowKv[] kv) {
}
