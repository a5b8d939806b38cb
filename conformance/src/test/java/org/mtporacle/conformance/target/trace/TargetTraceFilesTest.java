package org.mtporacle.conformance.target.trace;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.mtporacle.api.MtpException;
import org.mtporacle.conformance.target.chain.TargetAction;
import org.mtporacle.conformance.target.chain.TargetBadCall;
import org.mtporacle.conformance.target.chain.TargetChainGenerator;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Target chain traces round-trip every action and the backend's options exactly; a trace without options (written
 * before they were recorded) reads as none; a reader refuses another format or version, and malformed options.
 */
class TargetTraceFilesTest {
    @TempDir
    Path tmp;

    @Test
    void everyActionOfGeneratedChainsRoundTrips() {
        TargetChainGenerator gen = new TargetChainGenerator(TargetChainGenerator.Limits.defaults());
        for (long seed = 0; seed < 50; seed++) {
            List<TargetAction> chain = gen.generate(seed);
            Path f = tmp.resolve("t" + seed + ".json");
            TargetTraceFiles.write(f, new TargetChainTrace("tiny-target", "simple", "f32", "dv_dk/K", seed, chain,
                    seed % 2 == 0 ? null : "STATE_TENSOR", 3, 1, -1, "row 1: convWindows NMSE 2.5 > 1e-09 f32"));
            TargetChainTrace back = TargetTraceFiles.read(f);
            assertThat(back.actions()).isEqualTo(chain);
            assertThat(back.seed()).isEqualTo(seed);
            assertThat(back.divergenceKind()).isEqualTo(seed % 2 == 0 ? null : "STATE_TENSOR");
        }
        List<TargetAction> all = List.of(new TargetAction.Append(List.of(-1, 0, 2)), new TargetAction.Filter(3, true),
                new TargetAction.Prefill(70, -4), new TargetAction.Verify(0, 5, 100),
                new TargetAction.Commit(TargetAction.Acceptance.MATCHED, 6), new TargetAction.Capture(7),
                new TargetAction.Bad(TargetBadCall.COMMIT_ACCEPTED_EQUALS_WIDTH, 8));
        Path f = tmp.resolve("all.json");
        TargetTraceFiles.write(f, new TargetChainTrace("tiny-target", "x", "exact", "dk_dv/K-1", 1, all, null, -1, -1,
                -1, null));
        assertThat(TargetTraceFiles.read(f).actions()).isEqualTo(all);
    }

    /**
     * A trace is a file from anyone: one past the stated bound ({@code TraceFiles.MAX_BYTES}) is refused before it is
     * read, and one with a duplicated key is refused rather than read as either value; neither is taken for a trace
     * by the format probe {@code mtp replay} uses.
     */
    @Test
    void anOversizedOrAmbiguousFileIsRefusedBeforeItIsRead() throws Exception {
        Path big = tmp.resolve("big.json");
        try (java.io.RandomAccessFile f = new java.io.RandomAccessFile(big.toFile(), "rw")) {
            f.setLength(org.mtporacle.conformance.trace.TraceFiles.MAX_BYTES + 1); // sparse: nothing is written
        }
        assertThatThrownBy(() -> TargetTraceFiles.read(big)).isInstanceOf(MtpException.class)
                .hasMessageContaining("bytes, more than the " + org.mtporacle.conformance.trace.TraceFiles.MAX_BYTES);
        assertThat(TargetTraceFiles.isTargetTrace(big)).isFalse();
        Path dup = tmp.resolve("dup.json");
        Files.writeString(dup, "{\"format\": \"mtp-oracle-target-chain\", \"version\": 1, \"seed\": 1, \"seed\": 2, "
                + "\"actions\": []}");
        assertThatThrownBy(() -> TargetTraceFiles.read(dup)).isInstanceOf(MtpException.class)
                .hasMessageContaining("seed");
        assertThat(TargetTraceFiles.isTargetTrace(dup)).isFalse();
    }

