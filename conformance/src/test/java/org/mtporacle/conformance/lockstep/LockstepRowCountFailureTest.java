package org.mtporacle.conformance.lockstep;

import org.junit.jupiter.api.Test;
import org.mtporacle.api.DraftModel;
import org.mtporacle.api.DraftRows;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.RowCheckpoint;
import org.mtporacle.api.Tolerance;
import org.mtporacle.conformance.FixtureRecipe;
import org.mtporacle.conformance.chain.Action;
import org.mtporacle.reference.ReferenceBackend;
import org.mtporacle.reference.ReferenceDraftModel;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.nio.file.Path;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** An engine that fails inside {@code rowCount} fails that chain; the run goes on (it is not an error of the run). */
class LockstepRowCountFailureTest {
    /** The reference's rows, except that {@code rowCount} fails as a crashed engine's would. */
    private record CrashingRowCount(ReferenceDraftModel ref) implements DraftModel {
        public MtpModel model() {
            return ref.model();
        }

        public String numerics() {
            return "reference; rowCount fails";
        }

        public DraftRows openRows(List<RowCheckpoint> checkpoints) {
            DraftRows d = ref.openRows(checkpoints);
            return (DraftRows) Proxy.newProxyInstance(DraftRows.class.getClassLoader(), new Class<?>[] {DraftRows.class},
                    (proxy, m, args) -> {
                        if (m.getName().equals("rowCount")) {
                            throw new MtpException(MtpException.Kind.BACKEND_FAILURE, "exec:engine: rowCount: the "
                                    + "engine exited with status 7 instead of replying");
                        }
                        try {
                            return m.invoke(d, args);
                        } catch (InvocationTargetException e) {
                            throw e.getCause();
                        }
                    });
        }

        public void close() {
        }
    }

    @Test
    void aFailureInsideRowCountFailsTheChainInsteadOfEscapingTheRun() {
        MtpModel model = FixtureRecipe.named("tiny").load(Path.of("target", "fixture-cache"));
        try (ReferenceDraftModel oracle = ReferenceBackend.load(model, ReferenceBackend.configuredMode(), 1);
             ReferenceDraftModel inner = ReferenceBackend.load(model, ReferenceBackend.configuredMode(), 1)) {
            ChainOutcome out = new Lockstep(oracle, new CrashingRowCount(inner), Tolerance.EXACT).run(3, List.of(
                    new Action.Append(List.of(-1), false), new Action.Prefill(4, 1)));
            assertThat(out.passed()).isFalse();
            assertThat(out.divergence().message()).contains("BACKEND_FAILURE").contains("exited with status 7");
        }
    }
}
