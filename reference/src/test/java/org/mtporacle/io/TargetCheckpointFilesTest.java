package org.mtporacle.io;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collections;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.TargetCheckpoint;
import org.mtporacle.api.TargetRows;
import org.mtporacle.reference.kernels.KernelMode;
import org.mtporacle.reference.kernels.Kernels;
import org.mtporacle.reference.target.ReferenceTarget;

/**
 * A target checkpoint survives its file form (spec §13.3): written, read back and restored, the row continues exactly
 * as the original; a file whose label was edited is read but refused at restore by its digest; a file of another
 * format, or with a stray tensor, is refused when read.
 */
class TargetCheckpointFilesTest {
    private static final Path DATA = Path.of("src/test/data/qwen35-target-transformers/float32");

    @TempDir
    Path dir;

    @Test
    void aWrittenCheckpointRestoresARowThatContinuesExactly() throws Exception {
        try (ReferenceTarget t = new ReferenceTarget(TargetLoader.load(DATA), new Kernels(KernelMode.VECTOR, 1));
             TargetRows rows = t.openRows(Collections.singletonList(null))) {
            rows.prefill(HostTensor.ofInts(new int[] {5, 6, 7, 8}, 1, 4));
            rows.verify(HostTensor.ofInts(new int[] {9, 10, 11}, 1, 3));
            rows.commit(new int[] {1});
            TargetCheckpoint cp = rows.capture(0);
            Path file = dir.resolve("row.safetensors");
            TargetCheckpointFiles.write(cp, file);
            assertThat(TargetCheckpointFiles.isTargetCheckpoint(file)).isTrue();
            TargetCheckpoint back = TargetCheckpointFiles.read(file);
            assertThat(back.contentEquals(cp)).isTrue();
            assertThat(back.digest()).isEqualTo(cp.digest());
            try (TargetRows restored = t.openRows(List.of(back))) {
                float[] a = restored.prefill(HostTensor.ofInts(new int[] {12}, 1, 1)).logits().toFloatArray();
                float[] b = rows.prefill(HostTensor.ofInts(new int[] {12}, 1, 1)).logits().toFloatArray();
                assertThat(a).isEqualTo(b);
            }
            // tensors changed after capture keep the recorded digest: read, then refused at restore
            TargetCheckpoint other = new TargetCheckpoint(back.schema(), back.processedTokens(), back.modelIdentity(),
                    back.convWindows(), back.recurrentStates(), back.keys(), back.keys(), back.digest());
            assertThatThrownBy(() -> t.openRows(List.of(other))).isInstanceOfSatisfying(MtpException.class,
                    e -> assertThat(e.getMessage()).contains("does not match its content digest"));
        }
    }

    @Test
    void aFileOfAnotherFormatOrWithAStrayTensorIsRefused() throws Exception {
        Path drafter = dir.resolve("drafter.safetensors");
        new SafetensorsWriter().metadata("format", CheckpointFiles.FORMAT)
                .add("hidden", HostTensor.ofFloats(new float[4], 1, 1, 4)).write(drafter);
        assertThat(TargetCheckpointFiles.isTargetCheckpoint(drafter)).isFalse();
        assertThatThrownBy(() -> TargetCheckpointFiles.read(drafter)).isInstanceOfSatisfying(MtpException.class,
                e -> assertThat(e.getMessage()).contains("metadata format 'mtp-oracle-checkpoint/1', expected "
                        + "'mtp-oracle-target-checkpoint/1'"));
        Path stray = dir.resolve("stray.safetensors");
        new SafetensorsWriter().metadata("format", TargetCheckpointFiles.FORMAT).metadata("schema", "qwen-target-v1")
                .metadata("processedTokens", "1").metadata("modelIdentity", "x")
                .add("hidden", HostTensor.ofFloats(new float[4], 1, 1, 4)).write(stray);
        assertThatThrownBy(() -> TargetCheckpointFiles.read(stray)).isInstanceOfSatisfying(MtpException.class,
                e -> assertThat(e.getMessage()).contains("unexpected tensor 'hidden'"));
        Files.writeString(dir.resolve("text.safetensors"), "not safetensors");
        assertThat(TargetCheckpointFiles.isTargetCheckpoint(dir.resolve("text.safetensors"))).isFalse();
    }
}
