package org.mtporacle.reference.kernels;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Arrays;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * {@link ChunkedDeltaRule} (spec §13.2) against a hand-worked chunk, {@code T} steps of {@link DeltaRule} and f64;
 * its two modes and its thread counts against each other.
 */
class ChunkedDeltaRuleTest {
    private static final long SEED = 0xC4C_2026L;
    /** Token counts around the chunk of 64: one token, one short of a chunk, one, one over, two and a part, three. */
    private static final int[] TOKENS = {1, 63, 64, 65, 130, 200};
    /** (Hk, Hv, Dk, Dv): ratios 2 and 3, Dk ≠ Dv, ragged; the last is the 0.8B's head shape. */
    private static final int[][] SHAPES = {{2, 4, 16, 13}, {2, 6, 17, 33}, {1, 1, 128, 128}};
    /**
     * Per shape, the largest decay {@code −g} drawn: moderate; strong ({@code e^c} underflows to 0 within a chunk);
     * slow (the state keeps about all it is given over 200 tokens).
     */
    private static final double[] DECAYS = {0.3, 8.0, 0.003};
    /**
     * Chunked vs recurrent, both f32: the two orders round differently (the chunk's triangular solve and its sums over
     * up to 64 tokens) but neither amplifies: measured (printed) NMSE ≤ 1.1e-12, max abs ≤ 4.5e-7 on the outputs
     * and ≤ 7.9e-7 on the state; the bounds leave about 10×.
     */
    private static final double CHUNK_VS_STEP_NMSE = 1e-11;
    private static final double CHUNK_VS_STEP_MAX_ABS = 5e-6;
    /** f32 against f64 over 200 tokens: relative errors ~1e-6, NMSE ~1e-12. */
    private static final double NMSE_TOLERANCE = 1e-10;

    @Test
    void twoTokenChunkMatchesTheHandWorkedValues() {
        // Dk = Dv = 1, S = 4, q = k = 1. Token 0: g = ln 0.5, v = 1, β = 0.5; token 1: g = 0, v = 3.5, β = 0.5.
        // c = (ln .5, ln .5), Γ = 1 on the lower triangle; A[1,0] = −(0.5·1·1)·1 = −0.5, T = [[1, 0], [−0.5, 1]];
        // U = T·(0.5, 1.75) = (0.5, 1.5); W = T·(0.25, 0.25) = (0.25, 0.125); V' = U − W·4 = (−0.5, 1);
        // out_0 = 0.5·4 + 1·(−0.5) = 1.5; out_1 = 0.5·4 + (−0.5 + 1) = 2.5; S = 4·0.5 + (−0.5 + 1) = 2.5.
        // Two steps give the same: S = 2, m = 2, δ = −0.5, S = 1.5 = out_0; m = 1.5, δ = 1, S = 2.5 = out_1.
        for (KernelMode mode : KernelMode.values()) {
            try (Kernels kernels = new Kernels(mode, 1)) {
                float[] state = {4};
                float[] out = new float[2];
                float[] one = {1, 1};
                kernels.deltaRuleChunked(out, 0, state, 0, one, 0, one, 0, new float[] {1, 3.5f}, 0,
                        new float[] {(float) Math.log(0.5), 0}, 0, new float[] {0.5f, 0.5f}, 0, 2, 1, 1, 1, 1);
                assertThat(out).as("%s", mode).containsExactly(1.5f, 2.5f);
                assertThat(state).as("%s", mode).containsExactly(2.5f);
            }
        }
    }

