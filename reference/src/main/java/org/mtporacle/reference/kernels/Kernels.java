package org.mtporacle.reference.kernels;

import org.mtporacle.api.LinearWeight;

/**
 * The verbs the reference block is built from, in one mode, with a fixed thread count. Activations are {@code float[]}
 * with explicit offsets; weights are {@link LinearWeight}s (dense F32/F16/BF16 or MLX affine).
 *
 * <p>Determinism: every verb has a fixed accumulation order for a given mode and vector species; threads split output
 * rows, never one dot product, so results are bit-identical across runs and thread counts.
 */
public final class Kernels implements AutoCloseable {
    private final KernelMode mode;
    private final int threads;

    public Kernels(KernelMode mode, int threads) {
        if (threads < 1) {
            throw new IllegalArgumentException("kernels: threads = " + threads + " must be ≥ 1");
        }
        this.mode = mode;
        this.threads = threads;
    }

    public KernelMode mode() {
        return mode;
    }

    public int threads() {
        return threads;
    }

    /** For reports: mode, species and threads. */
    public String describe() {
        return mode.name().toLowerCase() + ", " + threads + " thread(s)";
    }

    /** {@code out[r, o] = Σ_i x[r, i] · W[o, i]} for {@code r < rows}: x {@code [rows, in]}, out {@code [rows, out]}. */
    public void matmul(float[] out, int outOff, LinearWeight w, float[] x, int xOff, int rows) {
        int in = w.inFeatures();
        int outF = w.outFeatures();
        float[] wrow = new float[in];
        for (int o = 0; o < outF; o++) {
            WeightRows.decodeRow(wrow, w, o);
            for (int r = 0; r < rows; r++) {
                float acc = 0f;
                int xb = xOff + r * in;
                for (int i = 0; i < in; i++) {
                    acc += x[xb + i] * wrow[i];
                }
                out[outOff + r * outF + o] = acc;
            }
        }
    }

    /** {@code out = x · (mean(x²) + ε)^-½ · gain} per row of length {@code n}, for {@code rows} rows (spec §1.6). */
    public void rmsNorm(float[] out, int outOff, float[] x, int xOff, float[] gain, int n, int rows, double eps) {
        for (int r = 0; r < rows; r++) {
            int xb = xOff + r * n;
            int ob = outOff + r * n;
            float ss = 0f;
            for (int i = 0; i < n; i++) {
                ss += x[xb + i] * x[xb + i];
            }
            float inv = (float) (1.0 / Math.sqrt(ss / n + eps));
            for (int i = 0; i < n; i++) {
                out[ob + i] = x[xb + i] * inv * gain[i];
            }
        }
    }

    /**
     * Rotates the first {@code rotaryDims} features of one head vector at {@code off} in place, half-split layout
     * (spec §1.5 step 5): pairs {@code (f, f+R/2)}, {@code ω_f = θ^(−2f/R)}, angle {@code position · ω_f}.
     */
    public void rope(float[] x, int off, int rotaryDims, double theta, int position) {
        int half = rotaryDims / 2;
        for (int f = 0; f < half; f++) {
            double angle = position * Math.pow(theta, -2.0 * f / rotaryDims);
            float c = (float) Math.cos(angle);
            float s = (float) Math.sin(angle);
            float a = x[off + f];
            float b = x[off + f + half];
            x[off + f] = a * c - b * s;
            x[off + f + half] = a * s + b * c;
        }
    }

    /** {@code out[0, in) = table[token, :]} dequantized to f32 (spec §1.7). */
    public void embed(float[] out, int outOff, LinearWeight table, int token) {
        float[] row = new float[table.inFeatures()];
        WeightRows.decodeRow(row, table, token);
        System.arraycopy(row, 0, out, outOff, row.length);
    }

    /** {@code Σ a[i]·b[i]} over {@code n} elements. */
    public float dot(float[] a, int aOff, float[] b, int bOff, int n) {
        float acc = 0f;
        for (int i = 0; i < n; i++) {
            acc += a[aOff + i] * b[bOff + i];
        }
        return acc;
    }

    /** {@code out[i] = logits[i] − logsumexp(logits)} over {@code n} elements (spec §1.7). */
    public void logSoftmax(float[] out, int outOff, float[] logits, int off, int n) {
        float max = Float.NEGATIVE_INFINITY;
        for (int i = 0; i < n; i++) {
            max = Math.max(max, logits[off + i]);
        }
        double sum = 0;
        for (int i = 0; i < n; i++) {
            sum += Math.exp(logits[off + i] - max);
        }
        float lse = (float) (max + Math.log(sum));
        for (int i = 0; i < n; i++) {
            out[outOff + i] = logits[off + i] - lse;
        }
    }

    @Override
    public void close() {
    }
}
