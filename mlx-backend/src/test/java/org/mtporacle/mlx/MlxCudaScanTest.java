package org.mtporacle.mlx;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.mtporacle.mlx.handle.MlxArray;
import org.mtporacle.mlx.handle.MlxDiscovery;
import org.mtporacle.mlx.handle.MlxLibrary;
import org.mtporacle.mlx.handle.MlxOps;
import org.mtporacle.mlx.handle.MlxScope;
import org.mtporacle.mlx.handle.MlxStream;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Documents MLX's CUDA cumsum (docs/mlx-upstream/cumsum-zero-steps.md): the exclusive running sum of non-negative f32
 * weights steps by an ulp inside runs of zero weights, where MLX's CPU keeps it constant, and the MLX backend's draw
 * ({@link MlxDraftSampler#lastDrawable}) still never picks a zero-weight token from such a sum. Needs a CUDA build of
 * MLX; elsewhere it is skipped with the reason printed. {@link #main} prints the same measurement.
 */
class MlxCudaScanTest {
    static final long SEED = 0x5CA7_0001L;
    static final int V = 65536;
    /** Fraction of tokens with positive weight: a top-k-like row of mostly zeros. */
    static final double KEPT = 0.01;

    /**
     * Steps inside runs of zeros on each device, and for targets placed inside the GPU's steps, how many the plain
     * count of {@code c[i] ≤ target} sends to a zero-weight token and how many the backend's rule does.
     */
    record Measurement(int gpuSteps, int cpuSteps, int targets, int plainZeroWeight, int backendZeroWeight) {
    }

    @Test
    void cudaCumsumStepsInsideRunsOfZerosAndTheDrawStillSkipsThem() {
        MlxTestSupport.requireMlx();
        MlxLibrary lib = MlxLibrary.load(MlxDiscovery.fromEnvironment());
        if (!lib.hasCuda()) {
            String reason = "not applicable: MLX " + lib.version() + " at " + lib.path() + " has no CUDA device "
                    + "(this documents MLX's CUDA cumsum; set MTP_MLX_LIBRARY to a CUDA build)";
            System.out.println("SKIPPED: " + reason);
            Assumptions.abort(reason);
        }
        Measurement m = measure(lib);
        System.out.println(m);
        assertThat(m.cpuSteps()).as("MLX's CPU cumsum is left to right").isZero();
        assertThat(m.backendZeroWeight()).as("draws of a zero-weight token by the backend's rule").isZero();
        assertThat(m.gpuSteps()).as("MLX %s's CUDA cumsum no longer steps inside runs of zeros (seed %s): "
                + "update docs/mlx-upstream/cumsum-zero-steps.md", lib.version(), SEED).isPositive();
        assertThat(m.plainZeroWeight()).as("targets inside a step that the plain count draws at weight 0")
                .isPositive();
    }

    static Measurement measure(MlxLibrary lib) {
        SplittableRandom rnd = new SplittableRandom(SEED);
        float[] w = new float[V];
        for (int i = 0; i < V; i++) {
            w[i] = rnd.nextDouble() < KEPT ? (float) rnd.nextDouble() : 0f;
        }
        try (MlxStream gpu = MlxStream.open(lib, true); MlxStream cpu = MlxStream.open(lib, false)) {
            return lib.thread().call(() -> {
                try (MlxScope scope = new MlxScope(lib)) {
                    MlxOps g = new MlxOps(gpu, scope);
                    MlxOps c = new MlxOps(cpu, scope);
                    MlxArray wa = g.fromFloats(w, 1, V);
                    float[] cg = g.toFloats(g.cumsum(wa, -1, false));
                    float[] cc = c.toFloats(c.cumsum(wa, -1, false));
                    List<Float> inside = new ArrayList<>();
                    int plain = 0;
                    for (int i = 1; i < V; i++) {
                        if (w[i - 1] == 0f && cg[i] > cg[i - 1] && inside.size() < 256) {
                            inside.add(cg[i - 1]); // c[i−1] ≤ t < c[i]: the plain count stops at i − 1
                            plain++;
                        }
                    }
                    int backend = 0;
                    if (!inside.isEmpty()) {
                        float[] t = new float[inside.size()];
                        for (int k = 0; k < t.length; k++) {
                            t[k] = inside.get(k);
                        }
                        MlxArray drawn = MlxDraftSampler.lastDrawable(g, wa, g.fromFloats(cg, 1, V),
                                g.fromFloats(t, t.length, 1), g.arange(V), g.fromFloats(new float[] {0f}),
                                g.fromInts(new int[] {-1}));
                        for (int token : g.toInts(drawn)) {
                            backend += w[token] > 0f ? 0 : 1;
                        }
                    }
                    return new Measurement(steps(w, cg), steps(w, cc), inside.size(), plain, backend);
                }
            });
        }
    }

    /** How often {@code c[i] ≠ c[i−1]} although {@code w[i−1] = 0}. */
    private static int steps(float[] w, float[] c) {
        int n = 0;
        for (int i = 1; i < w.length; i++) {
            n += w[i - 1] == 0f && c[i] != c[i - 1] ? 1 : 0;
        }
        return n;
    }

    public static void main(String[] args) {
        MlxLibrary lib = MlxLibrary.load(MlxDiscovery.fromEnvironment());
        System.out.println("MLX " + lib.version() + " cuda " + lib.hasCuda() + ": " + measure(lib));
    }
}
