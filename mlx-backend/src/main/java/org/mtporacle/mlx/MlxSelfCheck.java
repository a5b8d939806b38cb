package org.mtporacle.mlx;

import org.mtporacle.api.MtpException;
import org.mtporacle.mlx.handle.MlxArray;
import org.mtporacle.mlx.handle.MlxLibrary;
import org.mtporacle.mlx.handle.MlxOps;
import org.mtporacle.mlx.handle.MlxScope;
import org.mtporacle.mlx.handle.MlxStream;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * A start-up check of the MLX ops the block uses, in f32 on the model's device, against their f64 definitions on
 * small seeded inputs, and {@code argsort}'s stability on exact ties (the MoE top-k and the sampler rely on it). It
 * catches an MLX whose device kernels are wrong (MLX 0.31.1's CUDA {@code fast_rms_norm} on more than one row of
 * 129–256 values, fixed in MLX 0.32.0; every Qwen3.5 q/k norm is 256 wide) or run f32 in a lower precision (TF32
 * matmuls), before any conformance result depends on them. Each device is checked once per process.
 */
final class MlxSelfCheck {
    /** f32 kernels over at most a few hundred terms stay within a few ulps; TF32 or a wrong kernel is far above. */
    static final double MAX_RELATIVE_ERROR = 1e-5;

    private static final Object LOCK = new Object();
    private static final List<Boolean> PASSED = new ArrayList<>();

    private MlxSelfCheck() {
    }

    /**
     * Runs the check on {@code stream}'s device unless it passed before in this process.
     *
     * @throws MtpException UNAVAILABLE naming the op, its shape, the error found and what to do
     */
    static void verify(MlxLibrary lib, MlxStream stream) {
        synchronized (LOCK) {
            if (PASSED.contains(stream.isGpu())) {
                return;
            }
            String failure = lib.thread().call(() -> {
                try (MlxScope scope = new MlxScope(lib)) {
                    return firstFailure(new MlxOps(stream, scope));
                }
            });
            if (failure != null) {
                throw new MtpException(MtpException.Kind.UNAVAILABLE, "mlx: self-check on "
                        + (stream.isGpu() ? "gpu" : "cpu") + " failed: " + failure + " (MLX " + lib.version()
                        + "); results on this device would be wrong — use an MLX build with the fix, or device=cpu");
            }
            PASSED.add(stream.isGpu());
        }
    }

    /** The first op whose result is off, described in one line; null when all agree. */
    static String firstFailure(MlxOps ops) {
        SplittableRandom rnd = new SplittableRandom(0x5e1fc4ecL);
        String[] checks = {rmsNorm(ops, rnd, 3, 256), rmsNorm(ops, rnd, 2, 64), matmul(ops, rnd, 8, 96, 40),
                logsumexp(ops, rnd, 2, 300), attention(ops, rnd, 2, 3, 5, 16), argsortTies(ops, rnd, 2, 512)};
        for (String c : checks) {
            if (c != null) {
                return c;
            }
        }
        return null;
    }

    private static String rmsNorm(MlxOps ops, SplittableRandom rnd, int rows, int n) {
        float[] x = values(rnd, rows * n);
        float[] w = values(rnd, n);
        double eps = 1e-6;
        double[] want = new double[rows * n];
        for (int r = 0; r < rows; r++) {
            double ss = 0;
            for (int i = 0; i < n; i++) {
                ss += (double) x[r * n + i] * x[r * n + i];
            }
            double inv = 1 / Math.sqrt(ss / n + eps);
            for (int i = 0; i < n; i++) {
                want[r * n + i] = x[r * n + i] * inv * w[i];
            }
        }
        float[] got = ops.toFloats(ops.rmsNorm(ops.fromFloats(x, rows, n), ops.fromFloats(w, n), (float) eps));
        return compare("fast_rms_norm on [" + rows + ", " + n + "] f32", got, want);
    }

    /**
     * {@code argsort} must be stable (equal values by index): the MoE router's top-k tie rule (spec §12.3) and the
     * sampler's filters rely on it. {@code n} values of a few levels, so most are exact ties.
     */
    private static String argsortTies(MlxOps ops, SplittableRandom rnd, int rows, int n) {
        float[] v = new float[rows * n];
        for (int i = 0; i < v.length; i++) {
            v[i] = rnd.nextInt(4) * 0.25f;
        }
        int[] got = ops.toInts(ops.argsort(ops.fromFloats(v, rows, n), -1));
        for (int r = 0; r < rows; r++) {
            final int row = r;
            Integer[] want = new Integer[n];
            for (int i = 0; i < n; i++) {
                want[i] = i;
            }
            java.util.Arrays.sort(want, (a, b) -> Float.compare(v[row * n + a], v[row * n + b])); // stable
            for (int i = 0; i < n; i++) {
                if (got[r * n + i] != want[i]) {
                    return "argsort on [" + rows + ", " + n + "] f32 with ties is not stable: row " + r + " rank " + i
                            + " is index " + got[r * n + i] + ", expected " + want[i];
                }
            }
        }
        return null;
    }

