package org.mtporacle.reference.kernels;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import java.util.Arrays;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * {@link DeltaRule} (spec §13.2) against hand-worked steps and f64, its two modes against each other, and its thread
 * counts against each other.
 */
class DeltaRuleTest {
    private static final long SEED = 0x6D17_A5EDL;
    /** f32 state and sums over at most 128 key dims, 20 tokens deep: relative errors ~1e-6, NMSE ~1e-12. */
    private static final double NMSE_TOLERANCE = 1e-10;
    /** Padding before every operand, so no offset is 0. */
    private static final int PAD = 3;
    /** (Hk, Hv, Dk, Dv): ratios 1, 2 and 3, Dk ≠ Dv, ragged sizes around one vector. */
    private static final int[][] SHAPES = {{1, 1, 1, 1}, {2, 4, 16, 13}, {2, 6, 17, 33}, {3, 9, 8, 70},
            {1, 2, 128, 128}, {2, 4, 5, 65}};

    @Test
    void twoByTwoStepMatchesTheHandWorkedValues() {
        // α = e^g = 0.5 (f32 ln 0.5 rounds back to 0.5), β = 0.5, S = [[2, 0], [0, 4]], k = (0.6, 0.8), q = (1, 0),
        // v = (1, 1). αS = [[1, 0], [0, 2]]; m = (0.6, 1.6); δ = 0.5·(0.4, −0.6) = (0.2, −0.3);
        // S + kδᵀ = [[1.12, −0.18], [0.16, 1.76]]; out = Sᵀq = (1.12, −0.18).
        for (KernelMode mode : KernelMode.values()) {
            try (Kernels kernels = new Kernels(mode, 1)) {
                float[] state = {2, 0, 0, 4};
                float[] out = new float[2];
                kernels.deltaRuleStep(out, 0, state, 0, new float[] {1, 0}, 0, new float[] {0.6f, 0.8f}, 0,
                        new float[] {1, 1}, 0, new float[] {(float) Math.log(0.5)}, 0, new float[] {0.5f}, 0, 1, 1, 2,
                        2);
                assertThat(out[0]).as("%s", mode).isCloseTo(1.12f, within(1e-6f));
                assertThat(out[1]).as("%s", mode).isCloseTo(-0.18f, within(1e-6f));
                assertThat(state).as("%s", mode).usingComparatorWithPrecision(1e-6f)
                        .containsExactly(1.12f, -0.18f, 0.16f, 1.76f);
            }
        }
    }

    @Test
    void stateDecaysBeforeTheReadAndTheOutputReadsTheUpdatedState() {
        // Dk = Dv = 1, S = 4, α = 0.5, k = q = 1, v = 1, β = 0.5, all exact in f32. Decay first: S = 2, m = 2,
        // δ = −0.5, S = 1.5, out = 1.5. Reading m before the decay gives S = 0.5; decaying after the write 1.25;
        // reading out the old state 4 (or 2 decayed).
        for (KernelMode mode : KernelMode.values()) {
            try (Kernels kernels = new Kernels(mode, 1)) {
                float[] state = {4};
                float[] out = new float[1];
                kernels.deltaRuleStep(out, 0, state, 0, new float[] {1}, 0, new float[] {1}, 0, new float[] {1}, 0,
                        new float[] {(float) Math.log(0.5)}, 0, new float[] {0.5f}, 0, 1, 1, 1, 1);
                assertThat(out[0]).as("%s out", mode).isEqualTo(1.5f);
                assertThat(state[0]).as("%s state", mode).isEqualTo(1.5f);
            }
        }
    }

    @Test
    void valueHeadsUseTheirKeyHeadInGroupsNotTiles() {
        // Dv = 1, β = 0 (no write), α = 1: out_h = S_hᵀq. Key head kh has q = k = e_kh; S_h = (h+1, 10(h+1)), so
        // out_h = h+1 on key head 0 and 10(h+1) on key head 1. Grouped (h / r) and tiled (h % Hk) differ at h = 1.
        for (int hv : new int[] {4, 6}) {
            int r = hv / 2;
            float[] state = new float[hv * 2];
            for (int h = 0; h < hv; h++) {
                state[2 * h] = h + 1;
                state[2 * h + 1] = 10 * (h + 1);
            }
            float[] unit = {1, 0, 0, 1};
            for (KernelMode mode : KernelMode.values()) {
                try (Kernels kernels = new Kernels(mode, 1)) {
                    float[] out = new float[hv];
                    kernels.deltaRuleStep(out, 0, state.clone(), 0, unit, 0, unit, 0, new float[hv], 0, new float[hv],
                            0, new float[hv], 0, 2, hv, 2, 1);
                    for (int h = 0; h < hv; h++) {
                        assertThat(out[h]).as("%s hv=%d head %d", mode, hv, h)
                                .isEqualTo(h / r == 0 ? h + 1f : 10f * (h + 1));
                    }
                }
            }
        }
    }