    @Test
    void anotherFormatOrVersionIsRefusedNamingBoth() throws Exception {
        Path f = tmp.resolve("old.json");
        Files.writeString(f, "{\"format\": \"mtp-oracle-target-chain\", \"version\": 2, \"actions\": []}");
        assertThatThrownBy(() -> TargetTraceFiles.read(f)).isInstanceOf(MtpException.class)
                .hasMessageContaining("version 2").hasMessageContaining("expected 'mtp-oracle-target-chain' version 1");
        Files.writeString(f, "{\"format\": \"mtp-oracle-chain\", \"version\": 1}");
        assertThatThrownBy(() -> TargetTraceFiles.read(f)).isInstanceOf(MtpException.class)
                .hasMessageContaining("format 'mtp-oracle-chain'");
    }

    @Test
    void theBackendOptionsRoundTripAndAnOlderTraceWithoutThemReadsAsNone() throws Exception {
        List<TargetAction> chain = List.of(new TargetAction.Append(List.of(-1)), new TargetAction.Prefill(3, 2));
        TargetChainTrace t = new TargetChainTrace("tiny-target", "mlx", Map.of("precision", "f32", "moe", "gather"),
                "f32", "declared by the backend", 9, chain, "ROUTER", 1, 0, 2, "row 0: router gap", "abc");
        Path f = tmp.resolve("options.json");
        TargetTraceFiles.write(f, t);
        assertThat(Files.readString(f)).contains("\"backendOptions\"").contains("\"precision\" : \"f32\"");
        TargetChainTrace back = TargetTraceFiles.read(f);
        assertThat(back).isEqualTo(t);
        assertThat(back.backendOptions()).containsExactlyInAnyOrderEntriesOf(Map.of("precision", "f32", "moe",
                "gather"));

        Path old = tmp.resolve("older.json");
        Files.writeString(old, "{\"format\": \"mtp-oracle-target-chain\", \"version\": 1, \"fixture\": "
                + "\"tiny-target\", \"backend\": \"mlx\", \"tolerance\": \"f32\", \"stateLayout\": \"x\", "
                + "\"seed\": 4, \"actions\": [{\"op\": \"prefill\", \"length\": 2, \"seed\": 1}], "
                + "\"divergence\": null}");
        TargetChainTrace o = TargetTraceFiles.read(old);
        assertThat(o.backendOptions()).isEmpty();
        assertThat(o.actions()).containsExactly(new TargetAction.Prefill(2, 1));
    }

    @Test
    void malformedBackendOptionsAreRefusedInOneLineNamingTheField() throws Exception {
        String head = "{\"format\": \"mtp-oracle-target-chain\", \"version\": 1, \"actions\": [], ";
        Path f = tmp.resolve("bad.json");
        Files.writeString(f, head + "\"backendOptions\": {\"precision\": 32}}");
        assertThatThrownBy(() -> TargetTraceFiles.read(f)).isInstanceOf(MtpException.class)
                .satisfies(e -> assertThat(((MtpException) e).kind()).isEqualTo(MtpException.Kind.MALFORMED_FILE))
                .hasMessageContaining("'backendOptions.precision'").hasMessageContaining("expected a string")
                .hasMessageNotContaining("\n");
        Files.writeString(f, head + "\"backendOptions\": [\"precision=f32\"]}");
        assertThatThrownBy(() -> TargetTraceFiles.read(f)).isInstanceOf(MtpException.class)
                .hasMessageContaining("'backendOptions' must be an object of strings");
        StringBuilder many = new StringBuilder("{");
        for (int i = 0; i <= 64; i++) {
            many.append(i == 0 ? "" : ",").append("\"k").append(i).append("\": \"v\"");
        }
        Files.writeString(f, head + "\"backendOptions\": " + many + "}}");
        assertThatThrownBy(() -> TargetTraceFiles.read(f)).isInstanceOf(MtpException.class)
                .hasMessageContaining("'backendOptions' has 65 entries, at most 64");
        Files.writeString(f, head + "\"backendOptions\": {\"precision\": \"" + "f".repeat(1025) + "\"}}");
        assertThatThrownBy(() -> TargetTraceFiles.read(f)).isInstanceOf(MtpException.class)
                .hasMessageContaining("'backendOptions.precision'").hasMessageContaining("longer than 1024")
                .hasMessageNotContaining("fff");
    }
}
