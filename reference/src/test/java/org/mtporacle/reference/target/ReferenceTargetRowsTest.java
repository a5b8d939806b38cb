package org.mtporacle.reference.target;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.function.Consumer;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.TargetCheckpoint;
import org.mtporacle.api.TargetContract;
import org.mtporacle.reference.kernels.KernelMode;
import org.mtporacle.reference.kernels.Kernels;

/**
 * The target row contract on the reference (spec §13.3): each bad call fails with its kind and a message naming the
 * call and the value, and leaves every row as it was; a failure injected at every internal step of every mutating call
 * leaves the group unchanged; a checkpoint restores a row exactly, and a forged one is refused.
 */
class ReferenceTargetRowsTest {
    private static ExternalTarget x;
    private static ReferenceTarget target;

    @BeforeAll
    static void load() {
        x = ExternalTarget.load("float32");
        target = new ReferenceTarget(x.target(), new Kernels(KernelMode.VECTOR, 1));
    }

    @AfterAll
    static void close() {
        target.close();
    }

    private static HostTensor ids(int[]... rows) {
        return HostTensor.ofIntRows(rows);
    }

    /** A group of two prefilled rows (3 and 5 tokens). */
    private static ReferenceTargetRows twoRows() {
        ReferenceTargetRows rows = target.openReferenceRows(List.of());
        for (int[] prompt : new int[][] {{1, 2, 3}, {4, 5, 6, 7, 8}}) {
            try (var one = target.openRows(Collections.singletonList(null))) {
                one.prefill(ids(prompt));
                rows.append(List.of(one.capture(0)));
            }
        }
        return rows;
    }

    private static List<String> digests(ReferenceTargetRows rows) {
        List<String> out = new ArrayList<>();
        for (int r = 0; r < rows.rowCount(); r++) {
            out.add(rows.processedTokens()[r] == 0 ? "empty" : rows.capture(r).digest());
        }
        return out;
    }

    private static void refused(ReferenceTargetRows rows, Consumer<ReferenceTargetRows> call, MtpException.Kind kind,
                                String message) {
        boolean round = rows.roundOpen(); // during a round only the bookkeeping can be read
        List<String> before = round ? null : digests(rows);
        int[] processed = rows.processedTokens();
        assertThatThrownBy(() -> call.accept(rows)).isInstanceOfSatisfying(MtpException.class, e -> {
            assertThat(e.kind()).isEqualTo(kind);
            assertThat(e.getMessage()).contains(message);
        });
        assertThat(rows.processedTokens()).containsExactly(processed);
        assertThat(rows.roundOpen()).isEqualTo(round);
        if (!round) {
            assertThat(digests(rows)).as("rows unchanged").isEqualTo(before);
        }
    }

