package org.mtporacle.reference.block;

import java.util.Arrays;

/**
 * One row's drafter KV cache, stored without padding (spec §11.10): per KV head, {@code length} positions of
 * {@code D} floats in temporal order. Positions past {@code length} are stale (rolled back) and are overwritten by
 * later appends (spec §4.2), never read.
 */
public final class RowKv {
    private static final int GROWTH = 256;

    private final int numKvHeads;
    private final int headDim;
    private float[][] keys;   // [nKV][capacity · D]
    private float[][] values; // [nKV][capacity · D]
    private int capacity;
    private int length;

    public RowKv(int numKvHeads, int headDim) {
        this.numKvHeads = numKvHeads;
        this.headDim = headDim;
        this.keys = new float[numKvHeads][0];
        this.values = new float[numKvHeads][0];
    }

    /** Valid positions: the row's logical cache length, also the RoPE position of the next append (spec §1.5). */
    public int length() {
        return length;
    }

    /** Cuts or restores the valid length to {@code n ≤ capacity} (round rollback, spec §4.4). */
    public void setLength(int n) {
        if (n < 0 || n > capacity) {
            throw new IllegalStateException("kv: length " + n + " outside [0, " + capacity + "]");
        }
        length = n;
    }

    /** Makes room for {@code extra} positions after {@code length}, in multiples of 256 as the spec's caches do. */
    public void reserve(int extra) {
        int needed = length + extra;
        if (needed <= capacity) {
            return;
        }
        int cap = ((needed + GROWTH - 1) / GROWTH) * GROWTH;
        for (int h = 0; h < numKvHeads; h++) {
            keys[h] = Arrays.copyOf(keys[h], cap * headDim);
            values[h] = Arrays.copyOf(values[h], cap * headDim);
        }
        capacity = cap;
    }

    /** Writes key and value of head {@code h} at position {@code pos} (must be within capacity). */
    public void put(int h, int pos, float[] k, int kOff, float[] v, int vOff) {
        System.arraycopy(k, kOff, keys[h], pos * headDim, headDim);
        System.arraycopy(v, vOff, values[h], pos * headDim, headDim);
    }

    /** The key storage of head {@code h}: position {@code j} at {@code [j·D, (j+1)·D)}. */
    public float[] keys(int h) {
        return keys[h];
    }

    public float[] values(int h) {
        return values[h];
    }

    /** Keys or values of the valid positions as {@code [nKV, length, D]} row-major. */
    public float[] export(boolean wantKeys) {
        return export(wantKeys, length);
    }

    /** Keys or values of the first {@code n ≤ capacity} positions as {@code [nKV, n, D]} row-major. */
    public float[] export(boolean wantKeys, int n) {
        if (n < 0 || n > capacity) {
            throw new IllegalStateException("kv: export of " + n + " positions outside [0, " + capacity + "]");
        }
        float[] out = new float[numKvHeads * n * headDim];
        for (int h = 0; h < numKvHeads; h++) {
            System.arraycopy(wantKeys ? keys[h] : values[h], 0, out, h * n * headDim, n * headDim);
        }
        return out;
    }

    /** A cache holding {@code kv} {@code [nKV, n, D]} keys and values. */
    public static RowKv of(int numKvHeads, int headDim, int n, float[] k, float[] v) {
        RowKv c = new RowKv(numKvHeads, headDim);
        c.reserve(n);
        for (int h = 0; h < numKvHeads; h++) {
            System.arraycopy(k, h * n * headDim, c.keys[h], 0, n * headDim);
            System.arraycopy(v, h * n * headDim, c.values[h], 0, n * headDim);
        }
        c.length = n;
        return c;
    }
}