    @Test
    void bothModesMatchF64OverTwentyTokensOnRaggedShapesAndOddOffsets() {
        System.out.println("DeltaRuleTest seed " + SEED);
        SplittableRandom rnd = new SplittableRandom(SEED);
        int tokens = 20;
        for (int[] s : SHAPES) {
            GdnF64.Inputs in = GdnF64.Inputs.random(rnd, tokens, s[0], s[1], s[2], s[3], 0.5);
            double[] state64 = GdnF64.widen(in.state());
            double[] want = GdnF64.deltaRule(state64, in.q(), in.k(), in.v(), in.g(), in.beta(), tokens, s[0], s[1],
                    s[2], s[3]);
            for (KernelMode mode : KernelMode.values()) {
                try (Kernels kernels = new Kernels(mode, 1)) {
                    Run run = steps(kernels, in, tokens, s);
                    assertThat(TestWeights.nmse(run.out, want)).as("%s shape %s seed %d", mode, Arrays.toString(s),
                            SEED).isLessThanOrEqualTo(NMSE_TOLERANCE);
                    assertThat(TestWeights.nmse(run.state, state64)).as("%s state, shape %s seed %d", mode,
                            Arrays.toString(s), SEED).isLessThanOrEqualTo(NMSE_TOLERANCE);
                }
            }
        }
    }

    @Test
    void vectorEqualsScalarBitForBitOnRaggedValueDims() {
        SplittableRandom rnd = new SplittableRandom(SEED + 1);
        for (int dv : new int[] {1, 5, 15, 16, 17, 31, 63, 64, 65, 127, 129}) {
            int[] s = {2, 4, 9, dv};
            GdnF64.Inputs in = GdnF64.Inputs.random(rnd, 5, s[0], s[1], s[2], s[3], 0.5);
            try (Kernels scalar = new Kernels(KernelMode.SCALAR, 1);
                 Kernels vector = new Kernels(KernelMode.VECTOR, 1)) {
                Run a = steps(scalar, in, 5, s);
                Run b = steps(vector, in, 5, s);
                assertThat(b.out).as("dv=%d seed %d", dv, SEED + 1).isEqualTo(a.out);
                assertThat(b.state).as("state, dv=%d seed %d", dv, SEED + 1).isEqualTo(a.state);
            }
        }
    }

    /** 6 heads of 64×64 is 98k multiply-adds, above the facade's parallel threshold: three threads take two each. */
    @Test
    void threeThreadsGiveTheBitsOfOne() {
        SplittableRandom rnd = new SplittableRandom(SEED + 2);
        int[] s = {2, 6, 64, 64};
        GdnF64.Inputs in = GdnF64.Inputs.random(rnd, 4, s[0], s[1], s[2], s[3], 0.5);
        for (KernelMode mode : KernelMode.values()) {
            try (Kernels one = new Kernels(mode, 1); Kernels three = new Kernels(mode, 3)) {
                Run a = steps(one, in, 4, s);
                Run b = steps(three, in, 4, s);
                assertThat(b.out).as("%s seed %d", mode, SEED + 2).isEqualTo(a.out);
                assertThat(b.state).as("%s state, seed %d", mode, SEED + 2).isEqualTo(a.state);
            }
        }
    }