    @Test
    void badCallsFailWithTheirKindAndLeaveEveryRowUnchanged() {
        try (ReferenceTargetRows rows = twoRows()) {
            refused(rows, r -> r.verify(ids(new int[] {1}, new int[] {600})), MtpException.Kind.INVALID_ARGUMENT,
                    "verify: ");
            refused(rows, r -> r.verify(ids(new int[] {1}, new int[] {2}, new int[] {3})),
                    MtpException.Kind.INVALID_ARGUMENT, "expected [2, L]");
            int[] wide = new int[TargetContract.MAX_WIDTH + 1];
            refused(rows, r -> r.verify(ids(wide, wide)), MtpException.Kind.INVALID_ARGUMENT, "width W = 66");
            refused(rows, r -> r.commit(new int[] {0, 0}), MtpException.Kind.ILLEGAL_STATE,
                    "commit: no verify round is open");
            refused(rows, r -> r.capture(2), MtpException.Kind.INVALID_ARGUMENT, "capture: row 2 outside [0, 2)");
            refused(rows, r -> r.filterRows(new int[] {1, 1}), MtpException.Kind.INVALID_ARGUMENT, "");
            TargetCheckpoint cp = rows.capture(0);
            TargetCheckpoint forged = new TargetCheckpoint(cp.schema(), cp.processedTokens() + 1, cp.modelIdentity(),
                    cp.convWindows(), cp.recurrentStates(), cp.keys(), cp.values(), cp.digest());
            refused(rows, r -> r.append(List.of(forged)), MtpException.Kind.INCOMPATIBLE_CHECKPOINT,
                    "keys shape F32[1, 2, 3, 16], expected [1, 2, 4, 16]");
            TargetCheckpoint relabelled = new TargetCheckpoint(cp.schema(), cp.processedTokens(), cp.modelIdentity(),
                    cp.convWindows(), cp.recurrentStates(), cp.keys(), cp.values(), null).sealed();
            rows.append(List.of(relabelled)); // a re-sealed checkpoint is a valid one
            rows.filterRows(new int[] {0, 1});
            rows.verify(ids(new int[] {1, 2, 3}, new int[] {4, 5, 6}));
            refused(rows, r -> r.commit(new int[] {0, 3}), MtpException.Kind.INVALID_ARGUMENT,
                    "commit: accepted[1] = 3 outside [0, 2]");
            refused(rows, r -> r.prefill(ids(new int[] {1}, new int[] {2})), MtpException.Kind.ILLEGAL_STATE,
                    "prefill: a verify round is open");
            refused(rows, r -> r.capture(0), MtpException.Kind.ILLEGAL_STATE, "capture: a verify round is open");
            rows.commit(new int[] {2, 0});
            assertThat(rows.processedTokens()).containsExactly(6, 6);
        }
        try (ReferenceTargetRows empty = target.openReferenceRows(Collections.singletonList(null))) {
            refused(empty, r -> r.verify(ids(new int[] {1})), MtpException.Kind.ILLEGAL_STATE,
                    "verify: row 0 has processed no token");
        }
    }

    @Test
    void aFailureAtAnyStepOfAnyCallLeavesTheGroupUnchanged() {
        List<Consumer<ReferenceTargetRows>> calls = List.of(
                r -> r.prefill(ids(new int[] {9, 10}, new int[] {11, 12})),
                r -> r.append(List.of(r.capture(1))),
                r -> r.filterRows(new int[] {1, 0}),
                r -> r.verify(ids(new int[] {9, 10, 11}, new int[] {12, 13, 14})));
        for (int c = 0; c < calls.size(); c++) {
            for (int step = 0; ; step++) {
                try (ReferenceTargetRows rows = twoRows()) {
                    List<String> before = digests(rows);
                    int[] counter = {0};
                    int failAt = step;
                    rows.faultPoints = (call, at) -> {
                        if (counter[0]++ == failAt) {
                            throw new IllegalStateException("injected at " + call + " / " + at);
                        }
                    };
                    Consumer<ReferenceTargetRows> call = calls.get(c);
                    boolean failed;
                    try {
                        call.accept(rows);
                        failed = false;
                    } catch (IllegalStateException e) {
                        failed = true;
                    }
                    rows.faultPoints = null;
                    if (!failed) {
                        break; // every step has had its failure
                    }
                    assertThat(rows.roundOpen()).isFalse();
                    assertThat(digests(rows)).as("call %d failing at step %d", c, step).isEqualTo(before);
                }
            }
        }
        // and a commit that fails leaves the round open, still committable
        try (ReferenceTargetRows rows = twoRows()) {
            rows.verify(ids(new int[] {9, 10}, new int[] {12, 13}));
            rows.faultPoints = (call, at) -> {
                throw new IllegalStateException("injected at " + call + " / " + at);
            };
            assertThatThrownBy(() -> rows.commit(new int[] {1, 0})).isInstanceOf(IllegalStateException.class);
            rows.faultPoints = null;
            assertThat(rows.roundOpen()).isTrue();
            rows.commit(new int[] {1, 0});
            assertThat(rows.processedTokens()).containsExactly(5, 6);
        }
    }

