package org.mtporacle.reference;

import org.junit.jupiter.api.Test;
import org.mtporacle.api.DType;
import org.mtporacle.api.DraftSampling;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.RowCheckpoint;
import org.mtporacle.api.RowSampler;
import org.mtporacle.reference.kernels.KernelMode;
import org.mtporacle.reference.kernels.Kernels;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.SplittableRandom;
import java.util.function.Consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

/**
 * Seeded random call sequences against {@link ShadowRows}, the lifecycle's definition: every row's checkpoint after
 * every call equals a from-scratch single-row replay of exactly the pairs the spec says it keeps (spec §10.1.1,
 * .3, .5, .6, .7, .8, .11), and every bad call fails with the right kind leaving every row unchanged (§11.1).
 */
class RowLifecyclePropertiesTest {
    private static final int CHAINS = 40;
    private static final int ACTIONS = 30;
    private static final long BASE_SEED = 0x5EED_2026L;

    @Test
    void randomCallSequencesMatchTheSingleRowDefinition() {
        MtpModel model = TestModels.random(TestModels.tinyConfig(), 7, DType.BF16);
        try (Kernels k = new Kernels(KernelMode.VECTOR, 2)) {
            ReferenceDraftModel dm = new ReferenceDraftModel(model, k);
            for (int chain = 0; chain < CHAINS; chain++) {
                long seed = BASE_SEED + chain;
                runChain(dm, model, k, seed);
            }
        }
    }

    private void runChain(ReferenceDraftModel dm, MtpModel model, Kernels k, long seed) {
        SplittableRandom rnd = new SplittableRandom(seed);
        int h = model.config().hiddenSize();
        int vocab = model.config().vocabSize();
        ShadowRows shadow = new ShadowRows(model, k);
        List<RowCheckpoint> pool = new ArrayList<>();
        ReferenceDraftRows rows = dm.openReferenceRows(List.of());
        String ctx = "seed " + seed;
        for (int step = 0; step < ACTIONS; step++) {
            String at = ctx + ", action " + step;
            int action = rnd.nextInt(10);
            int b = rows.rowCount();
            if (action <= 1 || b == 0) {
                // append cold and restored rows
                int n = 1 + rnd.nextInt(3);
                List<RowCheckpoint> add = new ArrayList<>();
                for (int i = 0; i < n; i++) {
                    RowCheckpoint cp = pool.isEmpty() || rnd.nextBoolean() ? null : pool.get(rnd.nextInt(pool.size()));
                    add.add(cp);
                    if (cp == null) {
                        shadow.appendCold();
                    } else {
                        shadow.appendRestored(cp);
                    }
                }
                rows.append(add);
            } else if (action == 2) {
                int[] keep = randomKeep(rnd, b);
                rows.filterRows(keep);
                shadow.filter(keep);
            } else if (action <= 4 || !allPrefilled(shadow)) {
                int len = 1 + rnd.nextInt(6);
                HostTensor tokens = TestModels.tokens(rnd, b, len, vocab);
                HostTensor context = TestModels.hiddens(rnd, b, len, h);
                rows.prefill(tokens, context);
                int[][] ids = new int[b][];
                for (int r = 0; r < b; r++) {
                    ids[r] = Arrays.copyOfRange(tokens.toIntArray(), r * len, (r + 1) * len);
                }
                shadow.prefill(ids, context.toFloatArray(), len);
            } else if (action <= 8) {
                draftAndCommit(rows, shadow, rnd, at);
            } else {
                int r = rnd.nextInt(b);
                if (shadow.rows.get(r).hidden != null) {
                    pool.add(rows.capture(r));
                }
            }
            badCallLeavesRowsUnchanged(rows, rnd, model, at);
            assertRowsMatch(rows, shadow, at);
        }
        rows.close();
    }

    private void draftAndCommit(ReferenceDraftRows rows, ShadowRows shadow, SplittableRandom rnd, String at) {
        int b = rows.rowCount();
        int h = shadow.model.config().hiddenSize();
        int depth = rnd.nextInt(9);
        int[] pending = new int[b];
        long[] steps = new long[b];
        List<RowSampler> samplers = new ArrayList<>();
        for (int r = 0; r < b; r++) {
            pending[r] = rnd.nextInt(shadow.model.config().vocabSize());
            steps[r] = rnd.nextInt(100);
            samplers.add(rnd.nextBoolean() ? RowSampler.GREEDY
                    : RowSampler.of(0.5 + rnd.nextDouble(), rnd.nextInt(3) * 20, rnd.nextBoolean() ? 1.0 : 0.9,
                    rnd.nextLong()));
        }
        DraftSampling sampling = new DraftSampling(samplers);
        int[][] drafts = rows.draft(pending, depth, steps, sampling);
        List<List<float[]>> outs = new ArrayList<>();
        for (int r = 0; r < b; r++) {
            List<float[]> o = new ArrayList<>();
            int[] expected = shadow.draft(r, pending[r], depth, samplers.get(r), steps[r], o);
            outs.add(o);
            assertThat(drafts[r]).as("%s: row %d drafts", at, r).containsExactly(expected);
        }
        // a bad commit during the round changes nothing
        MtpException bad = catchThrowableOfType(MtpException.class,
                () -> rows.commit(new int[b], TestModels.hiddens(rnd, b, depth + 2, h)));
        assertThat(bad.kind()).isEqualTo(MtpException.Kind.INVALID_ARGUMENT);
        int[] accepted = new int[b];
        for (int r = 0; r < b; r++) {
            accepted[r] = rnd.nextInt(4) == 0 ? depth : rnd.nextInt(depth + 1);
        }
        HostTensor context = TestModels.hiddens(rnd, b, depth + 1, h);
        rows.commit(accepted, context);
        for (int r = 0; r < b; r++) {
            shadow.commit(r, pending[r], drafts[r], outs.get(r), accepted[r], context.toFloatArray(), depth + 1);
        }
    }

