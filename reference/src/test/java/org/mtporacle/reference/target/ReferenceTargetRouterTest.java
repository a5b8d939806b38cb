package org.mtporacle.reference.target;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.mtporacle.api.DType;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.TargetCheckpoint;
import org.mtporacle.api.TargetOutput;
import org.mtporacle.api.TargetRouterChoices;
import org.mtporacle.io.TargetLoader;
import org.mtporacle.reference.fixture.TargetFixtures;
import org.mtporacle.reference.kernels.KernelMode;
import org.mtporacle.reference.kernels.Kernels;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The reference target's router choices (spec §12.5) on {@code tiny-moe-target} (4 layers, every MLP MoE, 8 experts,
 * top-2): one choice per (row, token, layer) in the order computed, at the token's position; each the top-k of the
 * router probabilities the chooser sees, checked by an independent sort (descending, lower index first); a chooser's
 * experts are used and reported; a commit leaves the choices as they were.
 */
class ReferenceTargetRouterTest {
    private static final int LAYERS = 4;
    private static final int TOP_K = 2;

    @TempDir
    static Path dir;
    private static ReferenceTarget target;

    @BeforeAll
    static void open() {
        Path d = TargetFixtures.write("tiny-moe-target", 7, dir.resolve("tiny-moe-target"), DType.F32);
        target = new ReferenceTarget(TargetLoader.load(d), new Kernels(KernelMode.VECTOR, 1));
    }

    @AfterAll
    static void close() {
        target.close();
    }

    @Test
    void aPrefillReportsEveryTokenOfEveryRowInEveryLayerAtItsPosition() {
        try (ReferenceTargetRows rows = target.openReferenceRows(Arrays.asList(null, null))) {
            List<int[]> seen = new ArrayList<>(); // {row, position, layer} the chooser saw, with its top-k checked
            rows.chooseExpertsNextCall((row, position, layer, probs, chosen) -> {
                assertThat(chosen).containsExactly(topK(probs));
                seen.add(new int[] {row, position, layer});
                return chosen;
            });
            rows.prefill(HostTensor.ofIntRows(new int[][] {{5, 17, 99}, {3, 3, 400}}));
            List<TargetRouterChoices.Choice> c = rows.lastRouterChoices();
            assertThat(c).hasSize(2 * 3 * LAYERS).hasSameSizeAs(seen);
            for (int i = 0; i < c.size(); i++) {
                assertThat(new int[] {c.get(i).row(), c.get(i).position(), c.get(i).layer()}).containsExactly(seen.get(i));
                assertThat(c.get(i).experts()).hasSize(TOP_K).doesNotHaveDuplicates();
            }
            // per layer, the rows' tokens in order: row 0's positions 0..2, then row 1's
            assertThat(c.stream().filter(x -> x.layer() == 0).map(x -> x.row() + ":" + x.position()).toList())
                    .containsExactly("0:0", "0:1", "0:2", "1:0", "1:1", "1:2");
            // a verify of width 2 after the prefill: positions 3 and 4
            rows.verify(HostTensor.ofIntRows(new int[][] {{7, 8}, {9, 10}}));
            assertThat(rows.lastRouterChoices()).hasSize(2 * 2 * LAYERS)
                    .allSatisfy(x -> assertThat(x.position()).isBetween(3, 4));
            List<TargetRouterChoices.Choice> before = rows.lastRouterChoices();
            rows.commit(new int[] {0, 1});
            assertThat(rows.lastRouterChoices()).as("a commit computes nothing").isEqualTo(before);
        }
    }

    @Test
    void aChoosersExpertsAreUsedAndReported() {
        int[][] prompt = {{11, 12, 13, 14}};
        TargetOutput own;
        int[] ownChoice;
        int[] ownBefore;
        try (ReferenceTargetRows rows = target.openReferenceRows(Arrays.asList((TargetCheckpoint) null))) {
            own = rows.prefill(HostTensor.ofIntRows(prompt));
            ownChoice = at(rows.lastRouterChoices(), 3, 2);
            ownBefore = at(rows.lastRouterChoices(), 3, 1);
        }
        try (ReferenceTargetRows rows = target.openReferenceRows(Arrays.asList((TargetCheckpoint) null))) {
            int[][] used = new int[1][];
            // layer 3 at position 2 takes the two experts the router ranked last
            rows.chooseExpertsNextCall((row, position, layer, probs, chosen) -> {
                if (layer == 3 && position == 2) {
                    used[0] = bottomTwo(probs);
                    return used[0];
                }
                return chosen;
            });
            TargetOutput other = rows.prefill(HostTensor.ofIntRows(prompt));
            assertThat(at(rows.lastRouterChoices(), 3, 2)).containsExactly(used[0]).doesNotContain(ownChoice);
            assertThat(at(rows.lastRouterChoices(), 3, 1)).as("an earlier token keeps its own choice")
                    .containsExactly(ownBefore);
            assertThat(other.preNorm().toFloatArray()).as("another expert set moves the hidden")
                    .isNotEqualTo(own.preNorm().toFloatArray());
        }
    }

    private static int[] at(List<TargetRouterChoices.Choice> c, int layer, int position) {
        return c.stream().filter(x -> x.layer() == layer && x.position() == position).findFirst().orElseThrow()
                .experts();
    }

    /** The top-k by an independent sort: descending probability, the lower index first on ties (spec §12.3). */
    private static int[] topK(float[] probs) {
        Integer[] idx = new Integer[probs.length];
        for (int i = 0; i < idx.length; i++) {
            idx[i] = i;
        }
        Arrays.sort(idx, (a, b) -> probs[a] != probs[b] ? Float.compare(probs[b], probs[a]) : Integer.compare(a, b));
        return new int[] {idx[0], idx[1]};
    }

    private static int[] bottomTwo(float[] probs) {
        Integer[] idx = new Integer[probs.length];
        for (int i = 0; i < idx.length; i++) {
            idx[i] = i;
        }
        Arrays.sort(idx, (a, b) -> Float.compare(probs[a], probs[b]));
        return new int[] {idx[1], idx[0]};
    }
}
