package org.mtporacle.mlx;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.mtporacle.api.DType;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.TargetOutput;
import org.mtporacle.api.TargetRows;
import org.mtporacle.conformance.target.lockstep.TargetFixture;
import org.mtporacle.mlx.handle.MlxArray;
import org.mtporacle.mlx.handle.MlxOps;

import java.lang.foreign.MemorySegment;
import java.util.Collections;
import java.util.Map;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A forward evaluated in pieces ({@code mlx_async_eval} after every few layers, {@link MlxTarget#pipelineLayers})
 * computes the same graph as one evaluation at the end: the same bits of logits, taps and the row states after a
 * commit; and the host read split over threads and into parts returns the array's values in order.
 */
class MlxTargetPipelineTest {

    private static HostTensor tokens(int b, int n, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        int[][] rows = new int[b][n];
        for (int[] row : rows) {
            for (int i = 0; i < n; i++) {
                row[i] = r.nextInt(512); // tiny-target's vocabulary
            }
        }
        return HostTensor.ofIntRows(rows);
    }

    /** Logits and taps of a prefill and a verify, then the logits of a second verify after a commit of one token. */
    private static float[][] run(MlxTarget t, int pipeline) {
        t.pipelineLayers(pipeline);
        try (TargetRows g = t.openRows(Collections.nCopies(3, null))) {
            TargetOutput p = g.prefill(tokens(3, 5, 1));
            TargetOutput v = g.verify(tokens(3, 4, 2));
            g.commit(new int[] {0, 3, 2});
            TargetOutput w = g.verify(tokens(3, 4, 3));
            return new float[][] {p.logits().toFloatArray(), v.logits().toFloatArray(),
                    v.preNorm().toFloatArray(), v.postNorm().toFloatArray(), w.logits().toFloatArray()};
        }
    }

    @ParameterizedTest(name = "precision={0}")
    @ValueSource(strings = {"f32", "native"})
    void evaluatingInPiecesGivesTheSameBits(String precision) {
        MlxBackend backend = MlxTestSupport.requireMlx();
        TargetFixture fx = TargetFixture.load("tiny-target", MlxTestSupport.fixtureCache());
        try (MlxTarget t = backend.loadTarget(fx.target(), Map.of("precision", precision,
                "device", MlxTargetVerification.device()))) {
            float[][] whole = run(t, 0);
            for (int pipeline : new int[] {1}) {
                float[][] pieces = run(t, pipeline);
                for (int i = 0; i < whole.length; i++) {
                    assertThat(pieces[i]).as("output %d, pipeline %d", i, pipeline).containsExactly(whole[i]);
                }
            }
        }
    }

    @Test
    void aLargeReadSplitOverThreadsAndPartsKeepsEveryValueInPlace() {
        int n = 300_007; // 1.2 MB: over the parallel-read threshold, not a multiple of any thread count
        float[] values = new float[n];
        for (int i = 0; i < n; i++) {
            values[i] = i * 0.5f - 7;
        }
        int[] lengths = {1, 150_000, 0, n - 150_001};
        MlxTestSupport.onMlx(ops -> {
            MlxArray a = ops.fromFloats(values, n);
            for (int threads : new int[] {1, 3, 8}) {
                float[][] parts = ops.toFloatParts(a, threads, lengths);
                int at = 0;
                for (int k = 0; k < lengths.length; k++) {
                    assertThat(parts[k]).hasSize(lengths[k]);
                    for (int i = 0; i < lengths[k]; i++, at++) {
                        if (parts[k][i] != at * 0.5f - 7) {
                            throw new AssertionError("threads " + threads + ": part " + k + "[" + i + "] = "
                                    + parts[k][i] + ", expected " + (at * 0.5f - 7));
                        }
                    }
                }
            }
            assertThat(ops.toFloats(a)).containsExactly(values);
        });
    }

    @Test
    void aReadIntoTensorBuffersGivesLittleEndianF32TensorsOfTheRightValues() {
        int n = 262_147; // just over 1 MB in three parts of unequal size
        float[] values = new float[n];
        for (int i = 0; i < n; i++) {
            values[i] = (i % 1000) * -0.25f + i * 1e-3f;
        }
        long[] bytes = {4L * 100_000, 4L * 62_147, 4L * 100_000};
        MlxTestSupport.onMlx(ops -> {
            MlxArray a = ops.fromFloats(values, n);
            for (int threads : new int[] {1, 4}) {
                MemorySegment[] out = MlxOps.await(MlxOps.hostBuffers(bytes));
                ops.readFloats(a, threads, out);
                int at = 0;
                for (MemorySegment part : out) {
                    HostTensor t = HostTensor.view(DType.F32, new int[] {(int) (part.byteSize() / 4)}, part);
                    for (int i = 0; i < t.elementCount(); i++, at++) {
                        if (t.getFloat(i) != values[at]) {
                            throw new AssertionError("threads " + threads + ": value " + at + " = " + t.getFloat(i)
                                    + ", expected " + values[at]);
                        }
                    }
                }
                assertThat(at).isEqualTo(n);
            }
        });
    }

    @Test
    void aReadRefusesDestinationsThatDoNotAddUpToTheArray() {
        MlxTestSupport.onMlx(ops -> {
            MlxArray a = ops.fromFloats(new float[] {1, 2, 3}, 3);
            assertThatThrownBy(() -> ops.readFloats(a, 1, MemorySegment.ofArray(new byte[8])))
                    .isInstanceOf(MtpException.class).hasMessageContaining("destinations of 8 bytes for an array of 3");
            assertThatThrownBy(() -> ops.readFloats(a, 1, MemorySegment.ofArray(new byte[10]),
                    MemorySegment.ofArray(new byte[2]))).isInstanceOf(MtpException.class)
                    .hasMessageContaining("not whole f32 values");
        });
    }
}
