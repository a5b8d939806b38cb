package org.mtporacle.reference.kernels;

import org.mtporacle.api.HostTensor;
import org.mtporacle.api.LinearWeight;

/** Scalar decoding of one weight row to f32: the definition every format's fast path must match (spec §2). */
final class WeightRows {
    private WeightRows() {
    }

    /** {@code out[i] = W[row, i]} for {@code i < in}, dequantizing affine weights. */
    static void decodeRow(float[] out, LinearWeight w, int row) {
        decodeRange(out, 0, w, row, 0, out.length);
    }

    /** {@code out[outOff + i - from] = W[row, i]} for {@code from ≤ i < to}, dequantizing affine weights. */
    static void decodeRange(float[] out, int outOff, LinearWeight w, int row, int from, int to) {
        switch (w) {
            case LinearWeight.Dense d -> {
                HostTensor t = d.weight();
                long base = (long) row * t.dim(1);
                for (int i = from; i < to; i++) {
                    out[outOff + i - from] = t.getFloat(base + i);
                }
            }
            case LinearWeight.Affine a -> {
                int words = a.codes().dim(1);
                int groups = a.scales().dim(1);
                long mask = (1L << a.bits()) - 1;
                for (int i = from; i < to; i++) {
                    long bit = (long) i * a.bits();
                    int word = (int) (bit >>> 5);
                    int shift = (int) (bit & 31);
                    long lo = a.codes().getLong((long) row * words + word);
                    long v = lo >>> shift;
                    if (shift + a.bits() > 32) {
                        v |= a.codes().getLong((long) row * words + word + 1) << (32 - shift);
                    }
                    int q = (int) (v & mask);
                    int g = i / a.groupSize();
                    float scale = a.scales().getFloat((long) row * groups + g);
                    float bias = a.biases() == null ? 0f : a.biases().getFloat((long) row * groups + g);
                    out[outOff + i - from] = scale * q + bias;
                }
            }
        }
    }
}
