package org.mtporacle.conformance.trace;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.mtporacle.api.MtpException;
import org.mtporacle.conformance.chain.Action;

/** Chain traces within the documented limits replay in bounded time and memory; beyond them they are refused. */
class TraceLimitsTest {
    @TempDir
    Path dir;

    private Path write(String json) throws IOException {
        Path f = dir.resolve("t.json");
        Files.writeString(f, json);
        return f;
    }

    private static String trace(String actions) {
        return "{\"format\":\"" + ChainTrace.FORMAT + "\",\"fixture\":\"tiny\",\"backend\":\"reference\","
                + "\"tolerance\":\"f32\",\"contexts\":\"synthetic\",\"seed\":1,\"actions\":[" + actions + "]}";
    }

    private void assertRefused(String json, String... message) throws IOException {
        Path f = write(json);
        assertThatThrownBy(() -> TraceFiles.read(f)).isInstanceOfSatisfying(MtpException.class, e -> {
            assertThat(e.kind()).isEqualTo(MtpException.Kind.MALFORMED_FILE);
            assertThat(e.getMessage()).contains(message).doesNotContain("\n");
        });
    }

    @Test
    void aPrefillOfTwoToTheTwentyIsRefused() throws IOException {
        assertRefused(trace("{\"op\":\"append\",\"slots\":[-1]},{\"op\":\"prefill\",\"length\":1048576,\"seed\":1}"),
                "'length' = 1048576", "[1, " + TraceFiles.MAX_PREFILL + "]");
    }

    @Test
    void theTotalWorkIsBoundedNotOnlyEachAction() {
        // 64 rows, then prefills of 4096 each: allowed one by one, refused once the replay would pass MAX_WORK
        List<Action> actions = new ArrayList<>();
        List<Integer> slots = new ArrayList<>();
        for (int i = 0; i < TraceFiles.MAX_ROWS; i++) {
            slots.add(-1);
        }
        actions.add(new Action.Append(slots, false));
        for (int i = 0; i < 4; i++) {
            actions.add(new Action.Prefill(TraceFiles.MAX_PREFILL, i));
        }
        assertThatThrownBy(() -> TraceFiles.checkWork(actions, "trace t")).isInstanceOf(MtpException.class)
                .hasMessageContaining("(token, cached position) pairs");
        actions.add(1, new Action.Append(List.of(-1), false));
        assertThatThrownBy(() -> TraceFiles.checkWork(actions, "trace t")).hasMessageContaining("65 rows");
    }

    @Test
    void generatedChainsAreFarInsideTheLimits() {
        for (long seed = 0; seed < 50; seed++) {
            TraceFiles.checkWork(TraceFuzzTest.trace(seed, false).actions(), "trace " + seed);
        }
    }

    @Test
    void fractionsDuplicatesTrailingContentAndWrongTypesAreRefused() throws IOException {
        assertRefused(trace("{\"op\":\"draft\",\"depth\":1.5,\"seed\":1}"), "'depth' must be an integer");
        assertRefused(trace("{\"op\":\"draft\",\"depth\":65,\"seed\":1}"), "'depth' = 65");
        assertRefused(trace("{\"op\":\"filter\",\"seed\":1,\"keepAll\":\"yes\"}"), "'keepAll' must be true or false");
        assertRefused(trace("{\"op\":\"capture\",\"seed\":1,\"seed\":2}"), "Duplicate field 'seed'");
        assertRefused(trace("") + "\n{}", "not valid JSON");
        assertRefused(trace("{\"op\":\"append\",\"slots\":[1e400]}"), "outside the finite double range");
        assertRefused(trace("{\"op\":\"capture\",\"seed\":123456789012345678901234567890}"), "64-bit");
    }

    @Test
    void aNewlineInATraceStringCannotSplitTheMessage() throws IOException {
        assertRefused(trace("{\"op\":\"ok\\n    at org.mtporacle.Fake.frame(Fake.java:1)\"}"),
                "unknown op 'ok\\n    at org.mtporacle.Fake.frame(Fake.java:1)'");
    }

    @Test
    void aValidTraceStillRoundTrips() throws IOException {
        ChainTrace t = TraceFuzzTest.trace(2026, true);
        Path f = dir.resolve("ok.json");
        TraceFiles.write(t, f);
        ChainTrace back = TraceFiles.read(f);
        assertThat(back.actions()).isEqualTo(t.actions());
        assertThat(back.backendOptions()).isEqualTo(Map.of("threads", "1"));
    }
}
