package org.mtporacle.conformance.compare;

import org.junit.jupiter.api.Test;
import org.mtporacle.api.HostTensor;

import static org.assertj.core.api.Assertions.assertThat;

/** Where two K/V tensors differ most, on a hand-made case: the index arithmetic is checked against the layout. */
class NmseTest {
    @Test
    void theLargestDifferenceIsNamedByHeadPositionAndDim() {
        // keys [1, nKV = 2, positions = 3, D = 4]: element (head h, position p, dim d) at (h * 3 + p) * 4 + d
        float[] expected = new float[24];
        float[] actual = new float[24];
        for (int i = 0; i < 24; i++) {
            expected[i] = i;
            actual[i] = i;
        }
        actual[(1 * 3 + 2) * 4 + 1] += 0.5f; // head 1, position 2, dim 1: the largest
        actual[(0 * 3 + 1) * 4 + 3] -= 0.25f;
        String where = Nmse.largestDifference(HostTensor.ofFloats(actual, 1, 2, 3, 4),
                HostTensor.ofFloats(expected, 1, 2, 3, 4), "kv head", "position", "dim");
        assertThat(where).isEqualTo("kv head 1, position 2, dim 1: 21.5000 vs 21.0000 (2 of 24 elements differ)");
        assertThat(Nmse.largestDifference(HostTensor.ofFloats(expected, 1, 2, 3, 4),
                HostTensor.ofFloats(expected, 1, 2, 3, 4), "kv head", "position", "dim")).isEmpty();
    }

    @Test
    void aCheckpointTensorFailureRecordsWhereItDiffers() {
        Judge j = new Judge(org.mtporacle.api.Tolerance.F32, 512, "reference");
        float[] e = {1, 2, 3, 4};
        float[] a = {1, 2, 3, 40};
        Divergence d = j.tensor(0, "commit full", "keys", HostTensor.ofFloats(e, 1, 1, 1, 4),
                HostTensor.ofFloats(a, 1, 1, 1, 4));
        assertThat(d.details()).containsEntry("largestDifference",
                "kv head 0, position 0, dim 3: 40.0000 vs 4.00000 (1 of 4 elements differ)");
    }
}
