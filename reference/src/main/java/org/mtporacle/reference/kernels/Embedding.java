package org.mtporacle.reference.kernels;

import org.mtporacle.api.LinearWeight;

/**
 * {@code out[0, H) = table[token, :]} dequantized to f32 (spec §1.7). Decoding is exact, so both modes write the same
 * bits; the vector mode widens dense rows with the Vector API, affine rows use {@link WeightRows}.
 */
final class Embedding {
    private Embedding() {
    }

    static void scalar(float[] out, int outOff, LinearWeight table, int token) {
        WeightRows.decodeRange(out, outOff, table, token, 0, table.inFeatures());
    }

    static void vector(float[] out, int outOff, LinearWeight table, int token) {
        WeightFormat f = WeightFormat.of(table);
        if (f instanceof AffineFormat) {
            scalar(out, outOff, table, token);
            return;
        }
        int n = f.vectorEnd();
        f.decode(out, outOff, token);
        WeightRows.decodeRange(out, outOff + n, table, token, n, f.in());
    }
}
