package org.mtporacle.reference.kernels;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.SplittableRandom;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import org.mtporacle.api.HostTensor;
import org.mtporacle.api.LinearWeight;
import org.mtporacle.io.AffineQuantizer;

class WeightRowsQuantizerAgreementTest {
    private static final long SEED = 77L;

    @ParameterizedTest(name = "{0} bits")
    @ValueSource(ints = {2, 3, 4, 5, 6, 8})
    void decodeRowReadsBackTheCodesTheQuantizerWrote(int bits) {
        System.out.println("seed " + SEED);
        SplittableRandom rnd = new SplittableRandom(SEED + bits);
        float[] v = new float[3 * 96];
        for (int i = 0; i < v.length; i++) {
            v[i] = (float) rnd.nextGaussian();
        }
        LinearWeight.Affine a = AffineQuantizer.quantize(HostTensor.ofFloats(v, 3, 96), bits, 32);
        float[] row = new float[96];
        for (int r = 0; r < 3; r++) {
            WeightRows.decodeRow(row, a, r);
            for (int i = 0; i < 96; i++) {
                // the code re-derived by MLX's rule from the stored f32 scale and bias (spec §2)
                float scale = a.scales().getFloat(r * 3 + i / 32);
                float bias = a.biases().getFloat(r * 3 + i / 32);
                float c = (float) Math.rint((v[r * 96 + i] - bias) / scale);
                int q = (int) Math.min(Math.max(c, 0f), (1 << bits) - 1);
                assertThat(row[i]).as("row %d col %d", r, i).isEqualTo(scale * q + bias);
            }
        }
    }
}
