package org.mtporacle.io.fuzz;

import org.mtporacle.api.DType;
import org.mtporacle.api.DraftRows;
import org.mtporacle.api.DraftSampling;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MtpConfig;
import org.mtporacle.api.MtpModel;
import org.mtporacle.reference.ReferenceBackend;
import org.mtporacle.reference.ReferenceDraftModel;
import org.mtporacle.reference.TestModels;
import org.mtporacle.reference.fixture.FixtureModels;
import org.mtporacle.reference.kernels.KernelMode;

import java.util.List;

/**
 * The models the fuzz targets use: a micro preset small enough that a whole model directory is a fuzz input of a few
 * kilobytes (H 32 so that 4-bit group-32 quantization fits), and an in-memory model of the same shape whose fixed
 * identity lets fuzzed checkpoints reach the restore checks.
 */
public final class FuzzModels {
    /** H 32, 4/2 heads, D 8, I 32, V 32, tied. */
    public static final FixtureModels.Preset MICRO = new FixtureModels.Preset("micro", 32, 4, 2, 8, 32, 32, true);
    /** The in-memory model's config: the micro shape with R = 2 (partial rotary 0.25). */
    public static final MtpConfig MICRO_CONFIG = new MtpConfig(32, 4, 2, 8, 2, 1e7, 1e-6, 32, 32);

    private static MtpModel inMemory;

    private FuzzModels() {
    }

    /** The in-memory micro model (identity {@code test-f022-F32}). */
    public static synchronized MtpModel inMemory() {
        if (inMemory == null) {
            inMemory = TestModels.random(MICRO_CONFIG, 0xf022, DType.F32);
        }
        return inMemory;
    }

    /**
     * Runs one short lifecycle on {@code model}: a group of one cold row plus {@code restored} (may be null), a
     * prefill of two positions, a depth-2 round committed at full acceptance, and a capture of every row. A model or
     * checkpoint that loaded must be usable; only {@code MtpException} may come out of this.
     */
    public static void exercise(MtpModel model, org.mtporacle.api.RowCheckpoint restored) {
        try (ReferenceDraftModel d = ReferenceBackend.load(model, KernelMode.SCALAR, 1);
             DraftRows g = d.openRows(restored == null ? java.util.Collections.singletonList(null)
                     : java.util.Arrays.asList(restored, null))) {
            int b = g.rowCount();
            int h = model.config().hiddenSize();
            int v = model.config().vocabSize();
            int[] ids = new int[b * 2];
            for (int i = 0; i < ids.length; i++) {
                ids[i] = i % v;
            }
            g.prefill(HostTensor.ofInts(ids, b, 2), HostTensor.ofFloats(ramp(b * 2 * h), b, 2, h));
            // row 0 greedy, the others seeded top-k/top-p sampling: both samplers see whatever the weights produce
            org.mtporacle.api.RowSampler[] samplers = new org.mtporacle.api.RowSampler[b];
            for (int r = 0; r < b; r++) {
                samplers[r] = r == 0 ? org.mtporacle.api.RowSampler.GREEDY
                        : org.mtporacle.api.RowSampler.of(0.8, 8, 0.9, 17 + r);
            }
            g.draft(new int[b], 2, new long[b], DraftSampling.of(samplers));
            int[] accepted = new int[b];
            java.util.Arrays.fill(accepted, 2);
            g.commit(accepted, HostTensor.ofFloats(ramp(b * 3 * h), b, 3, h));
            for (int r = 0; r < b; r++) {
                g.capture(r);
            }
        }
    }

    private static float[] ramp(int n) {
        float[] out = new float[n];
        for (int i = 0; i < n; i++) {
            out[i] = (float) Math.sin(i * 0.37);
        }
        return out;
    }

    static List<DType> dtypes() {
        return List.of(DType.BF16, DType.F16, DType.F32);
    }
}
