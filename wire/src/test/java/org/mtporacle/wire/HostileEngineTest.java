package org.mtporacle.wire;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.mtporacle.api.MtpException;

import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

/**
 * A hostile or broken engine (shell one-liners speaking just enough of WIRE.md) meets a bound, a clear failure and a
 * killed process tree, never a runner that waits out its timeout, grows without bound or takes a wrong id.
 */
class HostileEngineTest {
    /** A handshake result a runner accepts (WIRE.md §4), without the id. */
    private static final String HELLO = "\"ok\":true,\"result\":{\"protocol\":\"mtp-oracle-wire/1\",\"engine\":"
            + "{\"name\":\"toy\",\"version\":\"1\"},\"profiles\":[{\"label\":\"toy\",\"options\":{},\"tolerance\":"
            + "{\"name\":\"f32\",\"tokenGap\":1e-4,\"kvNmse\":1e-9,\"hiddenNmse\":0}}],\"capabilities\":{}}}";

    @TempDir
    Path tmp;

    private ExecBackend shell(String script) throws Exception {
        Path f = tmp.resolve("engine.sh");
        Files.writeString(f, script);
        return new ExecBackend("sh " + f, Duration.ofSeconds(60));
    }

    @Test
    void aReplyIdBeyondSixtyFourBitsIsAProtocolViolationNotTheLowBits() throws Exception {
        ExecBackend b = shell("read line\nprintf '%s\\n' '{\"id\":18446744073709551617," + HELLO + "'\nread line\n");
        assertThat(b.description()).contains("reply id 18446744073709551617, expected 1");
    }

    @Test
    void anEngineThatExitsWhileAGrandchildHoldsItsStdoutFailsAtOnceAndTheGrandchildIsKilled() throws Exception {
        Path pid = tmp.resolve("pid");
        ExecBackend b = shell("sleep 300 &\necho $! > " + pid + "\nsleep 3\nexit 3\n");
        String d = assertTimeoutPreemptively(Duration.ofSeconds(20), b::description);
        assertThat(d).contains("exited with status 3");
        long grandchild = Long.parseLong(Files.readString(pid).strip());
        long until = System.nanoTime() + 5_000_000_000L;
        while (ProcessHandle.of(grandchild).map(ProcessHandle::isAlive).orElse(false) && System.nanoTime() < until) {
            Thread.sleep(50);
        }
        assertThat(ProcessHandle.of(grandchild).map(ProcessHandle::isAlive).orElse(false))
                .as("the engine's child %d outlives it", grandchild).isFalse();
    }

    @Test
    void hugeStderrLinesAreCutToABoundAndTheMessageStaysShortOfTheMessageCut() throws Exception {
        ExecBackend b = shell("read line\ni=0\nwhile [ $i -lt 25 ]; do head -c 1048576 /dev/zero | tr '\\000' x >&2; "
                + "echo >&2; i=$((i+1)); done\nexit 5\n");
        MtpException e = (MtpException) org.assertj.core.api.Assertions.catchThrowable(() ->
                b.load(null, Map.of()));
        assertThat(e.kind()).isEqualTo(MtpException.Kind.BACKEND_FAILURE);
        assertThat(e.getMessage()).contains("exited with status 5").contains("earlier left out")
                .doesNotContain("message cut");
        assertThat(EngineProcess.boundedLine(new java.io.ByteArrayInputStream(new byte[1 << 20])))
                .hasSize(EngineProcess.STDERR_LINE_BYTES + "… (line cut, 1044480 more bytes)".length());
    }

    @Test
    void aTensorOrAFrameBeyondTheStatedBoundIsRefusedBeforeItsPayloadIsRead() {
        long over = (1L << 30) / 4 + 1; // one element past the 1 GiB a tensor may carry
        String one = "{\"id\":1,\"ok\":true,\"result\":{},\"tensors\":[{\"dtype\":\"F32\",\"shape\":[" + over
                + "],\"nbytes\":" + over * 4 + "}]}\n";
        assertThatThrownBy(() -> WireFrame.read(new ByteArrayInputStream(one.getBytes(StandardCharsets.UTF_8))))
                .isInstanceOf(WireFrame.FramingException.class)
                .hasMessageContaining("tensors[0]").hasMessageContaining("bound").hasMessageContaining("WIRE.md §2");
        long half = (1L << 30) / 4 / 2; // each 512 MiB: three are past the 1 GiB a frame may carry
        String d = "{\"dtype\":\"F32\",\"shape\":[" + half + "],\"nbytes\":" + half * 4 + "}";
        String two = "{\"id\":1,\"op\":\"prefill\",\"args\":{},\"tensors\":[" + d + "," + d + "," + d + "]}\n";
        assertThatThrownBy(() -> WireFrame.read(new ByteArrayInputStream(two.getBytes(StandardCharsets.UTF_8))))
                .isInstanceOf(WireFrame.FramingException.class)
                .hasMessageContaining("frame").hasMessageContaining("bound").hasMessageContaining("WIRE.md §2");
    }

    @Test
    void anEngineClaimingDepthOrRowsZeroCannotMakeTheCampaignVacuous() throws Exception {
        for (String claim : new String[] {"\"maxDepth\":0", "\"maxRows\":0"}) {
            ExecBackend b = shell("read line\nprintf '%s\\n' '{\"id\":1," + HELLO.replace("\"capabilities\":{}",
                    "\"capabilities\":{" + claim + "}") + "'\nread line\n");
            assertThat(b.description()).as(claim).contains(claim.replace("\"", "").replace(":", " = "))
                    .contains("nothing to compare");
            MtpException e = (MtpException) org.assertj.core.api.Assertions.catchThrowable(() ->
                    b.load(null, Map.of()));
            assertThat(e.kind()).isEqualTo(MtpException.Kind.BACKEND_FAILURE);
        }
    }
}
