package org.mtporacle.mlx;

import org.junit.jupiter.api.Test;
import org.mtporacle.api.DraftModel;
import org.mtporacle.api.DraftRows;
import org.mtporacle.api.DraftSampling;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.RowCheckpoint;
import org.mtporacle.conformance.FixtureRecipe;
import org.mtporacle.conformance.chain.BadCall;
import org.mtporacle.conformance.chain.ChainData;
import org.mtporacle.conformance.chain.GroupShape;
import org.mtporacle.reference.ReferenceBackend;
import org.mtporacle.reference.kernels.KernelMode;

import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

/** Every call of the bad-input catalogue is refused with the catalogue's kind, the reference's message, no change. */
class MlxBadCallTest {
    private static final long SEED = 0x5eedL;

    /** The states the catalogue's calls apply in, built the same way on any backend. */
    enum State {
        EMPTY, MIXED, READY, ROUND;

        GroupShape shape() {
            return switch (this) {
                case EMPTY -> GroupShape.empty();
                case MIXED -> new GroupShape(new boolean[] {true, true, false}, false, 0, 0);
                case READY -> new GroupShape(new boolean[] {true, true}, false, 0, 0);
                case ROUND -> new GroupShape(new boolean[] {false, false}, true, 2, 0);
            };
        }

        DraftRows open(DraftModel m) {
            MtpModel model = m.model();
            int h = model.config().hiddenSize();
            int v = model.config().vocabSize();
            DraftRows g = m.openRows(List.of());
            if (this == EMPTY) {
                return g;
            }
            g.append(Collections.nCopies(2, null));
            ChainData.PrefillArgs p = ChainData.prefill(SEED, 2, 5, v, h);
            g.prefill(p.tokens(), p.context());
            if (this == MIXED) {
                g.append(Collections.singletonList(null));
            } else if (this == ROUND) {
                g.draft(new int[] {1, 2}, 2, new long[] {3, 4}, DraftSampling.greedy(2));
            }
            return g;
        }
    }

    @Test
    void everyBadCallIsRefusedWithTheExpectedKindAndLeavesRowsUnchanged() {
        MlxBackend backend = MlxTestSupport.requireMlx();
        MtpModel model = FixtureRecipe.named("tiny").load(MlxTestSupport.fixtureCache());
        Set<BadCall> covered = EnumSet.noneOf(BadCall.class);
        try (DraftModel mlx = backend.load(model, Map.of("device", "cpu"));
             DraftModel ref = ReferenceBackend.load(model, KernelMode.SCALAR, 1)) {
            for (State state : State.values()) {
                GroupShape shape = state.shape();
                for (BadCall call : BadCall.values()) {
                    if (!call.appliesTo(shape)) {
                        continue;
                    }
                    try (DraftRows g = state.open(mlx); DraftRows r = state.open(ref)) {
                        List<RowCheckpoint> before = captureAll(g, shape);
                        MtpException ours = refusal(() -> call.invoke(g, model, shape, SEED), call, state);
                        MtpException theirs = refusal(() -> call.invoke(r, model, shape, SEED), call, state);
                        assertThat(ours.kind()).as("%s in %s: %s", call, state, ours.getMessage())
                                .isEqualTo(call.expectedKind());
                        assertThat(ours.getMessage()).as("%s in %s", call, state).isEqualTo(theirs.getMessage());
                        assertThat(g.rowCount()).as("%s in %s changed the row count", call, state)
                                .isEqualTo(shape.rows());
                        List<RowCheckpoint> after = captureAll(g, shape);
                        for (int i = 0; i < before.size(); i++) {
                            RowCheckpoint a = before.get(i);
                            assertThat(a == null ? after.get(i) == null : a.contentEquals(after.get(i)))
                                    .as("%s in %s changed row %d", call, state, i).isTrue();
                        }
                        covered.add(call);
                    }
                }
            }
        }
        assertThat(covered).as("catalogue calls exercised").containsExactlyInAnyOrder(BadCall.values());
        System.out.println("mlx refused all " + covered.size() + " bad calls of the catalogue");
    }

    private static MtpException refusal(Runnable r, BadCall call, State state) {
        try {
            r.run();
        } catch (MtpException e) {
            return e;
        } catch (RuntimeException e) {
            fail(call + " in " + state + " threw " + e + " instead of an MtpException");
        }
        return fail(call + " in " + state + " was accepted");
    }

    private static List<RowCheckpoint> captureAll(DraftRows g, GroupShape shape) {
        List<RowCheckpoint> out = new ArrayList<>();
        if (shape.roundOpen()) {
            return out;
        }
        for (int i = 0; i < g.rowCount(); i++) {
            out.add(shape.hasHidden(i) ? g.capture(i) : null);
        }
        return out;
    }
}
