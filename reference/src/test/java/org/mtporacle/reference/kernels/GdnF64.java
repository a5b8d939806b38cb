package org.mtporacle.reference.kernels;

import java.util.SplittableRandom;

/**
 * The Gated DeltaNet's maths in f64 with plain loops (spec §13.2), written from the definitions and independent of the
 * kernels: the expected values of the GDN kernel tests. Shapes and layouts as {@link Kernels} documents them.
 */
final class GdnF64 {
    private GdnF64() {
    }

    static double silu(double z) {
        return z / (1 + Math.exp(-z));
    }

    /** {@code out[t, c] = silu(Σ_j W[c, j] · u[c, t−(K−1)+j])}, {@code u} the window then x. */
    static double[] causalConv(float[] x, int xOff, float[] window, int winOff, float[] weight, int c, int taps,
                               int steps) {
        double[] out = new double[steps * c];
        for (int t = 0; t < steps; t++) {
            for (int ch = 0; ch < c; ch++) {
                double acc = 0;
                for (int j = 0; j < taps; j++) {
                    int s = t - (taps - 1) + j;
                    double u = s >= 0 ? x[xOff + s * c + ch] : window[winOff + ch * (taps - 1) + (taps - 1 + s)];
                    acc += (double) weight[ch * taps + j] * u;
                }
                out[t * c + ch] = silu(acc);
            }
        }
        return out;
    }

    /** {@code x / √(Σx² + 10⁻⁶) · scale} per row. */
    static double[] l2Norm(float[] x, int xOff, int n, int rows, double scale) {
        double[] out = new double[n * rows];
        for (int r = 0; r < rows; r++) {
            double ss = 0;
            for (int i = 0; i < n; i++) {
                ss += (double) x[xOff + r * n + i] * x[xOff + r * n + i];
            }
            for (int i = 0; i < n; i++) {
                out[r * n + i] = x[xOff + r * n + i] / Math.sqrt(ss + 1e-6) * scale;
            }
        }
        return out;
    }

    /** {@code gain · x / √(mean(x²) + ε) · silu(z)} per row. */
    static double[] gatedRmsNorm(float[] x, int xOff, float[] z, int zOff, float[] gain, int n, int rows, double eps) {
        double[] out = new double[n * rows];
        for (int r = 0; r < rows; r++) {
            double ss = 0;
            for (int i = 0; i < n; i++) {
                ss += (double) x[xOff + r * n + i] * x[xOff + r * n + i];
            }
            double inv = 1 / Math.sqrt(ss / n + eps);
            for (int i = 0; i < n; i++) {
                out[r * n + i] = gain[i] * (x[xOff + r * n + i] * inv) * silu(z[zOff + r * n + i]);
            }
        }
        return out;
    }

    /**
     * {@code T} tokens of the recurrence on an f64 state {@code [Hv, Dk, Dv]} (updated in place): per value head
     * {@code h} with key head {@code h / (Hv/Hk)}, {@code S ← e^g S; m = Sᵀk; S ← S + k(β(v − m))ᵀ; o = Sᵀq}.
     */
    static double[] deltaRule(double[] state, float[] q, float[] k, float[] v, float[] g, float[] beta, int tokens,
                              int hk, int hv, int dk, int dv) {
        double[] out = new double[tokens * hv * dv];
        for (int t = 0; t < tokens; t++) {
            for (int h = 0; h < hv; h++) {
                int kh = h / (hv / hk);
                int qk = t * hk * dk + kh * dk;
                int s = h * dk * dv;
                double alpha = Math.exp(g[t * hv + h]);
                for (int i = 0; i < dk * dv; i++) {
                    state[s + i] *= alpha;
                }
                for (int j = 0; j < dv; j++) {
                    double m = 0;
                    for (int i = 0; i < dk; i++) {
                        m += state[s + i * dv + j] * k[qk + i];
                    }
                    double delta = beta[t * hv + h] * (v[(t * hv + h) * dv + j] - m);
                    double o = 0;
                    for (int i = 0; i < dk; i++) {
                        state[s + i * dv + j] += k[qk + i] * delta;
                        o += state[s + i * dv + j] * q[qk + i];
                    }
                    out[(t * hv + h) * dv + j] = o;
                }
            }
        }
        return out;
    }

    static double[] widen(float[] a) {
        double[] d = new double[a.length];
        for (int i = 0; i < a.length; i++) {
            d[i] = a[i];
        }
        return d;
    }

    /**
     * Seeded inputs of {@code T} delta-rule tokens shaped as the model makes them: q and k unit rows (q times
     * {@code Dk^-½}), v in [−1, 1), β in (0.05, 0.95), g in [−gMax, 0); and a small random state.
     */
    record Inputs(float[] q, float[] k, float[] v, float[] g, float[] beta, float[] state) {
        static Inputs random(SplittableRandom rnd, int tokens, int hk, int hv, int dk, int dv, double gMax) {
            float[] q = unitRows(rnd, tokens * hk, dk, (float) (1 / Math.sqrt(dk)));
            float[] k = unitRows(rnd, tokens * hk, dk, 1f);
            float[] v = TestWeights.randomFloats(tokens * hv * dv, rnd);
            float[] g = new float[tokens * hv];
            float[] beta = new float[tokens * hv];
            for (int i = 0; i < g.length; i++) {
                g[i] = (float) (-gMax * rnd.nextDouble());
                beta[i] = (float) (0.05 + 0.9 * rnd.nextDouble());
            }
            float[] state = TestWeights.randomFloats(hv * dk * dv, rnd);
            for (int i = 0; i < state.length; i++) {
                state[i] *= 0.1f;
            }
            return new Inputs(q, k, v, g, beta, state);
        }

        private static float[] unitRows(SplittableRandom rnd, int rows, int n, float scale) {
            float[] x = TestWeights.randomFloats(rows * n, rnd);
            for (int r = 0; r < rows; r++) {
                double ss = 0;
                for (int i = 0; i < n; i++) {
                    ss += (double) x[r * n + i] * x[r * n + i];
                }
                for (int i = 0; i < n; i++) {
                    x[r * n + i] = (float) (x[r * n + i] / Math.sqrt(ss) * scale);
                }
            }
            return x;
        }
    }
}
