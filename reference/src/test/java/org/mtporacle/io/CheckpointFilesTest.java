package org.mtporacle.io;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.mtporacle.api.DType;
import org.mtporacle.api.DraftSampling;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.RowCheckpoint;
import org.mtporacle.reference.ReferenceBackend;
import org.mtporacle.reference.ReferenceDraftModel;
import org.mtporacle.reference.TestModels;
import org.mtporacle.reference.kernels.KernelMode;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collections;
import java.util.List;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

class CheckpointFilesTest {
    @TempDir
    Path dir;

    @Test
    void aCheckpointWrittenAndReadBackRestoresToTheSameContinuation() {
        MtpModel m = TestModels.random(TestModels.tinyConfig(), 3, DType.BF16);
        SplittableRandom rnd = new SplittableRandom(4);
        try (ReferenceDraftModel dm = ReferenceBackend.load(m, KernelMode.VECTOR, 1)) {
            var rows = dm.openRows(Collections.singletonList(null));
            rows.prefill(TestModels.tokens(rnd, 1, 6, 512), TestModels.hiddens(rnd, 1, 6, 64));
            RowCheckpoint cp = rows.capture(0);
            Path file = dir.resolve("row.safetensors");
            CheckpointFiles.write(cp, file);
            RowCheckpoint back = CheckpointFiles.read(file);
            assertThat(back.contentEquals(cp)).isTrue();

            var restored = dm.openRows(List.of(back));
            int[][] a = rows.draft(new int[] {7}, 3, new long[] {1}, DraftSampling.greedy(1));
            int[][] b = restored.draft(new int[] {7}, 3, new long[] {1}, DraftSampling.greedy(1));
            assertThat(b).isDeepEqualTo(a);
        }
    }

    /**
     * A checkpoint file captured on one model whose metadata is edited to another model's identity (the tensors
     * copied byte for byte, the digest kept) is refused by that model; so is a file written before digests, until
     * it is sealed again. Without the digest check both would restore.
     */
    @Test
    void aRelabelledCheckpointFileIsRefusedAndAFileWithoutADigestToo() {
        MtpModel a = TestModels.random(TestModels.tinyConfig(), 3, DType.BF16);
        MtpModel b = TestModels.random(TestModels.tinyConfig(), 5, DType.BF16);
        assertThat(a.identity()).isNotEqualTo(b.identity());
        SplittableRandom rnd = new SplittableRandom(4);
        RowCheckpoint captured;
        try (ReferenceDraftModel dm = ReferenceBackend.load(a, KernelMode.VECTOR, 1);
             var rows = dm.openRows(Collections.singletonList(null))) {
            rows.prefill(TestModels.tokens(rnd, 1, 6, 512), TestModels.hiddens(rnd, 1, 6, 64));
            captured = rows.capture(0);
        }
        Path file = dir.resolve("a.safetensors");
        CheckpointFiles.write(captured, file);
        assertThat(CheckpointFiles.read(file).digest()).isEqualTo(captured.digest()).isNotNull();

        Path relabelled = dir.resolve("relabelled.safetensors");
        new SafetensorsWriter().metadata("format", CheckpointFiles.FORMAT).metadata("schema", captured.schema())
                .metadata("processedTokens", "6").metadata("draftOffset", "5")
                .metadata("modelIdentity", b.identity()).metadata("digest", captured.digest())
                .add("keys", captured.keys()).add("values", captured.values()).add("hidden", captured.hidden())
                .write(relabelled);
        Path old = dir.resolve("old.safetensors");
        CheckpointFiles.write(new RowCheckpoint(captured.schema(), 6, 5, b.identity(), captured.keys(),
                captured.values(), captured.hidden()), old);
        try (ReferenceDraftModel dm = ReferenceBackend.load(b, KernelMode.VECTOR, 1)) {
            MtpException e = catchThrowableOfType(MtpException.class,
                    () -> dm.openRows(List.of(CheckpointFiles.read(relabelled))));
            assertThat(e.kind()).isEqualTo(MtpException.Kind.INCOMPATIBLE_CHECKPOINT);
            assertThat(e.getMessage()).contains("label").contains("changed after capture").doesNotContain("\n")
                    .doesNotContain(captured.digest());
            RowCheckpoint legacy = CheckpointFiles.read(old);
            assertThat(legacy.digest()).isNull();
            MtpException none = catchThrowableOfType(MtpException.class, () -> dm.openRows(List.of(legacy)));
            assertThat(none.kind()).isEqualTo(MtpException.Kind.INCOMPATIBLE_CHECKPOINT);
            assertThat(none.getMessage()).contains("no content digest");
            dm.openRows(List.of(legacy.sealed())).close(); // whoever seals it vouches for it
        }
    }

    @Test
    void aOneTokenCheckpointHasOnlyAHidden() {
        RowCheckpoint cp = new RowCheckpoint(RowCheckpoint.SCHEMA, 1, 0, "id", null, null,
                HostTensor.ofFloats(new float[] {1, 2, 3}, 1, 1, 3).convert(DType.BF16));
        Path file = dir.resolve("p1.safetensors");
        CheckpointFiles.write(cp, file);
        RowCheckpoint back = CheckpointFiles.read(file);
        assertThat(back.keys()).isNull();
        assertThat(back.hidden().dtype()).isEqualTo(DType.BF16);
        assertThat(back.contentEquals(cp)).isTrue();
    }

    @Test
    void aFileWithoutTheCheckpointMetadataIsRefusedNamingTheFile() throws Exception {
        Path file = dir.resolve("plain.safetensors");
        new SafetensorsWriter().add("hidden", HostTensor.ofFloats(new float[] {1}, 1, 1, 1)).write(file);
        MtpException e = catchThrowableOfType(MtpException.class, () -> CheckpointFiles.read(file));
        assertThat(e.kind()).isEqualTo(MtpException.Kind.MALFORMED_FILE);
        assertThat(e.getMessage()).contains(file.toString()).contains("format");
        Files.writeString(dir.resolve("junk.safetensors"), "not a safetensors file");
        MtpException junk = catchThrowableOfType(MtpException.class,
                () -> CheckpointFiles.read(dir.resolve("junk.safetensors")));
        assertThat(junk.kind()).isEqualTo(MtpException.Kind.MALFORMED_FILE);
    }

    @Test
    void writingOverAFileThatIsBeingReadLeavesTheReaderWithTheOldBytes() {
        Path file = dir.resolve("row.safetensors");
        RowCheckpoint first = new RowCheckpoint(RowCheckpoint.SCHEMA, 1, 0, "id", null, null,
                HostTensor.ofFloats(new float[] {1, 2, 3}, 1, 1, 3));
        CheckpointFiles.write(first, file);
        RowCheckpoint mapped = CheckpointFiles.read(file); // a read-only mapping of the file
        CheckpointFiles.write(new RowCheckpoint(RowCheckpoint.SCHEMA, 1, 0, "id", null, null,
                HostTensor.ofFloats(new float[] {7, 8, 9}, 1, 1, 3)), file);
        // a new file took the name (temp file + atomic rename): the mapping still shows the bytes it was made from
        assertThat(mapped.contentEquals(first)).isTrue();
        assertThat(CheckpointFiles.read(file).hidden().toFloatArray()).containsExactly(7, 8, 9);
        assertThat(dir.toFile().list()).containsExactly("row.safetensors"); // no temp file left behind
    }
}
