package org.mtporacle.conformance.loop.trace;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.mtporacle.api.MtpException;
import org.mtporacle.conformance.loop.chain.LoopAction;
import org.mtporacle.conformance.target.chain.TargetAction.Acceptance;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Loop chain traces: every action survives a round trip; another format, a bad tap or a bad field is refused. */
class LoopTraceFilesTest {
    @TempDir
    Path dir;

    @Test
    void everyActionSurvivesARoundTrip() {
        List<LoopAction> actions = List.of(new LoopAction.Join(List.of(-1, 0, 3)), new LoopAction.Prefill(7, -5),
                new LoopAction.Draft(0), new LoopAction.Verify(), new LoopAction.Commit(Acceptance.MATCHED, 9),
                new LoopAction.Capture(Long.MIN_VALUE), new LoopAction.Leave(11, true), new LoopAction.Draft(4),
                new LoopAction.Verify(), new LoopAction.Commit(Acceptance.RANDOM, 12));
        LoopChainTrace t = new LoopChainTrace("tiny-target", "exec:x", "f32", "pre", 42, actions, "drafter",
                "CHECKPOINT_TENSOR", 4, 1, -1, "row 1: hidden NMSE 1.7 > 1e-9 f32", "abc");
        Path f = dir.resolve("t.json");
        LoopTraceFiles.write(f, t);
        assertThat(LoopTraceFiles.isLoopTrace(f)).isTrue();
        assertThat(LoopTraceFiles.read(f)).isEqualTo(t);
    }

    @Test
    void anotherVersionABadTapAndAnOutOfRangeDepthAreRefused() throws Exception {
        Path f = dir.resolve("v.json");
        Files.writeString(f, "{\"format\":\"mtp-oracle-loop-chain\",\"version\":2,\"tap\":\"post\",\"actions\":[]}");
        assertThatThrownBy(() -> LoopTraceFiles.read(f)).isInstanceOf(MtpException.class)
                .hasMessageContaining("version 2").hasMessageContaining("version 1");
        Files.writeString(f, "{\"format\":\"mtp-oracle-loop-chain\",\"version\":1,\"tap\":\"mid\",\"actions\":[]}");
        assertThatThrownBy(() -> LoopTraceFiles.read(f)).isInstanceOf(MtpException.class)
                .hasMessageContaining("tap 'mid'");
        Files.writeString(f, "{\"format\":\"mtp-oracle-loop-chain\",\"version\":1,\"tap\":\"pre\",\"actions\":"
                + "[{\"op\":\"draft\",\"depth\":1000000}]}");
        assertThatThrownBy(() -> LoopTraceFiles.read(f)).isInstanceOf(MtpException.class)
                .hasMessageContaining("action 0").hasMessageContaining("'depth' = 1000000");
    }
}
