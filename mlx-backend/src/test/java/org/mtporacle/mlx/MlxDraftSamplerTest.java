package org.mtporacle.mlx;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.mtporacle.api.DType;
import org.mtporacle.api.DraftSampling;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.RowSampler;
import org.mtporacle.conformance.FixtureRecipe;
import org.mtporacle.conformance.chain.ChainData;
import org.mtporacle.mlx.handle.MlxArray;
import org.mtporacle.mlx.handle.MlxOps;
import org.mtporacle.reference.sampling.DraftSampler;
import org.mtporacle.reference.sampling.MlxRandom;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The device draw ({@link MlxDraftSampler}) against the reference's {@link DraftSampler} on the same log-probs
 * (conformance/SPEC.md, "Random stream for seeded draft sampling"), and the round's single host read.
 */
class MlxDraftSamplerTest {
    private static final double[] TEMPERATURES = {0.0, 0.3, 0.7, 1.0, 1.5};
    private static final int[] TOP_KS = {0, 1, 2, 5, 20};
    private static final double[] TOP_PS = {1.0, 0.95, 0.5, 0.05, 1e-9};


    @Test
    void theDeviceUniformIsTheSpecStream() {
        long seed = 0x5EED_0001L;
        System.out.println("uniform keys from seed " + seed);
        SplittableRandom rnd = new SplittableRandom(seed);
        MlxTestSupport.onMlx(ops -> {
            for (int i = 0; i < 64; i++) {
                MlxRandom.Key key = MlxRandom.key(DraftSampler.stepKey(rnd.nextLong(), rnd.nextInt(1000)));
                float[] device = ops.toFloats(ops.uniform(ops.fromUints(new int[] {key.k0(), key.k1()}, 2), 1));
                assertThat(Float.floatToRawIntBits(device[0])).as("uniform under %s", key)
                        .isEqualTo(Float.floatToRawIntBits(MlxRandom.uniform(key, 1)[0]));
            }
        });
    }

    /**
     * Random rows, some with values on a coarse grid so that top-k and top-p meet ties, drawn with every sampler
     * shape; on the CPU the device must pick the reference's token every time (f32 and bf16-widened log-probs).
     */
    @ParameterizedTest(name = "vocab={0} dtype={1}")
    @CsvSource({"7, F32", "64, F32", "1000, F32", "64, BF16", "1000, BF16"})
    void seededDrawsEqualTheReferenceOnTheSameLogProbs(int vocab, DType dtype) {
        long seed = 0x5EED_0002L + vocab;
        System.out.println("sampler rows from seed " + seed);
        SplittableRandom rnd = new SplittableRandom(seed);
        int b = 6;
        int depth = 4;
        int rounds = 40;
        int[] counts = new int[2]; // draws, mismatches
        MlxTestSupport.onMlx(ops -> {
            for (int round = 0; round < rounds; round++) {
                List<RowSampler> rows = new ArrayList<>();
                long[] steps = new long[b];
                for (int r = 0; r < b; r++) {
                    rows.add(new RowSampler(TEMPERATURES[rnd.nextInt(TEMPERATURES.length)],
                            TOP_KS[rnd.nextInt(TOP_KS.length)], TOP_PS[rnd.nextInt(TOP_PS.length)], rnd.nextLong()));
                    steps[r] = rnd.nextInt(1 << 20);
                }
                DraftSampling sampling = new DraftSampling(rows);
                MlxDraftSampler sampler = MlxDraftSampler.forRound(ops, sampling, steps, depth, vocab);
                for (int t = 0; t < depth; t++) {
                    MlxArray lp = ops.fromHost(HostTensor.ofFloats(dtype, logProbs(rnd, b, vocab), b, vocab));
                    float[] host = ops.toFloats(lp); // the exact f32 values the device sees
                    int[] drawn = ops.toInts(sampler.draw(ops, lp, t));
                    for (int r = 0; r < b; r++) {
                        int expected = DraftSampler.sample(host, r * vocab, vocab, sampling.row(r), steps[r] + t);
                        counts[0]++;
                        if (drawn[r] != expected) {
                            counts[1]++;
                            System.out.printf("  mismatch round %d t %d row %d %s: device %d, reference %d%n",
                                    round, t, r, sampling.row(r), drawn[r], expected);
                        }
                    }
                }
            }
        });
        System.out.printf("vocab=%d dtype=%s: %d of %d device draws differ from the reference%n", vocab, dtype,
                counts[1], counts[0]);
        assertThat(counts[1]).as("draws that differ from the reference").isZero();
    }

