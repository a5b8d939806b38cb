package org.mtporacle.reference;

import org.junit.jupiter.api.Test;
import org.mtporacle.api.DType;
import org.mtporacle.api.DraftSampling;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.RowCheckpoint;
import org.mtporacle.api.RowSampler;
import org.mtporacle.reference.kernels.KernelMode;

import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Soak: many rounds of random actions on one reference group (draft and commit with random acceptance, occasional
 * filter, append, capture and prefill), with every row's KV kept bounded by retiring long rows and re-appending
 * short ones from checkpoints, must run in flat memory: the heap after GC, sampled at regular intervals, may not
 * climb above the first sample by more than {@link #HEAP_SLACK_BYTES}.
 *
 * <p>The normal run does {@value #DEFAULT_ROUNDS} rounds; {@code -Dsoak.rounds=10000} runs the long soak (the
 * heap is then sampled every 1,000 rounds).
 */
class SoakTest {
    static final int DEFAULT_ROUNDS = 1500;
    /** A row longer than this is retired and replaced by a short checkpoint. */
    static final int MAX_KV = 160;
    /**
     * How far the heap after GC may rise above the first sample: GC and JIT noise plus rows of different lengths. A
     * retired row's KV is about 64 KB here, so leaking one per hundred rounds exceeds it over the long soak.
     */
    static final long HEAP_SLACK_BYTES = 4L << 20;
    private static final long SEED = 20261130;

    @Test
    void randomRoundsRunInFlatMemory() {
        int rounds = Integer.getInteger("soak.rounds", DEFAULT_ROUNDS);
        int every = rounds >= 10_000 ? 1000 : Math.max(1, rounds / 6);
        MtpModel model = TestModels.random(TestModels.tinyConfig(), 7, DType.BF16);
        int h = model.config().hiddenSize();
        int v = model.config().vocabSize();
        SplittableRandom rnd = new SplittableRandom(SEED);
        System.out.println("[soak] seed " + SEED + ", " + rounds + " rounds, heap sampled every " + every);
        List<Long> heap = new ArrayList<>();
        long[] counts = new long[6]; // drafts, filters, appends, captures, prefills, retirements
        int maxKvSeen = 0;
        try (ReferenceDraftModel d = ReferenceBackend.load(model, KernelMode.VECTOR, 1);
             ReferenceDraftRows g = d.openReferenceRows(Arrays.asList(null, null, null, null))) {
            g.prefill(TestModels.tokens(rnd, 4, 6, v), TestModels.hiddens(rnd, 4, 6, h));
            List<RowCheckpoint> shortOnes = new ArrayList<>();
            for (int r = 0; r < 4; r++) {
                shortOnes.add(g.capture(r));
            }
            List<RowCheckpoint> pool = new ArrayList<>(shortOnes);
            long step = 0;
            for (int round = 1; round <= rounds; round++) {
                int b = g.rowCount();
                // a draft/commit round with random depth and acceptance
                int depth = rnd.nextInt(5);
                int[] pending = new int[b];
                long[] steps = new long[b];
                for (int r = 0; r < b; r++) {
                    pending[r] = rnd.nextInt(v);
                    steps[r] = step;
                }
                DraftSampling sampling = rnd.nextInt(4) == 0
                        ? DraftSampling.of(Collections.nCopies(b, RowSampler.of(0.8, 20, 0.9, round))
                        .toArray(RowSampler[]::new)) : DraftSampling.greedy(b);
                g.draft(pending, depth, steps, sampling);
                int[] accepted = new int[b];
                for (int r = 0; r < b; r++) {
                    accepted[r] = rnd.nextInt(depth + 1);
                }
                g.commit(accepted, TestModels.hiddens(rnd, b, depth + 1, h));
                counts[0]++;
                step += depth + 1;
                // occasional membership changes, captures and prefills
                int dice = rnd.nextInt(100);
                if (dice < 4 && b > 1) {
                    int[] keep = permutation(rnd, b, 1 + rnd.nextInt(b));
                    g.filterRows(keep);
                    counts[1]++;
                } else if (dice < 8 && b < 6) {
                    boolean cold = rnd.nextBoolean();
                    g.append(Collections.singletonList(cold ? null : pool.get(rnd.nextInt(pool.size()))));
                    if (cold) {
                        g.prefill(TestModels.tokens(rnd, g.rowCount(), 2, v),
                                TestModels.hiddens(rnd, g.rowCount(), 2, h));
                        counts[4]++;
                    }
                    counts[2]++;
                } else if (dice < 14) {
                    RowCheckpoint cp = g.capture(rnd.nextInt(g.rowCount()));
                    if (cp.processedTokens() <= MAX_KV / 2) {
                        pool.set(rnd.nextInt(pool.size()), cp);
                    }
                    counts[3]++;
                } else if (dice < 17) {
                    int l = 1 + rnd.nextInt(4);
                    g.prefill(TestModels.tokens(rnd, g.rowCount(), l, v), TestModels.hiddens(rnd, g.rowCount(), l, h));
                    counts[4]++;
                }
                // keep KV bounded: retire long rows, re-append short checkpoints in their place
                int[] lengths = g.drafterLengths();
                List<Integer> keep = new ArrayList<>();
                for (int r = 0; r < lengths.length; r++) {
                    maxKvSeen = Math.max(maxKvSeen, lengths[r]);
                    if (lengths[r] <= MAX_KV) {
                        keep.add(r);
                    }
                }
                if (keep.size() < lengths.length) {
                    int retired = lengths.length - keep.size();
                    g.filterRows(keep.stream().mapToInt(Integer::intValue).toArray());
                    List<RowCheckpoint> back = new ArrayList<>();
                    for (int i = 0; i < retired; i++) {
                        back.add(shortOnes.get(rnd.nextInt(shortOnes.size())));
                    }
                    g.append(back);
                    counts[5] += retired;
                }
                if (round % every == 0) {
                    heap.add(heapAfterGc());
                    System.out.printf("[soak] round %6d: heap after GC %.2f MB, rows %d, KV lengths %s%n", round,
                            heap.getLast() / 1e6, g.rowCount(), Arrays.toString(g.drafterLengths()));
                }
            }
        }
        System.out.printf("[soak] %d rounds, %d filters, %d appends, %d captures, %d prefills, %d rows retired; "
                + "longest KV %d%n", counts[0], counts[1], counts[2], counts[3], counts[4], counts[5], maxKvSeen);
        assertThat(maxKvSeen).as("KV stays bounded").isLessThanOrEqualTo(MAX_KV + 16);
        assertThat(counts[1] + counts[2] + counts[3] + counts[5]).as("membership actions happened").isPositive();
        long first = heap.getFirst();
        for (int i = 1; i < heap.size(); i++) {
            assertThat(heap.get(i) - first).as("heap after GC at sample %d (%s) vs the first", i, heap)
                    .isLessThanOrEqualTo(HEAP_SLACK_BYTES);
        }
    }

    private static int[] permutation(SplittableRandom rnd, int n, int k) {
        int[] p = new int[n];
        for (int i = 0; i < n; i++) {
            p[i] = i;
        }
        for (int i = n - 1; i > 0; i--) {
            int j = rnd.nextInt(i + 1);
            int t = p[i];
            p[i] = p[j];
            p[j] = t;
        }
        return Arrays.copyOf(p, k);
    }

    private static long heapAfterGc() {
        var mem = ManagementFactory.getMemoryMXBean();
        for (int i = 0; i < 3; i++) {
            System.gc();
        }
        return mem.getHeapMemoryUsage().getUsed();
    }
}