    @Test
    void aRestoredRowContinuesExactlyAsTheOriginal() {
        try (ReferenceTargetRows rows = twoRows()) {
            rows.verify(ids(new int[] {20, 21, 22}, new int[] {23, 24, 25}));
            rows.commit(new int[] {1, 2});
            TargetCheckpoint cp = rows.capture(1);
            assertThat(cp.digestMatches()).isTrue();
            try (var restored = target.openRows(List.of(cp))) {
                float[] a = restored.prefill(ids(new int[] {30, 31})).logits().toFloatArray();
                rows.filterRows(new int[] {1});
                float[] b = rows.prefill(ids(new int[] {30, 31})).logits().toFloatArray();
                assertThat(a).isEqualTo(b);
                assertThat(restored.capture(0).digest()).isEqualTo(rows.capture(0).digest());
            }
        }
    }

    @Test
    void aClosedGroupAndAClosedTargetRefuseEveryCall() {
        ReferenceTargetRows rows = twoRows();
        rows.close();
        assertThatThrownBy(() -> rows.capture(0)).isInstanceOfSatisfying(MtpException.class,
                e -> assertThat(e.getMessage()).isEqualTo("capture: the group is closed"));
        try (ReferenceTarget t = new ReferenceTarget(x.target(), new Kernels(KernelMode.SCALAR, 1))) {
            var open = t.openRows(Collections.singletonList(null));
            t.close();
            assertThatThrownBy(() -> open.prefill(ids(new int[] {1}))).isInstanceOfSatisfying(MtpException.class,
                    e -> assertThat(e.getMessage()).contains("the target this group was opened from is closed"));
            assertThat(Arrays.asList(open.isClosed())).containsExactly(false);
        }
    }

    /**
     * A prefill longer than the skeleton's {@link org.mtporacle.api.AbstractTargetRows#PREFILL_CHUNK} runs as chunks
     * whose taps the skeleton gathers per row: the same as the two prefills of those lengths, bit for bit, for two
     * rows at different positions.
     */
    @Test
    void aPrefillPastTheSkeletonsChunkGathersEachRowsTapsInOrder() {
        int chunk = org.mtporacle.api.AbstractTargetRows.PREFILL_CHUNK;
        int len = chunk + 3;
        int vocab = x.target().config().shape().vocabSize();
        int[][] prompt = new int[2][len];
        for (int r = 0; r < 2; r++) {
            for (int t = 0; t < len; t++) {
                prompt[r][t] = (7 + 31 * t + 101 * r) % vocab;
            }
        }
        try (ReferenceTargetRows whole = twoRows(); ReferenceTargetRows split = twoRows()) {
            var once = whole.prefill(ids(prompt));
            var first = split.prefill(ids(Arrays.stream(prompt).map(p -> Arrays.copyOf(p, chunk))
                    .toArray(int[][]::new)));
            var rest = split.prefill(ids(Arrays.stream(prompt).map(p -> Arrays.copyOfRange(p, chunk, len))
                    .toArray(int[][]::new)));
            assertThat(once.preNorm().shape()).containsExactly(2, len, x.target().config().shape().hiddenSize());
            assertThat(first.preNorm().shape()[1] + rest.preNorm().shape()[1]).isEqualTo(len);
            int h = x.target().config().shape().hiddenSize();
            for (int r = 0; r < 2; r++) {
                for (int t = 0; t < len; t++) {
                    var part = t < chunk ? first : rest;
                    int at = t < chunk ? t : t - chunk;
                    int partLen = t < chunk ? chunk : len - chunk;
                    for (int j = 0; j < h; j++) {
                        long i = ((long) r * len + t) * h + j;
                        long k = ((long) r * partLen + at) * h + j;
                        if (once.preNorm().getFloat(i) != part.preNorm().getFloat(k)
                                || once.postNorm().getFloat(i) != part.postNorm().getFloat(k)) {
                            throw new AssertionError("row " + r + " position " + t + " value " + j
                                    + ": the split prefill's taps differ from the two prefills'");
                        }
                    }
                }
            }
            assertThat(floats(once.logits())).containsExactly(floats(rest.logits()));
            assertThat(whole.processedTokens()).containsExactly(split.processedTokens());
            assertThat(digests(whole)).isEqualTo(digests(split));
        }
    }

    private static float[] floats(HostTensor t) {
        float[] out = new float[(int) t.elementCount()];
        for (int i = 0; i < out.length; i++) {
            out[i] = t.getFloat(i);
        }
        return out;
    }
}
