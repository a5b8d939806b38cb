package org.mtporacle.reference;

import org.junit.jupiter.api.Test;
import org.mtporacle.api.DType;
import org.mtporacle.api.DraftSampling;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.RowCheckpoint;
import org.mtporacle.reference.kernels.KernelMode;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.SplittableRandom;
import java.util.function.Consumer;
import java.util.function.Supplier;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

/**
 * Fault injection into the reference's mutating calls (spec §9.2, §11.1): each internal step of append, filterRows,
 * prefill, draft and commit (the shared skeleton's steps and the reference's own) is made to throw in turn (k = 0, 1,
 * 2, … until the call completes without reaching step k), once with a RuntimeException, once with an Error, and once
 * throwing at every step from k on. After each failure the group must be unchanged (row count, KV lengths, round
 * state, a capture of every row, and a retry that ends exactly where a group that never failed ends): the skeleton
 * publishes only after every step succeeded, so there is no rollback that could fail and nothing poisons.
 */
class FaultInjectionTest {
    private static final MtpModel MODEL = TestModels.random(TestModels.tinyConfig(), 41, DType.BF16);
    private static final ReferenceDraftModel DRAFTER = ReferenceBackend.load(MODEL, KernelMode.VECTOR, 1);

    /** How an injected fault behaves. */
    private enum Mode {
        /** A RuntimeException at step k only. */
        RUNTIME_ONCE,
        /** An Error (OutOfMemoryError) at step k only: failure atomicity must not depend on the throwable's type. */
        ERROR_ONCE,
        /** A RuntimeException at step k and at every later step. */
        RUNTIME_FROM_K
    }

    /** Counts steps and throws per the mode. */
    private static final class Injector implements ReferenceDraftRows.FaultPoints {
        final int k;
        final Mode mode;
        int reached;
        final List<String> steps = new ArrayList<>();

        Injector(int k, Mode mode) {
            this.k = k;
            this.mode = mode;
        }

        @Override
        public void reached(String call, String step) {
            int i = reached++;
            steps.add(call + "/" + step);
            if (i == k || (mode == Mode.RUNTIME_FROM_K && i > k)) {
                if (mode == Mode.ERROR_ONCE) {
                    throw new OutOfMemoryError("injected at step " + i + " (" + call + "/" + step + ")");
                }
                throw new IllegalStateException("injected at step " + i + " (" + call + "/" + step + ")");
            }
        }
    }

    /** What can be observed of a group without changing it. */
    private record Snapshot(int rows, int[] lengths, boolean roundOpen, List<RowCheckpoint> captures) {
        static Snapshot of(ReferenceDraftRows g) {
            List<RowCheckpoint> caps = new ArrayList<>();
            if (!g.roundOpen()) {
                for (int r = 0; r < g.rowCount(); r++) {
                    try {
                        caps.add(g.capture(r));
                    } catch (MtpException e) {
                        caps.add(null); // a cold row: nothing to capture
                    }
                }
            }
            return new Snapshot(g.rowCount(), g.drafterLengths(), g.roundOpen(), caps);
        }

        void assertEquals(Snapshot o, String what) {
            assertThat(o.rows).as("%s: row count", what).isEqualTo(rows);
            assertThat(o.lengths).as("%s: KV lengths", what).containsExactly(lengths);
            assertThat(o.roundOpen).as("%s: round open", what).isEqualTo(roundOpen);
            assertThat(o.captures).as("%s: captured rows", what).hasSameSizeAs(captures);
            for (int r = 0; r < captures.size(); r++) {
                RowCheckpoint a = captures.get(r);
                assertThat(a == null ? o.captures.get(r) == null : a.contentEquals(o.captures.get(r)))
                        .as("%s: row %d captures identically", what, r).isTrue();
            }
        }
    }

    /** A scenario: how to build the group, and the call whose steps fail. */
    private record Scenario(String name, Supplier<ReferenceDraftRows> setup, Consumer<ReferenceDraftRows> call) {
    }

    private static HostTensor hiddens(long seed, int b, int l) {
        return TestModels.hiddens(new SplittableRandom(seed), b, l, MODEL.config().hiddenSize());
    }

    private static HostTensor tokens(long seed, int b, int l) {
        return TestModels.tokens(new SplittableRandom(seed), b, l, MODEL.config().vocabSize());
    }

