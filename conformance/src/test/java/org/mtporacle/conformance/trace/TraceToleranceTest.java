package org.mtporacle.conformance.trace;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.Tolerance;
import org.mtporacle.conformance.chain.Action;
import org.mtporacle.conformance.compare.Divergence;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** A chain trace keeps the profile it ran under, thresholds included, so a custom profile replays as it ran. */
class TraceToleranceTest {
    @TempDir
    Path dir;

    private Path write(Tolerance t) throws Exception {
        Path f = dir.resolve("t.json");
        TraceFiles.write(new ChainTrace(ChainTrace.FORMAT, "tiny", "id", "reference", Map.of(), t, 3,
                List.of(new Action.Append(List.of(-1), false)), null, 1), f);
        return f;
    }

    @Test
    void aCustomProfileRoundTripsWithItsThresholds() throws Exception {
        Tolerance custom = new Tolerance("cuda-f32", 2e-5, 3e-10, 0);
        assertThat(TraceFiles.read(write(custom)).tolerance()).isEqualTo(custom);
    }

    @Test
    void aTraceWithoutThresholdsNamesABuiltInProfile() throws Exception {
        Path f = write(Tolerance.BF16);
        Files.writeString(f, Files.readString(f).replaceAll("(?s)\"thresholds\" : \\{[^}]*},", ""));
        assertThat(Files.readString(f)).doesNotContain("thresholds");
        assertThat(TraceFiles.read(f).tolerance()).isEqualTo(Tolerance.BF16);
        Files.writeString(f, Files.readString(f).replace("\"bf16\"", "\"mine\""));
        assertThatThrownBy(() -> TraceFiles.read(f)).isInstanceOfSatisfying(MtpException.class, e -> assertThat(
                e.kind()).isEqualTo(MtpException.Kind.MALFORMED_FILE)).hasMessageContaining("unknown profile 'mine'");
    }

    @Test
    void aDivergenceKeepsItsKindRowPositionAndFacts() throws Exception {
        Divergence d = new Divergence(Divergence.Kind.CHECKPOINT_TENSOR, 0, "backend", 2, -1,
                new Divergence.TensorEvidence("keys", "F32[1, 1, 1, 2]", "F32[1, 1, 1, 2]", 0.5, 1e-9),
                "row 2: keys NMSE 0.500 > 1.00e-09 f32");
        Path f = dir.resolve("d.json");
        TraceFiles.write(new ChainTrace(ChainTrace.FORMAT, "tiny", "id", "reference", Map.of(), Tolerance.F32, 3,
                List.of(new Action.Append(List.of(-1), false)), d, 1), f);
        Divergence back = TraceFiles.read(f).divergence();
        assertThat(back.kind()).isEqualTo(Divergence.Kind.CHECKPOINT_TENSOR);
        assertThat(back.category()).isEqualTo(Divergence.Category.CHECKPOINT);
        assertThat(back.row()).isEqualTo(2);
        assertThat(back.message()).isEqualTo(d.message());
        assertThat(back.details()).containsEntry("tensor", "keys").containsEntry("nmse", 0.5)
                .containsEntry("threshold", 1e-9);
        // a trace written before kinds: its category's first kind
        Files.writeString(f, Files.readString(f).replace("\"kind\" : \"CHECKPOINT_TENSOR\",", ""));
        assertThat(Files.readString(f)).doesNotContain("CHECKPOINT_TENSOR");
        assertThat(TraceFiles.read(f).divergence().kind()).isEqualTo(Divergence.Kind.CHECKPOINT_STATE);
    }

    @Test
    void badThresholdsAreAMalformedFile() throws Exception {
        Path f = write(new Tolerance("c", 1e-4, 0, 0));
        Files.writeString(f, Files.readString(f).replace("\"tokenGap\" : 1.0E-4", "\"tokenGap\" : -1"));
        assertThatThrownBy(() -> TraceFiles.read(f)).isInstanceOfSatisfying(MtpException.class, e -> assertThat(
                e.kind()).isEqualTo(MtpException.Kind.MALFORMED_FILE)).hasMessageContaining("tokenGap = -1.0");
    }
}
