package org.mtporacle.conformance.loop.trace;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.mtporacle.api.MtpException;
import org.mtporacle.conformance.chain.BadCall;
import org.mtporacle.conformance.loop.chain.LoopAction;
import org.mtporacle.conformance.target.chain.TargetAction.Acceptance;
import org.mtporacle.conformance.target.chain.TargetBadCall;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Loop chain traces: every action (bad calls too), the KV policy and the backend's options survive a round trip;
 * version 1 and a version 2 trace without options still read (no options); another format or version, a bad tap or
 * policy, malformed options, or a bad field is refused.
 */
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
    void badCallsAndTheRebuildPolicySurviveARoundTrip() {
        List<LoopAction> actions = List.of(new LoopAction.Join(List.of(-1)),
                new LoopAction.BadTarget(TargetBadCall.VERIFY_COLD_ROW, 3), new LoopAction.Prefill(2, 1),
                new LoopAction.Draft(2), new LoopAction.BadDrafter(BadCall.COMMIT_ACCEPTED_ABOVE_DEPTH, -4),
                new LoopAction.Verify(), new LoopAction.Commit(Acceptance.FULL, 5));
        LoopChainTrace t = new LoopChainTrace("tiny-target", "reference", "f32", "post", "rebuild", 7, actions, null,
                null, -1, -1, -1, null, "");
        Path f = dir.resolve("r.json");
        LoopTraceFiles.write(f, t);
        assertThat(LoopTraceFiles.read(f)).isEqualTo(t);
    }

    /** A version 1 trace, written before the KV policy and bad calls, still reads: under keep, without bad calls. */
    @Test
    void aVersion1TraceReadsUnderKeepAndMayNotHoldBadCalls() throws Exception {
        Path f = dir.resolve("v1.json");
        Files.writeString(f, "{\"format\":\"mtp-oracle-loop-chain\",\"version\":1,\"fixture\":\"tiny-target\","
                + "\"backend\":\"reference\",\"tolerance\":\"f32\",\"tap\":\"pre\",\"seed\":3,\"actions\":"
                + "[{\"op\":\"join\",\"slots\":[-1]},{\"op\":\"prefill\",\"length\":2,\"seed\":4}],"
                + "\"divergence\":null}");
        LoopChainTrace t = LoopTraceFiles.read(f);
        assertThat(t.kv()).isEqualTo("keep");
        assertThat(t.backendOptions()).isEmpty();
        assertThat(t.actions()).containsExactly(new LoopAction.Join(List.of(-1)), new LoopAction.Prefill(2, 4));
        Files.writeString(f, "{\"format\":\"mtp-oracle-loop-chain\",\"version\":1,\"tap\":\"pre\",\"actions\":"
                + "[{\"op\":\"bad\",\"group\":\"target\",\"call\":\"VERIFY_COLD_ROW\",\"seed\":1}]}");
        assertThatThrownBy(() -> LoopTraceFiles.read(f)).isInstanceOf(MtpException.class)
                .hasMessageContaining("action 0").hasMessageContaining("not in version 1");
        Files.writeString(f, "{\"format\":\"mtp-oracle-loop-chain\",\"version\":2,\"tap\":\"pre\",\"kv\":\"drop\","
                + "\"actions\":[]}");
        assertThatThrownBy(() -> LoopTraceFiles.read(f)).isInstanceOf(MtpException.class)
                .hasMessageContaining("kv 'drop'");
        Files.writeString(f, "{\"format\":\"mtp-oracle-loop-chain\",\"version\":2,\"tap\":\"pre\",\"kv\":\"keep\","
                + "\"actions\":[{\"op\":\"bad\",\"group\":\"target\",\"call\":\"NO_SUCH_CALL\",\"seed\":1}]}");
        assertThatThrownBy(() -> LoopTraceFiles.read(f)).isInstanceOf(MtpException.class)
                .hasMessageContaining("action 0").hasMessageContaining("NO_SUCH_CALL");
    }

    /** A file past the stated bound ({@code TraceFiles.MAX_BYTES}) is refused before it is read. */
    @Test
    void anOversizedFileIsRefusedBeforeItIsRead() throws Exception {
        Path big = dir.resolve("big.json");
        try (java.io.RandomAccessFile f = new java.io.RandomAccessFile(big.toFile(), "rw")) {
            f.setLength(org.mtporacle.conformance.trace.TraceFiles.MAX_BYTES + 1); // sparse: nothing is written
        }
        assertThatThrownBy(() -> LoopTraceFiles.read(big)).isInstanceOf(MtpException.class)
                .hasMessageContaining("bytes, more than the " + org.mtporacle.conformance.trace.TraceFiles.MAX_BYTES);
        assertThat(LoopTraceFiles.isLoopTrace(big)).isFalse();
    }

    @Test
    void anotherVersionABadTapAndAnOutOfRangeDepthAreRefused() throws Exception {
        Path f = dir.resolve("v.json");
        Files.writeString(f, "{\"format\":\"mtp-oracle-loop-chain\",\"version\":3,\"tap\":\"post\",\"actions\":[]}");
        assertThatThrownBy(() -> LoopTraceFiles.read(f)).isInstanceOf(MtpException.class)
                .hasMessageContaining("version 3").hasMessageContaining("version 1 or 2");
        Files.writeString(f, "{\"format\":\"mtp-oracle-loop-chain\",\"version\":1,\"tap\":\"mid\",\"actions\":[]}");
        assertThatThrownBy(() -> LoopTraceFiles.read(f)).isInstanceOf(MtpException.class)
                .hasMessageContaining("tap 'mid'");
        Files.writeString(f, "{\"format\":\"mtp-oracle-loop-chain\",\"version\":1,\"tap\":\"pre\",\"actions\":"
                + "[{\"op\":\"draft\",\"depth\":1000000}]}");
        assertThatThrownBy(() -> LoopTraceFiles.read(f)).isInstanceOf(MtpException.class)
                .hasMessageContaining("action 0").hasMessageContaining("'depth' = 1000000");
    }

    @Test
    void theBackendOptionsRoundTripAndAVersion2TraceWithoutThemReadsAsNone() throws Exception {
        List<LoopAction> actions = List.of(new LoopAction.Join(List.of(-1)), new LoopAction.Prefill(2, 1),
                new LoopAction.Draft(1), new LoopAction.Verify());
        LoopChainTrace t = new LoopChainTrace("tiny-target", "mlx", Map.of("precision", "f32"), "f32", "pre", "keep",
                5, actions, "target", "ROUTER", 3, 0, 2, "row 0: router gap", "abc");
        Path f = dir.resolve("options.json");
        LoopTraceFiles.write(f, t);
        assertThat(Files.readString(f)).contains("\"backendOptions\"").contains("\"precision\" : \"f32\"");
        assertThat(LoopTraceFiles.read(f)).isEqualTo(t);
        assertThat(LoopTraceFiles.read(f).backendOptions()).containsExactlyEntriesOf(Map.of("precision", "f32"));

        Files.writeString(f, "{\"format\":\"mtp-oracle-loop-chain\",\"version\":2,\"fixture\":\"tiny-target\","
                + "\"backend\":\"mlx\",\"tolerance\":\"f32\",\"tap\":\"post\",\"kv\":\"keep\",\"seed\":3,"
                + "\"actions\":[{\"op\":\"join\",\"slots\":[-1]}],\"divergence\":null}");
        LoopChainTrace old = LoopTraceFiles.read(f);
        assertThat(old.backendOptions()).isEmpty();
        assertThat(old.actions()).containsExactly(new LoopAction.Join(List.of(-1)));
    }

    @Test
    void malformedBackendOptionsAreRefusedInOneLineNamingTheField() throws Exception {
        Path f = dir.resolve("bad.json");
        String head = "{\"format\":\"mtp-oracle-loop-chain\",\"version\":2,\"tap\":\"pre\",\"kv\":\"keep\","
                + "\"actions\":[],";
        Files.writeString(f, head + "\"backendOptions\":{\"precision\":{\"bits\":32}}}");
        assertThatThrownBy(() -> LoopTraceFiles.read(f)).isInstanceOf(MtpException.class)
                .satisfies(e -> assertThat(((MtpException) e).kind()).isEqualTo(MtpException.Kind.MALFORMED_FILE))
                .hasMessageContaining("loop trace").hasMessageContaining("'backendOptions.precision'")
                .hasMessageContaining("expected a string").hasMessageNotContaining("\n");
        Files.writeString(f, head + "\"backendOptions\":\"precision=f32\"}");
        assertThatThrownBy(() -> LoopTraceFiles.read(f)).isInstanceOf(MtpException.class)
                .hasMessageContaining("'backendOptions' must be an object of strings");
        Files.writeString(f, head + "\"backendOptions\":{\"\":\"f32\"}}");
        assertThatThrownBy(() -> LoopTraceFiles.read(f)).isInstanceOf(MtpException.class)
                .hasMessageContaining("'backendOptions' has an empty key");
    }
}