    /** Two rows prefilled with 5 and a third restored from a checkpoint, then one committed round. */
    private static ReferenceDraftRows prefilledGroup() {
        ReferenceDraftRows g = DRAFTER.openReferenceRows(Arrays.asList(null, null));
        g.prefill(tokens(1, 2, 5), hiddens(2, 2, 5));
        RowCheckpoint cp = g.capture(1);
        g.append(List.of(cp));
        g.draft(new int[] {3, 4, 5}, 2, new long[3], DraftSampling.greedy(3));
        g.commit(new int[] {2, 0, 1}, hiddens(3, 3, 3));
        return g;
    }

    private static ReferenceDraftRows withColdRow() {
        ReferenceDraftRows g = prefilledGroup();
        g.append(Collections.singletonList(null));
        return g;
    }

    private static ReferenceDraftRows roundOpen() {
        ReferenceDraftRows g = prefilledGroup();
        g.draft(new int[] {7, 8, 9}, 3, new long[] {0, 5, 9}, DraftSampling.greedy(3));
        return g;
    }

    private static List<Scenario> scenarios() {
        RowCheckpoint cp = prefilledGroup().capture(2);
        return List.of(
                new Scenario("append", FaultInjectionTest::prefilledGroup,
                        g -> g.append(Arrays.asList(cp, null, cp))),
                new Scenario("filterRows", FaultInjectionTest::prefilledGroup, g -> g.filterRows(new int[] {2, 0})),
                new Scenario("prefill (bridge + chunk + cold row)", FaultInjectionTest::withColdRow,
                        g -> g.prefill(tokens(4, 4, 3), hiddens(5, 4, 3))),
                new Scenario("draft", FaultInjectionTest::prefilledGroup,
                        g -> g.draft(new int[] {1, 2, 3}, 3, new long[] {0, 1, 2}, DraftSampling.greedy(3))),
                new Scenario("draft depth 0", FaultInjectionTest::prefilledGroup,
                        g -> g.draft(new int[] {1, 2, 3}, 0, new long[3], DraftSampling.greedy(3))),
                new Scenario("commit (full, none, partial)", FaultInjectionTest::roundOpen,
                        g -> g.commit(new int[] {3, 0, 2}, hiddens(6, 3, 4))));
    }

    @Test
    void everyStepOfEveryMutatingCallFailsAtomicallyOrPoisons() {
        int failures = 0;
        for (Scenario sc : scenarios()) {
            ReferenceDraftRows control = sc.setup().get();
            sc.call().accept(control);
            Snapshot expected = Snapshot.of(control);
            for (Mode mode : Mode.values()) {
                for (int k = 0; ; k++) {
                    String what = sc.name() + ", " + mode + " at step " + k;
                    ReferenceDraftRows g = sc.setup().get();
                    Snapshot before = Snapshot.of(g);
                    Injector inj = new Injector(k, mode);
                    g.faultPoints = inj;
                    boolean threw = false;
                    try {
                        sc.call().accept(g);
                    } catch (RuntimeException | OutOfMemoryError e) {
                        assertThat(e.getMessage()).as(what).contains("injected");
                        threw = true;
                    }
                    g.faultPoints = null;
                    if (!threw) {
                        assertThat(inj.reached).as("%s: completed without reaching step k", what)
                                .isLessThanOrEqualTo(k);
                        Snapshot.of(g).assertEquals(expected, what + " (no fault reached)");
                        assertThat(k).as("%s: the call has fault points", sc.name()).isGreaterThan(0);
                        break;
                    }
                    failures++;
                    assertThat(isPoisoned(g)).as("%s: a failure before publish leaves nothing to poison", what)
                            .isFalse();
                    Snapshot.of(g).assertEquals(before, what + ": unchanged after the failure");
                    sc.call().accept(g);
                    Snapshot.of(g).assertEquals(expected, what + ": a retry ends where a group that never failed ends");
                }
            }
        }
        System.out.println("[faults] " + failures + " injected failures, every group unchanged and retried to the "
                + "control state");
        assertThat(failures).as("faults injected").isGreaterThan(50);
    }

    private static boolean isPoisoned(ReferenceDraftRows g) {
        try {
            g.rowCount();
            g.capture(0);
            return false;
        } catch (MtpException e) {
            return e.getMessage().contains("poisoned");
        }
    }
}
