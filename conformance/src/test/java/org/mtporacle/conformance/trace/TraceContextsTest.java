package org.mtporacle.conformance.trace;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.mtporacle.api.HiddenTap;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.Tolerance;
import org.mtporacle.conformance.chain.Action;
import org.mtporacle.conformance.chain.ContextSource;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** A chain trace records where its contexts came from, so a replay feeds the same ones; first-format traces still read. */
class TraceContextsTest {
    @TempDir
    Path dir;

    private Path write(ContextSource contexts) throws Exception {
        Path f = dir.resolve("t.json");
        TraceFiles.write(new ChainTrace(ChainTrace.FORMAT, "tiny-target", "id", "reference", Map.of(), Tolerance.F32,
                contexts, 3, List.of(new Action.Append(List.of(-1), false), new Action.Prefill(2, 4)), null, 2), f);
        return f;
    }

    @Test
    void everyContextSourceRoundTrips() throws Exception {
        for (ContextSource c : List.of(ContextSource.SYNTHETIC, new ContextSource.Target(HiddenTap.PRE_NORM),
                new ContextSource.Target(HiddenTap.POST_NORM))) {
            ChainTrace t = TraceFiles.read(write(c));
            assertThat(t.contexts()).isEqualTo(c);
            assertThat(t.format()).isEqualTo("mtp-oracle-chain/2");
        }
        assertThat(Files.readString(write(ContextSource.SYNTHETIC))).contains("\"contexts\" : \"synthetic\"")
                .contains("\"tap\" : null");
    }

    @Test
    void aFirstFormatTraceReadsAsSyntheticContexts() throws Exception {
        Path f = write(ContextSource.SYNTHETIC);
        Files.writeString(f, Files.readString(f).replace("mtp-oracle-chain/2", "mtp-oracle-chain/1")
                .replace("\"contexts\" : \"synthetic\",", "").replace("\"tap\" : null,", ""));
        assertThat(Files.readString(f)).doesNotContain("contexts").doesNotContain("tap");
        ChainTrace t = TraceFiles.read(f);
        assertThat(t.contexts()).isEqualTo(ContextSource.SYNTHETIC);
        assertThat(t.actions()).hasSize(2);
    }

    @ParameterizedTest(name = "{0} / {1}")
    @CsvSource(nullValues = "none", value = {
            "synthetic, '\"pre\"',     with contexts 'synthetic', expected null",
            "target,    null,          tap missing with contexts 'target', expected pre or post",
            "target,    '\"middle\"',  tap 'middle' with contexts 'target', expected pre or post",
            "oracle,    null,          contexts 'oracle', expected synthetic or target"})
    void aBadContextsFieldIsAMalformedFileNamingIt(String contexts, String tap, String message) throws Exception {
        Path f = write(ContextSource.SYNTHETIC);
        Files.writeString(f, Files.readString(f).replace("\"contexts\" : \"synthetic\"", "\"contexts\" : \""
                + contexts + "\"").replace("\"tap\" : null", "\"tap\" : " + tap));
        assertThatThrownBy(() -> TraceFiles.read(f)).isInstanceOfSatisfying(MtpException.class, e -> assertThat(
                e.kind()).isEqualTo(MtpException.Kind.MALFORMED_FILE)).hasMessageContaining(message);
    }

    @Test
    void aSecondFormatTraceWithoutContextsIsAMalformedFile() throws Exception {
        Path f = write(ContextSource.SYNTHETIC);
        Files.writeString(f, Files.readString(f).replace("\"contexts\" : \"synthetic\",", ""));
        assertThatThrownBy(() -> TraceFiles.read(f)).isInstanceOfSatisfying(MtpException.class, e -> assertThat(
                e.kind()).isEqualTo(MtpException.Kind.MALFORMED_FILE)).hasMessageContaining("contexts");
    }

    @Test
    void theContextsOptionIsParsedWithOneLineErrors() {
        assertThat(ContextSource.of("synthetic", null)).isEqualTo(ContextSource.SYNTHETIC);
        assertThat(ContextSource.of("target", null)).isEqualTo(new ContextSource.Target(HiddenTap.POST_NORM));
        assertThat(ContextSource.of("target", "pre")).isEqualTo(new ContextSource.Target(HiddenTap.PRE_NORM));
        assertThat(new ContextSource.Target(HiddenTap.POST_NORM).describe()).startsWith("target reference (tap post)");
        assertThatThrownBy(() -> ContextSource.of("synthetic", "pre")).hasMessage("--tap 'pre': a tap needs "
                + "--contexts target (synthetic contexts have none)");
        assertThatThrownBy(() -> ContextSource.of("real", null)).hasMessage("--contexts 'real': expected synthetic "
                + "or target");
        assertThatThrownBy(() -> ContextSource.of("target", "mid")).hasMessageContaining("expected pre or post");
    }
}
