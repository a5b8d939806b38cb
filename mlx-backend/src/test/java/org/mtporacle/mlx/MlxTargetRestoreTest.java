package org.mtporacle.mlx;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.mtporacle.conformance.target.chain.TargetAction;
import org.mtporacle.conformance.target.lockstep.TargetChainOutcome;
import org.mtporacle.conformance.target.lockstep.TargetFixture;
import org.mtporacle.conformance.target.lockstep.TargetLockstep;
import org.mtporacle.reference.kernels.KernelMode;
import org.mtporacle.reference.kernels.Kernels;
import org.mtporacle.reference.target.ReferenceTarget;

import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A checkpoint restored into a group that {@code filterRows} had emptied, then kept by a second {@code filterRows},
 * still holds its conv windows: the shrunk chain of a precision=native CPU campaign (seed ba56f7b352c5e704, chain 72
 * of seeds 9000+), where the restored window came back transposed (NMSE 1.95), run in lockstep against the reference
 * in both profiles. (MLX 0.31.1's CPU {@code take} along axis 0 of a {@code [1, K−1, C]} layer of a transposed array
 * returns its elements in memory order; the restored windows are now made row-contiguous first.)
 */
class MlxTargetRestoreTest {

    @ParameterizedTest(name = "precision={0} tolerance={1}")
    @CsvSource({"f32, f32", "native, bf16-target"})
    void aCheckpointRestoredIntoAnEmptiedGroupKeepsItsWindows(String precision, String tolerance) {
        MlxBackend backend = MlxTestSupport.requireMlx();
        TargetFixture fx = TargetFixture.load("tiny-target", MlxTestSupport.fixtureCache());
        List<TargetAction> chain = List.of(
                new TargetAction.Append(List.of(-1)),
                new TargetAction.Prefill(1, 5578989011513700424L),
                new TargetAction.Capture(5585194387865546971L),
                new TargetAction.Filter(-4391892537510086673L, false),
                new TargetAction.Append(List.of(0)),
                new TargetAction.Filter(91925728637731377L, true));
        Map<String, String> options = Map.of("precision", precision, "device", MlxTargetVerification.device());
        try (ReferenceTarget oracle = new ReferenceTarget(fx.target(), new Kernels(KernelMode.VECTOR, 1));
             MlxTarget subject = backend.loadTarget(fx.target(), options)) {
            TargetChainOutcome o = new TargetLockstep(oracle, subject, MlxTargetTolerances.named(tolerance))
                    .run(0xba56f7b352c5e704L, chain);
            assertThat(o.divergence()).as("divergence").isNull();
            assertThat(o.executed()).isEqualTo(chain.size());
            assertThat(o.counts().comparedStates()).as("row states compared").isPositive();
        }
    }
}
