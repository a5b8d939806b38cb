package org.mtporacle.conformance.target.chain;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.LoadedTarget;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.TargetRows;
import org.mtporacle.conformance.target.TinyTarget;
import org.mtporacle.conformance.target.mutants.SimpleTarget;
import org.mtporacle.conformance.target.mutants.TargetMutation;
import org.mtporacle.reference.target.ReferenceTarget;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

/**
 * The target bad-call catalogue checked against the reference target rows (and the standalone simple target): every
 * call applies in some state, is refused there with the catalogue's kind and a message that names the call, and
 * leaves every row as it was (during a round: the round stays open and commits as before).
 */
class TargetBadCallTest {
    private static ReferenceTarget reference;
    private static SimpleTarget simple;

    @BeforeAll
    static void load() {
        reference = TinyTarget.reference();
        simple = new SimpleTarget(TinyTarget.fixture().target(), TargetMutation.NONE);
    }

    @AfterAll
    static void close() {
        reference.close();
        simple.close();
    }

    /** The states a call may apply in: empty, two warm rows, a warm and a cold row, a round of width 3 open. */
    private enum State { EMPTY, WARM, WITH_COLD_ROW, ROUND_OPEN }

    private static TargetShape open(LoadedTarget t, State s, List<TargetRows> out) {
        TargetRows g = t.openRows(List.of());
        out.add(g);
        TargetShape shape = TargetShape.empty();
        if (s == State.EMPTY) {
            return shape;
        }
        g.append(Arrays.asList(null, null));
        g.prefill(HostTensor.ofIntRows(new int[][] {{1, 2, 3}, {4, 5, 6}}));
        shape = new TargetShape(new boolean[] {true, true}, false, 0, 0);
        if (s == State.WITH_COLD_ROW) {
            g.append(Collections.singletonList(null));
            shape = new TargetShape(new boolean[] {true, true, false}, false, 0, 0);
        }
        if (s == State.ROUND_OPEN) {
            g.verify(HostTensor.ofIntRows(new int[][] {{7, 8, 9}, {10, 11, 12}}));
            shape = new TargetShape(new boolean[] {true, true}, true, 3, 0);
        }
        return shape;
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(TargetBadCall.class)
    void everyBadCallIsRefusedWithItsKindAndChangesNothing(TargetBadCall call) {
        int applied = 0;
        for (State s : State.values()) {
            for (LoadedTarget t : new LoadedTarget[] {reference, simple}) {
                List<TargetRows> groups = new ArrayList<>();
                TargetShape shape = open(t, s, groups);
                if (!call.appliesTo(shape)) {
                    groups.getFirst().close();
                    continue;
                }
                applied++;
                try (TargetRows g = groups.getFirst()) {
                    List<String> before = digests(g, shape);
                    int[] processed = g.processedTokens();
                    Throwable e = catchThrowable(() -> call.invoke(g, t.model(), shape, 42));
                    String who = call + " on " + (t == reference ? "the reference" : "the simple target") + " (" + s
                            + ")";
                    assertThat(e).as(who).isInstanceOf(MtpException.class);
                    assertThat(((MtpException) e).kind()).as(who + ": " + e.getMessage())
                            .isEqualTo(call.expectedKind());
                    if (t == reference) {
                        assertThat(e.getMessage()).as(who).startsWith(call.call() + ":");
                    }
                    assertThat(g.processedTokens()).as(who).containsExactly(processed);
                    assertThat(digests(g, shape)).as(who + ": rows unchanged").isEqualTo(before);
                    if (shape.roundOpen()) {
                        g.commit(new int[shape.rows()]); // the round is still open and commits
                    }
                }
            }
        }
        assertThat(applied).as("%s applies in some state", call).isPositive();
    }

    private static List<String> digests(TargetRows g, TargetShape shape) {
        List<String> out = new ArrayList<>();
        if (shape.roundOpen()) {
            return out;
        }
        for (int r = 0; r < shape.rows(); r++) {
            out.add(shape.warm(r) ? g.capture(r).digest() : "cold");
        }
        return out;
    }
}
