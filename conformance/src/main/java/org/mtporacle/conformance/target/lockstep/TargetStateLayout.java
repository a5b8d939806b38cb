package org.mtporacle.conformance.target.lockstep;

import org.mtporacle.api.TargetConfig;

/**
 * How a backend stores a row's Gated DeltaNet state (spec §13.2, "Row state"): conventions engines differ on, which
 * a backend declares and the kit never guesses. The recurrent state is {@code [Hv, Dk, Dv]} ({@code S[h, i, j]}, key
 * dim {@code i}: the reference, transformers) or its transpose {@code [Hv, Dv, Dk]} (vLLM, SGLang, mlx-lm); the conv
 * window keeps the last {@code K−1} raw inputs (the reference, vLLM, mlx-lm) or {@code K} (transformers, whose oldest
 * column is never read): the kit compares the last {@code K−1}.
 *
 * @param orientation the recurrent state's axes after the value head
 * @param convColumns the conv window's columns, {@code K−1} or {@code K}
 */
public record TargetStateLayout(Orientation orientation, ConvColumns convColumns) {
    /** The recurrent state's axes after the value head. */
    public enum Orientation {
        /** {@code [Hv, Dk, Dv]}. */
        DK_DV,
        /** {@code [Hv, Dv, Dk]}. */
        DV_DK
    }

    /** How many raw inputs the conv window holds. */
    public enum ConvColumns {
        K_MINUS_1, K
    }

    /** The reference's layout (and the checkpoint's, spec §13.3). */
    public static final TargetStateLayout REFERENCE = new TargetStateLayout(Orientation.DK_DV, ConvColumns.K_MINUS_1);

    /** {@code [Hv, Dk, Dv]} with K−1 columns, e.g. {@code "dk_dv/K-1"}. */
    public String describe() {
        return orientation.name().toLowerCase() + "/" + (convColumns == ConvColumns.K ? "K" : "K-1");
    }

    /** Columns of one layer's window in this layout. */
    public int columns(TargetConfig.Gdn g) {
        return convColumns == ConvColumns.K ? g.convKernel() : g.convKernel() - 1;
    }

    /** {@code windows [n, C, columns]} in this layout → {@code [n, C, K−1]}, the last K−1 columns. */
    public float[] convToReference(float[] windows, int layers, TargetConfig.Gdn g) {
        int cols = columns(g);
        int k1 = g.convKernel() - 1;
        int rows = layers * g.convDim();
        float[] out = new float[rows * k1];
        for (int r = 0; r < rows; r++) {
            System.arraycopy(windows, r * cols + cols - k1, out, r * k1, k1);
        }
        return out;
    }

    /** {@code [n, C, K−1]} → this layout (a K-column window gets a zero oldest column, never read). */
    public float[] convFromReference(float[] windows, int layers, TargetConfig.Gdn g) {
        int cols = columns(g);
        int k1 = g.convKernel() - 1;
        int rows = layers * g.convDim();
        float[] out = new float[rows * cols];
        for (int r = 0; r < rows; r++) {
            System.arraycopy(windows, r * k1, out, r * cols + cols - k1, k1);
        }
        return out;
    }

    /** {@code states [n, Hv, ·, ·]} in this layout → {@code [n, Hv, Dk, Dv]}. */
    public float[] stateToReference(float[] states, int layers, TargetConfig.Gdn g) {
        return orientation == Orientation.DK_DV ? states.clone()
                : transpose(states, layers * g.numValueHeads(), g.valueHeadDim(), g.keyHeadDim());
    }

    /** {@code [n, Hv, Dk, Dv]} → this layout. */
    public float[] stateFromReference(float[] states, int layers, TargetConfig.Gdn g) {
        return orientation == Orientation.DK_DV ? states.clone()
                : transpose(states, layers * g.numValueHeads(), g.keyHeadDim(), g.valueHeadDim());
    }

    /** Each of {@code heads} {@code [a, b]} matrices transposed to {@code [b, a]}. */
    private static float[] transpose(float[] m, int heads, int a, int b) {
        float[] out = new float[m.length];
        for (int h = 0; h < heads; h++) {
            int base = h * a * b;
            for (int i = 0; i < a; i++) {
                for (int j = 0; j < b; j++) {
                    out[base + j * a + i] = m[base + i * b + j];
                }
            }
        }
        return out;
    }
}
