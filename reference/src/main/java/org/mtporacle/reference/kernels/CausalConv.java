package org.mtporacle.reference.kernels;

import static org.mtporacle.reference.kernels.LaneSum.F;
import static org.mtporacle.reference.kernels.LaneSum.L;

import jdk.incubator.vector.FloatVector;

/**
 * The Gated DeltaNet's depthwise causal conv then SiLU (spec §13.2): {@code out[t, c] = silu(Σ_{j<K} W[c, j] ·
 * u[c, t−(K−1)+j])}, {@code u} the window {@code [C, K−1]} (oldest first) followed by {@code x [steps, C]}; and the
 * window that follows {@code x}.
 *
 * <p>Order: per output, {@code acc = fma(W[c, j], u, acc)} from 0 with {@code j} ascending, in f32; then SiLU as
 * {@link Activations} defines it ({@code z·σ(z)}, {@code σ} in f64 rounded once). The vector form runs the same
 * {@code fma}s on {@code L} channels at once (weights and window gathered, inputs loaded), so the modes agree bit for
 * bit.
 */
final class CausalConv {
    private CausalConv() {
    }

    static void scalar(float[] out, int outOff, float[] x, int xOff, float[] window, int winOff, float[] weight,
                       int channels, int taps, int steps) {
        sums(out, outOff, x, xOff, window, winOff, weight, channels, taps, steps, 0);
        silu(out, outOff, channels, steps);
    }

    static void vector(float[] out, int outOff, float[] x, int xOff, float[] window, int winOff, float[] weight,
                       int channels, int taps, int steps) {
        int end = channels - channels % L;
        int w = taps - 1;
        int[] byTap = stride(taps);
        int[] byWindow = stride(Math.max(w, 1));
        for (int c = 0; c < end; c += L) {
            for (int t = 0; t < steps; t++) {
                FloatVector.zero(F).intoArray(out, outOff + t * channels + c);
            }
            for (int j = 0; j < taps; j++) {
                FloatVector wj = FloatVector.fromArray(F, weight, c * taps + j, byTap, 0);
                for (int t = 0; t < steps; t++) {
                    int s = t - w + j; // the input's token; negative: window column w + s
                    FloatVector u = s < 0 ? FloatVector.fromArray(F, window, winOff + c * w + w + s, byWindow, 0)
                            : FloatVector.fromArray(F, x, xOff + s * channels + c);
                    int o = outOff + t * channels + c;
                    wj.fma(u, FloatVector.fromArray(F, out, o)).intoArray(out, o);
                }
            }
        }
        sums(out, outOff, x, xOff, window, winOff, weight, channels, taps, steps, end);
        Activations.siluVector(out, outOff, out, outOff, null, 0, channels * steps); // the bits of the scalar form
    }

    /**
     * {@code next[c, j] = u[c, steps + j]}, {@code j < K−1}: the last {@code K−1} raw inputs, oldest first. A copy
     * onto {@code window} itself at the same offset is safe (each column is read before it is overwritten).
     */
    static void window(float[] next, int nextOff, float[] window, int winOff, float[] x, int xOff, int channels,
                       int taps, int steps) {
        int w = taps - 1;
        for (int c = 0; c < channels; c++) {
            for (int j = 0; j < w; j++) {
                int s = steps + j - w; // the input's token; negative: window column w + s
                next[nextOff + c * w + j] = s < 0 ? window[winOff + c * w + w + s] : x[xOff + s * channels + c];
            }
        }
    }

    /** The tap sums of channels {@code [from, C)}, the definition's order. */
    private static void sums(float[] out, int outOff, float[] x, int xOff, float[] window, int winOff, float[] weight,
                             int channels, int taps, int steps, int from) {
        int w = taps - 1;
        for (int t = 0; t < steps; t++) {
            for (int c = from; c < channels; c++) {
                float acc = 0f;
                for (int j = 0; j < taps; j++) {
                    int s = t - w + j;
                    float u = s < 0 ? window[winOff + c * w + w + s] : x[xOff + s * channels + c];
                    acc = Math.fma(weight[c * taps + j], u, acc);
                }
                out[outOff + t * channels + c] = acc;
            }
        }
    }

    private static void silu(float[] out, int outOff, int channels, int steps) {
        Activations.siluScalar(out, outOff, out, outOff, null, 0, channels * steps);
    }

    /** The gather map {@code {0, s, 2s, …}} of one vector. */
    private static int[] stride(int s) {
        int[] map = new int[L];
        for (int i = 0; i < L; i++) {
            map[i] = i * s;
        }
        return map;
    }
}