    private static String matmul(MlxOps ops, SplittableRandom rnd, int m, int k, int n) {
        float[] a = values(rnd, m * k);
        float[] b = values(rnd, k * n);
        double[] want = new double[m * n];
        for (int i = 0; i < m; i++) {
            for (int j = 0; j < n; j++) {
                double s = 0;
                for (int p = 0; p < k; p++) {
                    s += (double) a[i * k + p] * b[p * n + j];
                }
                want[i * n + j] = s;
            }
        }
        float[] got = ops.toFloats(ops.matmul(ops.fromFloats(a, m, k), ops.fromFloats(b, k, n)));
        return compare("matmul [" + m + ", " + k + "] x [" + k + ", " + n + "] f32 (TF32 off?)", got, want);
    }

    private static String logsumexp(MlxOps ops, SplittableRandom rnd, int rows, int n) {
        float[] x = values(rnd, rows * n);
        double[] want = new double[rows];
        for (int r = 0; r < rows; r++) {
            double m = Double.NEGATIVE_INFINITY;
            for (int i = 0; i < n; i++) {
                m = Math.max(m, x[r * n + i]);
            }
            double s = 0;
            for (int i = 0; i < n; i++) {
                s += StrictMath.exp(x[r * n + i] - m);
            }
            want[r] = m + StrictMath.log(s);
        }
        float[] got = ops.toFloats(ops.logsumexp(ops.fromFloats(x, rows, n), -1, false));
        return compare("logsumexp on [" + rows + ", " + n + "] f32", got, want);
    }

    /** {@code [1, heads, s, d]} queries over {@code t} keys, query {@code i} seeing keys {@code [0, t − s + i]}. */
    private static String attention(MlxOps ops, SplittableRandom rnd, int heads, int s, int t, int d) {
        float[] q = values(rnd, heads * s * d);
        float[] k = values(rnd, heads * t * d);
        float[] v = values(rnd, heads * t * d);
        boolean[] mask = new boolean[s * t];
        for (int i = 0; i < s; i++) {
            for (int j = 0; j < t; j++) {
                mask[i * t + j] = j <= t - s + i;
            }
        }
        double scale = 1 / Math.sqrt(d);
        double[] want = new double[heads * s * d];
        for (int h = 0; h < heads; h++) {
            for (int i = 0; i < s; i++) {
                double[] p = new double[t];
                double m = Double.NEGATIVE_INFINITY;
                for (int j = 0; j < t; j++) {
                    if (!mask[i * t + j]) {
                        continue;
                    }
                    double dot = 0;
                    for (int e = 0; e < d; e++) {
                        dot += (double) q[(h * s + i) * d + e] * k[(h * t + j) * d + e];
                    }
                    p[j] = dot * scale;
                    m = Math.max(m, p[j]);
                }
                double sum = 0;
                for (int j = 0; j < t; j++) {
                    p[j] = mask[i * t + j] ? StrictMath.exp(p[j] - m) : 0;
                    sum += p[j];
                }
                for (int e = 0; e < d; e++) {
                    double o = 0;
                    for (int j = 0; j < t; j++) {
                        o += p[j] / sum * v[(h * t + j) * d + e];
                    }
                    want[(h * s + i) * d + e] = o;
                }
            }
        }
        MlxArray out = ops.attention(ops.fromFloats(q, 1, heads, s, d), ops.fromFloats(k, 1, heads, t, d),
                ops.fromFloats(v, 1, heads, t, d), (float) scale, ops.fromBools(mask, 1, 1, s, t));
        return compare("scaled_dot_product_attention [1, " + heads + ", " + s + ", " + d + "] over " + t
                + " keys f32", ops.toFloats(out), want);
    }

    /** Null when every element is within {@link #MAX_RELATIVE_ERROR} of the tensor's largest magnitude. */
    static String compare(String what, float[] got, double[] want) {
        if (got.length != want.length) {
            return what + ": " + got.length + " values, expected " + want.length;
        }
        double scale = 0;
        for (double w : want) {
            scale = Math.max(scale, Math.abs(w));
        }
        double worst = 0;
        int at = 0;
        for (int i = 0; i < want.length; i++) {
            double e = Math.abs(got[i] - want[i]) / Math.max(scale, Double.MIN_NORMAL);
            if (!(e <= worst)) {
                worst = e;
                at = i;
                if (Double.isNaN(e)) {
                    break;
                }
            }
        }
        if (worst <= MAX_RELATIVE_ERROR) {
            return null;
        }
        return String.format(java.util.Locale.ROOT, "%s differs from its f64 definition: element %d is %s, expected "
                + "%.7g (relative error %.3g > %.0e)", what, at, got[at], want[at], worst, MAX_RELATIVE_ERROR);
    }

    private static float[] values(SplittableRandom rnd, int n) {
        float[] out = new float[n];
        for (int i = 0; i < n; i++) {
            out[i] = (float) (rnd.nextDouble() * 2 - 1);
        }
        return out;
    }
}
