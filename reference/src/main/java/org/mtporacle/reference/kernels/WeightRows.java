package org.mtporacle.reference.kernels;

import org.mtporacle.api.HostTensor;
import org.mtporacle.api.LinearWeight;

/** Scalar decoding of one weight row to f32: the definition every format's fast path must match (spec §2). */
final class WeightRows {
    private WeightRows() {
    }

    /** {@code out[i] = W[row, i]} for {@code i < in}, dequantizing affine weights. */
    static void decodeRow(float[] out, LinearWeight w, int row) {
        switch (w) {
            case LinearWeight.Dense d -> {
                HostTensor t = d.weight();
                long base = (long) row * t.dim(1);
                for (int i = 0; i < out.length; i++) {
                    out[i] = t.getFloat(base + i);
                }
            }
            case LinearWeight.Affine a -> {
                int in = a.inFeatures();
                int words = a.codes().dim(1);
                int groups = a.scales().dim(1);
                long mask = (1L << a.bits()) - 1;
                for (int i = 0; i < in; i++) {
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
                    out[i] = scale * q + bias;
                }
            }
        }
    }
}