    @Test
    void chunkedEqualsRecurrentStepsAndBothMatchF64AroundTheChunkLength() {
        System.out.println("ChunkedDeltaRuleTest seed " + SEED);
        SplittableRandom rnd = new SplittableRandom(SEED);
        for (int c = 0; c < SHAPES.length; c++) {
            int[] s = SHAPES[c];
            for (int tokens : TOKENS) {
                GdnF64.Inputs in = GdnF64.Inputs.random(rnd, tokens, s[0], s[1], s[2], s[3], DECAYS[c]);
                double[] state64 = GdnF64.widen(in.state());
                double[] want = GdnF64.deltaRule(state64, in.q(), in.k(), in.v(), in.g(), in.beta(), tokens, s[0],
                        s[1], s[2], s[3]);
                for (KernelMode mode : KernelMode.values()) {
                    try (Kernels kernels = new Kernels(mode, 1)) {
                        DeltaRuleTest.Run chunked = chunked(kernels, in, tokens, s);
                        DeltaRuleTest.Run steps = DeltaRuleTest.steps(kernels, in, tokens, s);
                        String what = String.format("%s shape %s decay %s T=%d seed %d", mode, Arrays.toString(s),
                                DECAYS[c], tokens, SEED);
                        double nmse = TestWeights.nmse(chunked.out(), GdnF64.widen(steps.out()));
                        double maxAbs = maxAbs(chunked.out(), steps.out());
                        System.out.printf("chunked vs recurrent, %s: out max abs %.2e, NMSE %.2e; state max abs "
                                + "%.2e%n", what, maxAbs, nmse, maxAbs(chunked.state(), steps.state()));
                        assertThat(nmse).as(what).isLessThanOrEqualTo(CHUNK_VS_STEP_NMSE);
                        assertThat(maxAbs).as(what).isLessThanOrEqualTo(CHUNK_VS_STEP_MAX_ABS);
                        assertThat(TestWeights.nmse(chunked.state(), GdnF64.widen(steps.state()))).as("state, " + what)
                                .isLessThanOrEqualTo(CHUNK_VS_STEP_NMSE);
                        assertThat(TestWeights.nmse(chunked.out(), want)).as("vs f64, " + what)
                                .isLessThanOrEqualTo(NMSE_TOLERANCE);
                        assertThat(TestWeights.nmse(chunked.state(), state64)).as("state vs f64, " + what)
                                .isLessThanOrEqualTo(NMSE_TOLERANCE);
                    }
                }
            }
        }
    }

    @Test
    void vectorEqualsScalarBitForBitOnRaggedHeadSizes() {
        SplittableRandom rnd = new SplittableRandom(SEED + 1);
        for (int[] s : new int[][] {{2, 4, 1, 1}, {2, 6, 15, 17}, {1, 2, 33, 65}, {3, 3, 64, 16}}) {
            GdnF64.Inputs in = GdnF64.Inputs.random(rnd, 70, s[0], s[1], s[2], s[3], 0.3);
            try (Kernels scalar = new Kernels(KernelMode.SCALAR, 1);
                 Kernels vector = new Kernels(KernelMode.VECTOR, 1)) {
                DeltaRuleTest.Run a = chunked(scalar, in, 70, s);
                DeltaRuleTest.Run b = chunked(vector, in, 70, s);
                assertThat(b.out()).as("shape %s seed %d", Arrays.toString(s), SEED + 1).isEqualTo(a.out());
                assertThat(b.state()).as("state, shape %s seed %d", Arrays.toString(s), SEED + 1).isEqualTo(a.state());
            }
        }
    }

    @Test
    void threeThreadsGiveTheBitsOfOne() {
        SplittableRandom rnd = new SplittableRandom(SEED + 2);
        int[] s = {2, 6, 16, 16};
        GdnF64.Inputs in = GdnF64.Inputs.random(rnd, 70, s[0], s[1], s[2], s[3], 0.3);
        for (KernelMode mode : KernelMode.values()) {
            try (Kernels one = new Kernels(mode, 1); Kernels three = new Kernels(mode, 3)) {
                DeltaRuleTest.Run a = chunked(one, in, 70, s);
                DeltaRuleTest.Run b = chunked(three, in, 70, s);
                assertThat(b.out()).as("%s seed %d", mode, SEED + 2).isEqualTo(a.out());
                assertThat(b.state()).as("%s state, seed %d", mode, SEED + 2).isEqualTo(a.state());
            }
        }
    }

    /** One {@link Kernels#deltaRuleChunked} call over all tokens, every operand at an odd offset. */
    private static DeltaRuleTest.Run chunked(Kernels kernels, GdnF64.Inputs in, int tokens, int[] s) {
        int hv = s[1], dv = s[3];
        float[] state = DeltaRuleTest.padded(in.state(), 0, in.state().length);
        float[] out = new float[5 + tokens * hv * dv];
        kernels.deltaRuleChunked(out, 5, state, 3, pad(in.q()), 3, pad(in.k()), 3, pad(in.v()), 3, pad(in.g()), 3,
                pad(in.beta()), 3, tokens, s[0], hv, s[2], dv);
        return new DeltaRuleTest.Run(Arrays.copyOfRange(out, 5, out.length), Arrays.copyOfRange(state, 3,
                state.length));
    }

    private static float[] pad(float[] a) {
        return DeltaRuleTest.padded(a, 0, a.length);
    }

    private static double maxAbs(float[] a, float[] b) {
        double m = 0;
        for (int i = 0; i < a.length; i++) {
            m = Math.max(m, Math.abs((double) a[i] - b[i]));
        }
        return m;
    }
}
