package org.mtporacle.mlx;

import org.junit.jupiter.api.Test;
import org.mtporacle.api.DraftRows;
import org.mtporacle.api.DraftSampling;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.RowCheckpoint;
import org.mtporacle.api.RowSampler;
import org.mtporacle.conformance.FixtureRecipe;
import org.mtporacle.conformance.chain.ChainData;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Native memory stays flat over many draft/commit rounds: groups are reopened from the same checkpoints every
 * {@value #ROUNDS_PER_GROUP} rounds, so live device memory must return to the same figure after every cycle.
 */
class MlxMemorySoakTest {
    static final int ROUNDS = Integer.getInteger("mtp.mlx.soakRounds", 500);
    static final int ROUNDS_PER_GROUP = 25;
    /** MLX keeps no per-call allocations alive once their arrays are freed; allow one small buffer of noise. */
    static final long SLACK_BYTES = 16 * 1024;

    @Test
    void activeMemoryIsFlatOverManyRounds() {
        MlxBackend backend = MlxTestSupport.requireMlx();
        MtpModel model = FixtureRecipe.named("tiny").load(MlxTestSupport.fixtureCache());
        int h = model.config().hiddenSize();
        int v = model.config().vocabSize();
        SplittableRandom rnd = new SplittableRandom(11);
        try (MlxDraftModel mlx = backend.load(model, Map.of("device", "cpu"))) {
            List<RowCheckpoint> start = new ArrayList<>();
            try (DraftRows g = mlx.openRows(Collections.nCopies(3, null))) {
                ChainData.PrefillArgs p = ChainData.prefill(1, 3, 9, v, h);
                g.prefill(p.tokens(), p.context());
                for (int r = 0; r < 3; r++) {
                    start.add(g.capture(r));
                }
            }
            long baseline = -1;
            long worst = 0;
            int rounds = 0;
            long t0 = System.nanoTime();
            while (rounds < ROUNDS) {
                try (DraftRows g = mlx.openRows(start)) {
                    int[] pending = {1, 2, 3};
                    for (int i = 0; i < ROUNDS_PER_GROUP && rounds < ROUNDS; i++, rounds++) {
                        int depth = 1 + rnd.nextInt(4);
                        DraftSampling sampling = rounds % 5 == 0
                                ? DraftSampling.of(RowSampler.GREEDY, RowSampler.of(0.8, 20, 0.9, 7), RowSampler.GREEDY)
                                : DraftSampling.greedy(3);
                        int[][] d = g.draft(pending, depth, new long[] {rounds, rounds, rounds}, sampling);
                        int[] acc = new int[3];
                        for (int r = 0; r < 3; r++) {
                            acc[r] = rnd.nextInt(depth + 1);
                            pending[r] = acc[r] < depth ? d[r][acc[r]] : (d[r][depth - 1] + 1) % v;
                        }
                        HostTensor ctx = ChainData.hiddens(rnd, 3, depth + 1, h);
                        g.commit(acc, ctx);
                        if (i % 10 == 9) {
                            g.capture(rnd.nextInt(3));
                            g.filterRows(new int[] {2, 0, 1});
                        }
                    }
                }
                long now = mlx.library().activeMemory();
                if (baseline < 0) {
                    baseline = now;
                }
                worst = Math.max(worst, now - baseline);
            }
            long end = mlx.library().activeMemory();
            System.out.printf("mlx soak: %d rounds in %.1f s, active memory after first cycle %d B, at end %d B, "
                    + "worst growth %d B%n", rounds, (System.nanoTime() - t0) / 1e9, baseline, end, worst);
            assertThat(end - baseline).as("active memory growth over %d rounds", rounds).isLessThanOrEqualTo(SLACK_BYTES);
            assertThat(worst).isLessThanOrEqualTo(SLACK_BYTES);
        }
    }
}