    @Test
    void steppingOutOfPlaceGivesTheBitsOfSteppingInPlaceAndLeavesTheSourceUnread() {
        SplittableRandom rnd = new SplittableRandom(SEED + 3);
        for (int[] s : SHAPES) {
            int hk = s[0], hv = s[1], dk = s[2], dv = s[3];
            int size = hv * dk * dv;
            GdnF64.Inputs in = GdnF64.Inputs.random(rnd, 3, hk, hv, dk, dv, 0.5);
            for (KernelMode mode : KernelMode.values()) {
                try (Kernels kernels = new Kernels(mode, 1)) {
                    Run inPlace = steps(kernels, in, 3, s);
                    // the same three tokens, each from the previous state (at offset PAD) into a new array at 2·PAD
                    float[] state = padded(in.state(), 0, size);
                    float[] out = new float[PAD + 3 * hv * dv];
                    for (int t = 0; t < 3; t++) {
                        float[] before = state.clone();
                        float[] next = new float[2 * PAD + size];
                        kernels.deltaRuleStep(out, PAD + t * hv * dv, next, 2 * PAD, state, PAD,
                                padded(in.q(), t * hk * dk, hk * dk), PAD, padded(in.k(), t * hk * dk, hk * dk), PAD,
                                padded(in.v(), t * hv * dv, hv * dv), PAD, padded(in.g(), t * hv, hv), PAD,
                                padded(in.beta(), t * hv, hv), PAD, hk, hv, dk, dv);
                        assertThat(state).as("%s shape %s: the source is not written", mode, Arrays.toString(s))
                                .isEqualTo(before);
                        state = padded(next, 2 * PAD, size);
                    }
                    assertThat(Arrays.copyOfRange(out, PAD, out.length)).as("%s shape %s seed %d", mode,
                            Arrays.toString(s), SEED + 3).isEqualTo(inPlace.out);
                    assertThat(Arrays.copyOfRange(state, PAD, state.length)).as("%s state, shape %s seed %d", mode,
                            Arrays.toString(s), SEED + 3).isEqualTo(inPlace.state);
                }
            }
        }
    }

    @Test
    void aNextStatePartlyOverlappingTheStateIsRefused() {
        try (Kernels kernels = new Kernels(KernelMode.VECTOR, 1)) {
            float[] z = new float[64];
            assertThatThrownBy(() -> kernels.deltaRuleStep(z, 0, z, 1, z, 0, z, 0, z, 0, z, 0, z, 0, z, 0, 1, 1, 2, 2))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("next at 1 overlaps the state at 0 (4 floats each)");
        }
    }

    @Test
    void valueHeadsThatAreNotAMultipleOfTheKeyHeadsAreRefused() {
        try (Kernels kernels = new Kernels(KernelMode.VECTOR, 1)) {
            float[] z = new float[64];
            assertThatThrownBy(() -> kernels.deltaRuleStep(z, 0, z, 0, z, 0, z, 0, z, 0, z, 0, z, 0, 2, 3, 2, 2))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("hv = 3 value heads is not a positive multiple of hk = 2");
        }
    }

    record Run(float[] out, float[] state) {
    }

    /** {@code tokens} calls of {@link Kernels#deltaRuleStep}, every operand at offset {@link #PAD} or more. */
    static Run steps(Kernels kernels, GdnF64.Inputs in, int tokens, int[] s) {
        int hk = s[0], hv = s[1], dk = s[2], dv = s[3];
        float[] state = padded(in.state(), 0, in.state().length);
        float[] out = new float[PAD + tokens * hv * dv];
        for (int t = 0; t < tokens; t++) {
            float[] q = padded(in.q(), t * hk * dk, hk * dk);
            float[] k = padded(in.k(), t * hk * dk, hk * dk);
            float[] v = padded(in.v(), t * hv * dv, hv * dv);
            float[] g = padded(in.g(), t * hv, hv);
            float[] beta = padded(in.beta(), t * hv, hv);
            kernels.deltaRuleStep(out, PAD + t * hv * dv, state, PAD, q, PAD, k, PAD, v, PAD, g, PAD, beta, PAD, hk,
                    hv, dk, dv);
        }
        return new Run(Arrays.copyOfRange(out, PAD, out.length), Arrays.copyOfRange(state, PAD, state.length));
    }

    /** {@code src[from, from + n)} after {@link #PAD} filler values. */
    static float[] padded(float[] src, int from, int n) {
        float[] a = new float[PAD + n];
        Arrays.fill(a, 0, PAD, Float.NaN);
        System.arraycopy(src, from, a, PAD, n);
        return a;
    }
}
