package org.mtporacle.mlx;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.TargetConfig;
import org.mtporacle.conformance.target.lockstep.TargetFixture;
import org.mtporacle.mlx.handle.MlxArray;
import org.mtporacle.mlx.handle.MlxCudaKernel;
import org.mtporacle.mlx.handle.MlxDiscovery;
import org.mtporacle.mlx.handle.MlxLibrary;
import org.mtporacle.mlx.handle.MlxOps;
import org.mtporacle.mlx.handle.MlxScope;
import org.mtporacle.mlx.handle.MlxStream;
import org.mtporacle.reference.fixture.TargetFixtures;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The fused GDN recurrence ({@link MlxGdnKernel}): where it cannot run (MLX's CPU, CI) the target keeps the ops and
 * refuses {@code gdn=kernel} with the reason; on a CUDA GPU it matches a scalar f64 recurrence written here from spec
 * §13.2 step 4 (skipped elsewhere, with the reason printed).
 */
class MlxGdnKernelTest {

    @Test
    void onTheCpuTheKernelIsUnavailableAndTheTargetKeepsTheOps() {
        MlxTestSupport.onMlx(ops -> {
            String why = MlxCudaKernel.unavailable(ops.library(), ops.stream());
            assertThat(why).isEqualTo("the stream is MLX's CPU");
            TargetConfig c = TargetFixtures.preset("tiny-target").config();
            assertThat(MlxTarget.gdnKernel(ops, c, null)).as("auto on the CPU: the ops").isNull();
            assertThat(MlxTarget.gdnKernel(ops, c, false)).isNull();
            assertThatThrownBy(() -> MlxTarget.gdnKernel(ops, c, true)).isInstanceOf(MtpException.class)
                    .hasMessage("mlx: gdn=kernel, but the stream is MLX's CPU (use gdn=ops or gdn=auto)");
        });
    }

    @Test
    void anMlxWithoutCudaRefusesToMakeTheKernelWithItsOwnMessage() {
        MlxTestSupport.onMlx(ops -> {
            MlxLibrary lib = ops.library();
            Assumptions.assumeFalse(lib.hasCuda(), "this MLX has CUDA: it would make the kernel");
            // the bindings reach mlx-c (vector of strings, kernel_new) and MLX's CPU build answers through them
            assertThatThrownBy(() -> new MlxGdnKernel(lib, TargetFixtures.preset("tiny-target").config().gdn()))
                    .isInstanceOf(MtpException.class)
                    .hasMessageContaining("mlx_fast_cuda_kernel_new (mtp_gdn_recurrence) failed")
                    .hasMessageContaining("No CUDA back-end");
        });
    }

    @Test
    void theGdnOptionIsCheckedAndGdnOpsLoadsEverywhere() {
        MlxBackend backend = MlxTestSupport.requireMlx();
        TargetFixture fx = TargetFixture.load("tiny-target", MlxTestSupport.fixtureCache());
        assertThatThrownBy(() -> backend.loadTarget(fx.target(), Map.of("gdn", "fused")))
                .isInstanceOf(MtpException.class)
                .hasMessage("mlx: gdn = 'fused', expected auto, ops or kernel");
        assertThatThrownBy(() -> backend.loadTarget(fx.target(), Map.of("gdn", "kernel", "device", "cpu")))
                .isInstanceOf(MtpException.class)
                .hasMessage("mlx: gdn=kernel, but the stream is MLX's CPU (use gdn=ops or gdn=auto)");
        try (MlxTarget t = backend.loadTarget(fx.target(), Map.of("gdn", "ops", "device", "cpu"))) {
            assertThat(t.numerics()).doesNotContain("CUDA kernel");
        }
    }

    /** GPU only: random inputs at tiny-target's GDN shape (Hv = 2·Hk) and a few widths, against f64 by hand. */
    @Test
    void onACudaGpuTheKernelMatchesTheRecurrenceInF64() {
        MlxTestSupport.requireMlx();
        MlxLibrary lib = MlxLibrary.load(MlxDiscovery.fromEnvironment());
        String why;
        boolean gpu = lib.hasGpu();
        try (MlxStream probe = MlxStream.open(lib, gpu)) {
            why = MlxCudaKernel.unavailable(lib, probe);
        }
        if (why != null) {
            System.out.println("SKIPPED (GPU only): the fused GDN kernel cannot run here: " + why);
        }
        Assumptions.assumeTrue(why == null, () -> "the fused GDN kernel cannot run here: " + why);
        TargetConfig.Gdn g = TargetFixtures.preset("tiny-target").config().gdn();
        try (MlxStream stream = MlxStream.open(lib, true)) {
            lib.thread().run(() -> {
                try (MlxScope scope = new MlxScope(lib); MlxGdnKernel kernel = new MlxGdnKernel(lib, g)) {
                    MlxOps ops = new MlxOps(stream, scope);
                    for (int[] bs : new int[][] {{1, 1}, {3, 4}, {2, 7}}) {
                        for (boolean every : new boolean[] {true, false}) {
                            check(ops, kernel, g, bs[0], bs[1], every, 31L * bs[0] + bs[1]);
                        }
                    }
                }
            });
        }
    }

    private static void check(MlxOps ops, MlxGdnKernel kernel, TargetConfig.Gdn g, int b, int s, boolean every,
                              long seed) {
        int hv = g.numValueHeads();
        int hk = g.numKeyHeads();
        int dk = g.keyHeadDim();
        int dv = g.valueHeadDim();
        int ch = g.convDim();
        SplittableRandom r = new SplittableRandom(seed);
        float[] state = random(r, b * hv * dk * dv, 1);
        float[] q = random(r, b * s * hk * dk, 0.3);
        float[] k = random(r, b * s * hk * dk, 0.3);
        float[] conv = random(r, b * s * ch, 1);
        float[] alpha = new float[b * s * hv];
        float[] beta = new float[b * s * hv];
        for (int i = 0; i < alpha.length; i++) {
            alpha[i] = (float) r.nextDouble(0.5, 1);
            beta[i] = (float) r.nextDouble(0, 1);
        }
        MlxGdnKernel.Out got = kernel.apply(ops, ops.fromFloats(state, b, hv, dk, dv), ops.fromFloats(q, b, s, hk, dk),
                ops.fromFloats(k, b, s, hk, dk), ops.fromFloats(conv, b, s, ch), ops.fromFloats(alpha, b, s, hv),
                ops.fromFloats(beta, b, s, hv), every);
        float[] out = ops.toFloats(got.out());
        float[] states = ops.toFloats(got.states());
        assertThat(states).hasSize((every ? s : 1) * b * hv * dk * dv);
        // spec §13.2 step 4 in f64: S ← αS; m = kᵀS; S ← S + k(β(v − m))ᵀ; o = qᵀS
        List<double[]> wantStates = new ArrayList<>();
        double[] wantOut = new double[b * s * hv * dv];
        double[][] st = new double[b * hv][];
        for (int bh = 0; bh < b * hv; bh++) {
            st[bh] = new double[dk * dv];
            for (int i = 0; i < dk * dv; i++) {
                st[bh][i] = state[bh * dk * dv + i];
            }
        }
        for (int t = 0; t < s; t++) {
            double[] snapshot = new double[b * hv * dk * dv];
            for (int bb = 0; bb < b; bb++) {
                for (int h = 0; h < hv; h++) {
                    double[] m = st[bb * hv + h];
                    int row = bb * s + t;
                    int kh = h / (hv / hk);
                    double a = alpha[row * hv + h];
                    double be = beta[row * hv + h];
                    for (int i = 0; i < dk * dv; i++) {
                        m[i] *= a;
                    }
                    for (int j = 0; j < dv; j++) {
                        double read = 0;
                        for (int i = 0; i < dk; i++) {
                            read += k[(row * hk + kh) * dk + i] * m[i * dv + j];
                        }
                        double delta = be * (conv[row * ch + 2 * hk * dk + h * dv + j] - read);
                        double o = 0;
                        for (int i = 0; i < dk; i++) {
                            m[i * dv + j] += k[(row * hk + kh) * dk + i] * delta;
                            o += q[(row * hk + kh) * dk + i] * m[i * dv + j];
                        }
                        wantOut[(row * hv + h) * dv + j] = o;
                    }
                    System.arraycopy(m, 0, snapshot, (bb * hv + h) * dk * dv, dk * dv);
                }
            }
            wantStates.add(snapshot);
        }
        assertThat(nmse(out, wantOut)).as("read-outs B=%d S=%d", b, s).isLessThan(1e-10);
        int plane = b * hv * dk * dv;
        for (int t = every ? 0 : s - 1; t < s; t++) {
            float[] got1 = java.util.Arrays.copyOfRange(states, every ? t * plane : 0, (every ? t * plane : 0) + plane);
            assertThat(nmse(got1, wantStates.get(t))).as("state after token %d, B=%d S=%d", t, b, s)
                    .isLessThan(1e-10);
        }
    }

    private static float[] random(SplittableRandom r, int n, double scale) {
        float[] a = new float[n];
        for (int i = 0; i < n; i++) {
            a[i] = (float) (scale * r.nextDouble(-1, 1));
        }
        return a;
    }

    private static double nmse(float[] got, double[] want) {
        double num = 0;
        double den = 0;
        for (int i = 0; i < want.length; i++) {
            double d = got[i] - want[i];
            num += d * d;
            den += want[i] * want[i];
        }
        return num / den;
    }
}
