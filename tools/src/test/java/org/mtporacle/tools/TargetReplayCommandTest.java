package org.mtporacle.tools;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.mtporacle.conformance.loop.chain.LoopAction;
import org.mtporacle.conformance.loop.trace.LoopChainTrace;
import org.mtporacle.conformance.loop.trace.LoopTraceFiles;
import org.mtporacle.conformance.target.chain.TargetAction;
import org.mtporacle.conformance.target.trace.TargetChainTrace;
import org.mtporacle.conformance.target.trace.TargetTraceFiles;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code mtp replay} recognises a target chain trace and replays it against the named backend's target: the
 * reference passes its own chain; the reference on its scalar kernels, held to {@code exact} against the vector
 * oracle, diverges at the first output (different accumulation order, a non-zero NMSE); a backend without a target, a
 * missing {@code --backend} and an unreadable action are one-line refusals. A trace recorded with backend options
 * (a profile's) replays with them unless {@code --option} replaces them, and a loop trace does the same; on another
 * backend than the one it names, without them.
 */
class TargetReplayCommandTest {
    @TempDir
    Path dir;

    private Path trace(String tolerance) {
        Path t = dir.resolve("target-" + tolerance + ".json");
        TargetTraceFiles.write(t, new TargetChainTrace("tiny-target", "reference", tolerance, "dk_dv/K-1", 5,
                List.of(new TargetAction.Append(List.of(-1, -1)), new TargetAction.Prefill(6, 1),
                        new TargetAction.Verify(3, 2, 50), new TargetAction.Commit(TargetAction.Acceptance.RANDOM,
                                3), new TargetAction.Capture(4)), null, -1, -1, -1, null));
        return t;
    }

    @Test
    void theReferencePassesItsOwnTargetChainUnderExact() {
        Cli r = Cli.run("replay", trace("exact").toString(), "--backend", "reference");
        assertThat(r.exit()).as(r.out()).isEqualTo(0);
        assertThat(r.out()).contains("replaying target trace").contains("passed").contains("verify");
    }

    @Test
    void theScalarKernelsDivergeFromTheVectorOracleUnderExactAndPassUnderF32() {
        Cli r = Cli.run("replay", trace("exact").toString(), "--backend", "reference", "--option", "mode=scalar");
        assertThat(r.exit()).as(r.out()).isEqualTo(1);
        assertThat(r.out()).contains("FAIL").contains("diverged at action 1");
        Cli f32 = Cli.run("replay", trace("f32").toString(), "--backend", "reference", "--option", "mode=scalar");
        assertThat(f32.exit()).as(f32.out()).isEqualTo(0);
    }

    @Test
    void aDrafterOnlyBackendAMissingBackendAndABadActionAreRefused() throws Exception {
        Path t = trace("f32");
        Cli scalar = Cli.run("replay", t.toString(), "--backend", "scalar");
        assertThat(scalar.exit()).isEqualTo(3);
        assertThat(scalar.out()).contains("target trace").contains("drafter only").doesNotContain("at org.");
        Cli none = Cli.run("replay", t.toString());
        assertThat(none.exit()).isEqualTo(2);
        assertThat(none.out()).contains("--backend");
        Files.writeString(t, Files.readString(t).replace("\"random\"", "\"most\""));
        Cli bad = Cli.run("replay", t.toString(), "--backend", "reference");
        assertThat(bad.exit()).isEqualTo(3);
        assertThat(bad.out()).contains("action 3").contains("cannot be read").doesNotContain("at org.");
    }

    /** A three-action exact target trace recorded on {@code backend} with {@code options}, as a TOKEN divergence. */
    private Path recorded(String name, String backend, Map<String, String> options) {
        Path t = dir.resolve(name);
        TargetTraceFiles.write(t, new TargetChainTrace("tiny-target", backend, options, "exact", "dk_dv/K-1", 5,
                List.of(new TargetAction.Append(List.of(-1, -1)), new TargetAction.Prefill(6, 1),
                        new TargetAction.Verify(3, 2, 50)), "TOKEN", 1, 0, -1, "recorded", ""));
        return t;
    }

    /** The reference loaded with the trace's {@code mode=scalar}, held to exact: it diverges, as it was recorded. */
    @Test
    void aTargetTraceRecordedWithOptionsReplaysWithThemUnlessOptionReplacesThem() {
        Path t = recorded("target-scalar.json", "reference", Map.of("mode", "scalar"));
        Cli recorded = Cli.run("replay", t.toString(), "--backend", "reference");
        assertThat(recorded.exit()).as(recorded.out()).isEqualTo(1);
        assertThat(recorded.out()).contains("backend reference {mode=scalar}").contains("diverged at action 1");
        Cli replaced = Cli.run("replay", t.toString(), "--backend", "reference", "--option", "mode=vector");
        assertThat(replaced.exit()).as(replaced.out()).isEqualTo(0);
        assertThat(replaced.out()).contains("backend reference {mode=vector}").contains("passed");
    }

    @Test
    void aLoopTraceRecordedWithOptionsReplaysWithThemUnlessOptionReplacesThem() {
        Path t = dir.resolve("loop-scalar.json");
        LoopTraceFiles.write(t, new LoopChainTrace("tiny-target", "reference", Map.of("mode", "scalar"), "exact",
                "pre", "keep", 5, List.of(new LoopAction.Join(List.of(-1, -1)), new LoopAction.Prefill(6, 1),
                new LoopAction.Draft(2), new LoopAction.Verify(), new LoopAction.Commit(TargetAction.Acceptance.RANDOM,
                3)), "target", "TOKEN", 1, 0, -1, "recorded", ""));
        Cli recorded = Cli.run("replay", t.toString(), "--backend", "reference");
        assertThat(recorded.out()).contains("replaying loop trace").contains("backend reference {mode=scalar}");
        assertThat(recorded.exit()).as(recorded.out()).isEqualTo(1);
        Cli replaced = Cli.run("replay", t.toString(), "--backend", "reference", "--option", "mode=vector");
        assertThat(replaced.out()).contains("backend reference {mode=vector}");
        assertThat(replaced.exit()).as(replaced.out()).isEqualTo(0);
    }

    /**
     * A trace from another backend (an MLX campaign's, with {@code precision=native}) replayed on the reference: the
     * trace's options were MLX's, so they are left, with a note, instead of being refused by the reference.
     */
    @Test
    void anotherBackendsOptionsAreLeftWithANoteWhenTheTraceRunsOnTheReference() {
        Path t = recorded("target-mlx.json", "mlx", Map.of("precision", "native"));
        Cli r = Cli.run("replay", t.toString(), "--backend", "reference");
        assertThat(r.exit()).as(r.out()).isEqualTo(0);
        assertThat(r.out()).contains("the trace's options {precision=native} were for backend 'mlx', not passed to "
                + "'reference'").contains("backend reference {}").contains("passed");
    }
}
