package org.mtporacle.io.fuzz;

import com.code_intelligence.jazzer.junit.FuzzTest;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.RowCheckpoint;
import org.mtporacle.io.CheckpointFiles;
import org.mtporacle.io.ModelConfig;
import org.mtporacle.io.ModelConfigReader;
import org.mtporacle.io.ModelLoader;
import org.mtporacle.io.SafetensorsFile;
import org.mtporacle.io.ShardedTensorStore;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Comparator;
import java.util.stream.Stream;

/**
 * Fuzz targets for every parser of untrusted model-side files (safetensors, config.json, model directories,
 * checkpoint files). Each target writes the input to a temporary file, parses it, uses what it got as a caller
 * would, and checks {@link FuzzProperty}: only MtpException escapes, allocation stays bounded.
 *
 * <p>A normal test run replays {@code src/test/resources/org/mtporacle/io/fuzz/ParserFuzzTestInputs/<target>/}
 * (seeds written by {@link FuzzSeeds} plus every crash input found so far); {@code -P fuzz} fuzzes each target for
 * {@code -Dfuzz.seconds=N} (see the module pom).
 */
class ParserFuzzTest {
    static {
        warmUp();
    }

    /**
     * Runs every target once on a valid input before any is measured, so that class loading and first-use
     * initialisation (Jackson, the Vector API, the kernels) are not charged to the first fuzz input.
     */
    private static void warmUp() {
        Path dir = tempDir();
        try {
            org.mtporacle.reference.fixture.FixtureModels.write(FuzzModels.MICRO, 1, dir,
                    org.mtporacle.reference.fixture.FixtureModels.Layout.HF, org.mtporacle.api.DType.BF16, 0, 0);
            for (int i = 0; i < 2; i++) {
                FuzzModels.exercise(ModelLoader.load(dir), null);
                try (SafetensorsFile f = SafetensorsFile.open(dir.resolve("model.safetensors"))) {
                    f.names().forEach(n -> f.tensor(n).copy());
                }
            }
            MtpModel m = FuzzModels.inMemory();
            try (var d = org.mtporacle.reference.ReferenceBackend.load(m,
                    org.mtporacle.reference.kernels.KernelMode.SCALAR, 1)) {
                d.openRows(java.util.List.of()).close();
            }
        } finally {
            deleteTree(dir);
        }
    }

    /** {@code SafetensorsFile.open}, then every tensor copied and every element read. */
    @FuzzTest(maxDuration = "60s")
    void safetensors(byte[] input) {
        withFile(input, ".safetensors", file -> FuzzProperty.check("safetensors", input.length, () -> {
            try (SafetensorsFile f = SafetensorsFile.open(file)) {
                f.metadata().forEach((k, v) -> k.length());
                for (String name : f.names()) {
                    var t = f.tensor(name).copy();
                    for (long i = 0; i < t.elementCount(); i++) {
                        if (t.dtype().isFloating()) {
                            t.getDouble(i);
                        } else {
                            t.getLong(i);
                        }
                    }
                }
            }
        }));
    }

    /** {@code ModelConfigReader.read}, then the block config built from it (which validates every value). */
    @FuzzTest(maxDuration = "60s")
    void config(byte[] input) {
        withFile(input, ".json", file -> FuzzProperty.check("config", input.length, () -> {
            ModelConfig c = ModelConfigReader.read(file);
            c.toMtpConfig(32, 32);
            c.fingerprint(c.toMtpConfig(32, 32));
            if (c.quantization() != null) {
                c.quantization().specFor("fc");
            }
        }));
    }

    /**
     * {@code ModelLoader.load} on a directory whose {@code config.json}, {@code model.safetensors}, optional
     * {@code target_head.safetensors} and optional {@code model.safetensors.index.json} come from the input ({@link
     * #splitModelDir}), then a short lifecycle on the loaded model: a model that loads must run.
     */
    @FuzzTest(maxDuration = "60s")
    void modelDirectory(byte[] input) {
        byte[][] parts = splitModelDir(input);
        Path dir = tempDir();
        try {
            Files.write(dir.resolve("config.json"), parts[0]);
            Files.write(dir.resolve("model.safetensors"), parts[1]);
            if (parts[2].length > 0) {
                Files.write(dir.resolve(ShardedTensorStore.TARGET_HEAD_FILE), parts[2]);
            }
            if (parts[3].length > 0) {
                Files.write(dir.resolve(ShardedTensorStore.INDEX_FILE), parts[3]);
            }
            FuzzProperty.check("modelDirectory", input.length, () -> {
                MtpModel m = ModelLoader.load(dir);
                FuzzModels.exercise(m, null);
            });
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } finally {
            deleteTree(dir);
        }
    }

    /**
     * {@code CheckpointFiles.read}, then the checkpoint restored into a group of the in-memory micro model and run
     * for a round: a checkpoint file either fails to read or restore with MtpException, or works. A mutated file
     * rarely keeps its digest, so the checkpoint is also restored {@link RowCheckpoint#sealed() sealed}: the restore
     * and the round then see whatever content the fuzzer made.
     */
    @FuzzTest(maxDuration = "60s")
    void checkpoint(byte[] input) {
        MtpModel model = FuzzModels.inMemory();
        withFile(input, ".safetensors", file -> FuzzProperty.check("checkpoint", input.length, () -> {
            RowCheckpoint cp = CheckpointFiles.read(file);
            try {
                FuzzModels.exercise(model, cp);
            } catch (org.mtporacle.api.MtpException refused) {
                FuzzModels.exercise(model, cp.sealed());
            }
        }));
    }

    // ---- input plumbing -----------------------------------------------------------------------------------------

    /**
     * A model-directory input is {@code u32 n0, config.json, u32 n1, model.safetensors, u32 n2,
     * target_head.safetensors, rest = model.safetensors.index.json} (little-endian lengths, clamped to what is
     * there; an empty part means the file is absent).
     */
    static byte[][] splitModelDir(byte[] input) {
        ByteBuffer b = ByteBuffer.wrap(input).order(ByteOrder.LITTLE_ENDIAN);
        byte[][] out = new byte[4][];
        for (int i = 0; i < 3; i++) {
            int n = b.remaining() >= 4 ? b.getInt() : 0;
            n = (int) Math.min(Integer.toUnsignedLong(n), b.remaining());
            out[i] = new byte[n];
            b.get(out[i]);
        }
        out[3] = Arrays.copyOfRange(input, b.position(), input.length);
        return out;
    }

    /** The inverse of {@link #splitModelDir}. */
    static byte[] joinModelDir(byte[] config, byte[] model, byte[] head, byte[] index) {
        ByteBuffer b = ByteBuffer.allocate(12 + config.length + model.length + head.length + index.length)
                .order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(config.length).put(config).putInt(model.length).put(model).putInt(head.length).put(head).put(index);
        return b.array();
    }

    private interface FileUse {
        void accept(Path file);
    }

    private static void withFile(byte[] input, String suffix, FileUse use) {
        Path file;
        try {
            file = Files.createTempFile("mtp-fuzz-", suffix);
            Files.write(file, input);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        try {
            use.accept(file);
        } finally {
            try {
                Files.deleteIfExists(file);
            } catch (IOException ignored) {
                // a leftover temp file is harmless
            }
        }
    }

    private static Path tempDir() {
        try {
            return Files.createTempDirectory("mtp-fuzz-");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static void deleteTree(Path dir) {
        try (Stream<Path> s = Files.walk(dir)) {
            s.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException ignored) {
            // a leftover temp dir is harmless
        }
    }
}