    private void badCallLeavesRowsUnchanged(ReferenceDraftRows rows, SplittableRandom rnd, MtpModel model,
                                            String at) {
        int b = rows.rowCount();
        if (b == 0) {
            return;
        }
        int h = model.config().hiddenSize();
        int vocab = model.config().vocabSize();
        List<Consumer<ReferenceDraftRows>> bad = List.of(
                g -> g.filterRows(new int[] {0, 0}),
                g -> g.filterRows(new int[] {b}),
                g -> g.prefill(TestModels.tokens(rnd, b + 1, 2, vocab), TestModels.hiddens(rnd, b + 1, 2, h)),
                g -> g.prefill(HostTensor.ofInts(new int[b * 2], b, 2), TestModels.hiddens(rnd, b, 3, h)),
                g -> g.prefill(HostTensor.ofInts(filled(b * 2, vocab), b, 2), TestModels.hiddens(rnd, b, 2, h)),
                g -> g.draft(new int[b], -1, new long[b], DraftSampling.greedy(b)),
                g -> g.draft(new int[b + 1], 1, new long[b + 1], DraftSampling.greedy(b + 1)),
                g -> g.commit(new int[b], TestModels.hiddens(rnd, b, 1, h)),
                g -> g.capture(b),
                g -> g.append(Collections.singletonList(corrupt(rows, model))));
        int pick = rnd.nextInt(bad.size());
        List<RowCheckpoint> before = captureAll(rows);
        int[] lengths = rows.drafterLengths();
        MtpException e = catchThrowableOfType(MtpException.class, () -> bad.get(pick).accept(rows));
        assertThat(e).as("%s: bad call %d must throw MtpException", at, pick).isNotNull();
        assertThat(e.getMessage()).as("%s: message names the call", at)
                .matches("^(filterRows|prefill|draft|commit|capture|append): .*");
        assertThat(rows.drafterLengths()).as("%s: lengths after bad call %d", at, pick).containsExactly(lengths);
        List<RowCheckpoint> after = captureAll(rows);
        for (int r = 0; r < before.size(); r++) {
            assertThat(sameCheckpoint(before.get(r), after.get(r))).as("%s: row %d unchanged by bad call %d (%s)",
                    at, r, pick, e.getMessage()).isTrue();
        }
    }

    private static RowCheckpoint corrupt(ReferenceDraftRows rows, MtpModel model) {
        HostTensor hidden = HostTensor.ofFloats(new float[model.config().hiddenSize()], 1, 1,
                model.config().hiddenSize());
        return new RowCheckpoint(RowCheckpoint.SCHEMA, 3, 1, model.identity(), null, null, hidden);
    }

    private static int[] filled(int n, int value) {
        int[] a = new int[n];
        Arrays.fill(a, value);
        return a;
    }

    private static void assertRowsMatch(ReferenceDraftRows rows, ShadowRows shadow, String at) {
        assertThat(rows.rowCount()).as("%s: row count", at).isEqualTo(shadow.rows.size());
        for (int r = 0; r < rows.rowCount(); r++) {
            if (shadow.rows.get(r).hidden == null) {
                continue;
            }
            RowCheckpoint actual = rows.capture(r);
            RowCheckpoint expected = shadow.expectedCheckpoint(r);
            assertThat(actual.processedTokens()).as("%s: row %d P", at, r).isEqualTo(expected.processedTokens());
            assertThat(actual.contentEquals(expected)).as("%s: row %d checkpoint equals its single-row replay", at, r)
                    .isTrue();
        }
    }

    private static List<RowCheckpoint> captureAll(ReferenceDraftRows rows) {
        List<RowCheckpoint> out = new ArrayList<>();
        for (int r = 0; r < rows.rowCount(); r++) {
            out.add(rows.roundOpen() ? null : captureOrNull(rows, r));
        }
        return out;
    }

    private static RowCheckpoint captureOrNull(ReferenceDraftRows rows, int r) {
        try {
            return rows.capture(r);
        } catch (MtpException e) {
            return null;
        }
    }

    private static boolean sameCheckpoint(RowCheckpoint a, RowCheckpoint b) {
        return a == null ? b == null : a.contentEquals(b);
    }

    private static boolean allPrefilled(ShadowRows shadow) {
        return shadow.rows.stream().allMatch(s -> s.hidden != null);
    }

    private static int[] randomKeep(SplittableRandom rnd, int b) {
        List<Integer> idx = new ArrayList<>();
        for (int i = 0; i < b; i++) {
            idx.add(i);
        }
        Collections.shuffle(idx, new java.util.Random(rnd.nextLong()));
        int n = rnd.nextInt(b + 1);
        return idx.subList(0, n).stream().mapToInt(Integer::intValue).toArray();
    }
}