    /**
     * The draw's last step on a running sum shaped like MLX's CUDA scan output (docs/mlx-upstream/cumsum-zero-steps.md):
     * two ulps up inside the run of zero weights between tokens 1 and 5. A target inside the step still draws token 1,
     * never the zero-weight token 3 that the plain count of {@code c[i] ≤ target} gives; at or above the step it draws
     * token 5.
     */
    @Test
    void theDrawNeverLandsOnAZeroWeightTokenWhenTheRunningSumStepsInsideARunOfZeros() {
        float b = 6.805235f;
        float a = Math.nextUp(Math.nextUp(b));
        float[] w = {0f, b, 0f, 0f, 0f, 0.5f, 0f};
        float[] c = {0f, 0f, b, b, a, a, a + 0.5f}; // exclusive; left to right, c[4] and c[5] would equal b
        float[] targets = {0f, 3f, b, Math.nextUp(b), a, Math.nextDown(a + 0.5f)};
        int[] expected = {1, 1, 1, 1, 5, 5};
        MlxTestSupport.onMlx(ops -> {
            MlxArray wa = ops.fromFloats(w, 1, w.length);
            MlxArray ca = ops.fromFloats(c, 1, c.length);
            MlxArray tokens = ops.arange(w.length);
            MlxArray zero = ops.fromFloats(new float[] {0f});
            MlxArray none = ops.fromInts(new int[] {-1});
            for (int i = 0; i < targets.length; i++) {
                MlxArray target = ops.fromFloats(new float[] {targets[i]}, 1, 1);
                int[] drawn = ops.toInts(MlxDraftSampler.lastDrawable(ops, wa, ca, target, tokens, zero, none));
                assertThat(drawn).as("target %s", targets[i]).containsExactly(expected[i]);
            }
        });
    }

    @Test
    void aDraftRoundReadsTheHostOnceWhateverTheSamplers() {
        MlxBackend backend = MlxTestSupport.requireMlx();
        MtpModel model = FixtureRecipe.named("tiny").load(MlxTestSupport.fixtureCache());
        int vocab = model.config().vocabSize();
        try (MlxDraftModel mlx = backend.load(model, Map.of("device", "cpu", "precision", "f32"));
             MlxDraftRows rows = (MlxDraftRows) mlx.openRows(Collections.nCopies(3, null))) {
            ChainData.PrefillArgs p = ChainData.prefill(5, 3, 4, vocab, model.config().hiddenSize());
            rows.prefill(p.tokens(), p.context());
            DraftSampling mixed = DraftSampling.of(RowSampler.of(0.8, 5, 0.9, 11), RowSampler.GREEDY,
                    RowSampler.of(1.2, 0, 1.0, 12));
            int depth = 4;
            int[][] drafts = rows.draft(new int[] {1, 2, 3}, depth, new long[] {3, 4, 5}, mixed);
            System.out.println("seeded round of depth " + depth + ": " + rows.draftHostReads() + " host read(s)");
            assertThat(rows.draftHostReads()).isEqualTo(1);
            for (int[] row : drafts) {
                assertThat(row).hasSize(depth);
                assertThat(java.util.Arrays.stream(row).allMatch(tok -> tok >= 0 && tok < vocab)).isTrue();
            }
            rows.commit(new int[] {0, 0, 0}, HostTensor.ofFloats(new float[3 * (depth + 1)
                    * model.config().hiddenSize()], 3, depth + 1, model.config().hiddenSize()));
            rows.draft(new int[] {1, 2, 3}, 0, new long[3], mixed);
            assertThat(rows.draftHostReads()).as("depth 0 draws nothing").isZero();
        }
    }

    /** {@code b} rows of log-softmax values; every other row is snapped to a grid of 0.25 so that values tie. */
    private static float[] logProbs(SplittableRandom rnd, int b, int vocab) {
        float[] out = new float[b * vocab];
        double spread = 0.5 + 4.0 * rnd.nextDouble();
        for (int r = 0; r < b; r++) {
            double[] z = new double[vocab];
            double max = Double.NEGATIVE_INFINITY;
            for (int i = 0; i < vocab; i++) {
                z[i] = rnd.nextGaussian() * spread;
                if (r % 2 == 1) {
                    z[i] = Math.round(z[i] * 4) / 4.0;
                }
                max = Math.max(max, z[i]);
            }
            double sum = 0;
            for (double v : z) {
                sum += Math.exp(v - max);
            }
            double lse = max + Math.log(sum);
            for (int i = 0; i < vocab; i++) {
                out[r * vocab + i] = (float) (z[i] - lse);
            }
        }
        return out;
    }
}
