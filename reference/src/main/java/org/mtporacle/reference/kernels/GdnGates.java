package org.mtporacle.reference.kernels;

/**
 * The Gated DeltaNet's gates per value head (spec §13.2): {@code β = σ(b)} and the log-decay {@code g =
 * −exp(A_log) · softplus(a + dt_bias)} ≤ 0, with torch's softplus (β 1, threshold 20: {@code x} itself above 20,
 * else {@code log1p(eˣ)}).
 *
 * <p>Each value is computed in f64 from the f32 inputs ({@link StrictMath} {@code exp} and {@code log1p}, {@code σ}
 * as {@link Activations} defines it) and rounded to f32 once. One definition in both modes: {@code Hv} values per
 * token, and a vector {@code exp} or {@code log1p} may differ between its intrinsic and its fallback.
 */
final class GdnGates {
    /** torch's softplus threshold: above it, softplus(x) is x. */
    static final double SOFTPLUS_THRESHOLD = 20.0;

    private GdnGates() {
    }

    static void gates(float[] g, int gOff, float[] beta, int betaOff, float[] a, int aOff, float[] b, int bOff,
                      float[] aLog, float[] dtBias, int hv) {
        for (int h = 0; h < hv; h++) {
            beta[betaOff + h] = Activations.sigma(b[bOff + h]);
            double x = (double) a[aOff + h] + dtBias[h];
            g[gOff + h] = (float) (-StrictMath.exp(aLog[h]) * softplus(x));
        }
    }

    static double softplus(double x) {
        return x > SOFTPLUS_THRESHOLD ? x : StrictMath.log1p(StrictMath.exp(x));
    }
}
