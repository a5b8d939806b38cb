package org.mtporacle.mlx;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.mtporacle.api.DraftRows;
import org.mtporacle.api.DraftSampling;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.RowCheckpoint;
import org.mtporacle.conformance.FixtureRecipe;
import org.mtporacle.conformance.chain.ChainData;

/**
 * When a long row leaves, the survivors' KV cache shrinks to the capacity their own lengths need (rounded up to the
 * 256-position step): the memory is returned, and the kept rows draft exactly as in a group opened with them alone.
 */
class MlxFilterCapacityTest {
    @Test
    void filteringOutALongRowReturnsItsCapacity() {
        MlxBackend backend = MlxTestSupport.requireMlx();
        MtpModel model = FixtureRecipe.named("tiny").load(MlxTestSupport.fixtureCache());
        int h = model.config().hiddenSize();
        int v = model.config().vocabSize();
        try (MlxDraftModel mlx = backend.load(model, Map.of("device", "cpu"))) {
            RowCheckpoint longRow = prefilled(mlx, 1, 600, v, h); // 599 positions: capacity 768
            RowCheckpoint shortRow = prefilled(mlx, 2, 9, v, h);  // 8 positions: capacity 256
            long before = mlx.library().activeMemory();
            int[][] alone;
            long aloneBytes;
            try (DraftRows g = mlx.openRows(List.of(shortRow))) {
                aloneBytes = mlx.library().activeMemory() - before;
                assertThat(((MlxDraftRows) g).capacity()).isEqualTo(256);
                alone = g.draft(new int[] {5}, 3, new long[] {7}, DraftSampling.greedy(1));
            }
            try (DraftRows g = mlx.openRows(List.of(longRow, shortRow))) {
                assertThat(((MlxDraftRows) g).capacity()).isEqualTo(768);
                g.filterRows(new int[] {1});
                assertThat(((MlxDraftRows) g).capacity()).as("capacity after the long row left").isEqualTo(256);
                assertThat(mlx.library().activeMemory() - before).as("bytes held by the filtered group")
                        .isEqualTo(aloneBytes);
                assertThat(g.draft(new int[] {5}, 3, new long[] {7}, DraftSampling.greedy(1))).isDeepEqualTo(alone);
                g.commit(new int[] {0}, ChainData.hiddens(new SplittableRandom(3), 1, 4, h));
                g.filterRows(new int[] {0}); // nothing left to return: the capacity stays
                assertThat(((MlxDraftRows) g).capacity()).isEqualTo(256);
            }
            try (DraftRows g = mlx.openRows(Collections.nCopies(2, null))) {
                g.filterRows(new int[] {1}); // no cache yet: nothing to shrink, nothing allocated
                assertThat(((MlxDraftRows) g).capacity()).isZero();
            }
        }
    }

    private static RowCheckpoint prefilled(MlxDraftModel mlx, long seed, int length, int v, int h) {
        try (DraftRows g = mlx.openRows(Collections.nCopies(1, null))) {
            ChainData.PrefillArgs p = ChainData.prefill(seed, 1, length, v, h);
            g.prefill(p.tokens(), p.context());
            return g.capture(0);
        }
    }
}
