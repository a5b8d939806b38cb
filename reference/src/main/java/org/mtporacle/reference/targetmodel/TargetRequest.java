package org.mtporacle.reference.targetmodel;

import org.mtporacle.reference.block.RowKv;

/** One request's target caches: forward new tokens, roll back to a kept length (spec §8.2 steps 4 and 7). */
public final class TargetRequest {
    /** Taps {@code [S, H]} and log-probs {@code [S, V]} of one forward. */
    public record Output(float[] taps, float[] logprobs, int positions) {
    }

    private final ReferenceTarget target;
    private final RowKv[] kvs;

    TargetRequest(ReferenceTarget target) {
        this.target = target;
        this.kvs = new RowKv[target.layerCount()];
        for (int l = 0; l < kvs.length; l++) {
            kvs[l] = new RowKv(target.config().numKvHeads(), target.config().headDim());
        }
    }

    /** Processed tokens {@code P}. */
    public int length() {
        return kvs[0].length();
    }

    /** Appends {@code tokens} to every layer's cache. */
    public Output forward(int[] tokens) {
        return target.forward(this, tokens);
    }

    /** Keeps the first {@code n} positions of every layer (rollback of rejected verify positions). */
    public void truncate(int n) {
        for (RowKv kv : kvs) {
            kv.setLength(n);
        }
    }

    RowKv kv(int layer) {
        return kvs[layer];
    }
}
