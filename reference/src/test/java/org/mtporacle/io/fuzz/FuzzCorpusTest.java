package org.mtporacle.io.fuzz;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/** The committed fuzz corpus: present for every target, small, and regenerable from the project's writers. */
class FuzzCorpusTest {
    /** The corpus stays small enough to replay on every build. */
    static final long MAX_CORPUS_BYTES = 1L << 20;

    static Path inputsRoot() {
        return Path.of(System.getProperty("mtp.repo.root", "..")).resolve(
                "reference/src/test/resources/org/mtporacle/io/fuzz/ParserFuzzTestInputs");
    }

    @Test
    void everyTargetHasSeedsAndTheCorpusIsSmall() throws IOException {
        long total = 0;
        for (String target : new String[] {"safetensors", "config", "modelDirectory", "checkpoint"}) {
            Path dir = inputsRoot().resolve(target);
            try (Stream<Path> s = Files.list(dir)) {
                var files = s.toList();
                assertThat(files).as(target).anyMatch(p -> p.getFileName().toString().startsWith("seed-"));
                for (Path f : files) {
                    total += Files.size(f);
                }
            }
        }
        assertThat(total).as("corpus bytes").isLessThan(MAX_CORPUS_BYTES);
    }

    /** The seeds are valid files, so fuzzing starts deep in each parser rather than at its first check. */
    @Test
    void everySeedParsesAndRuns() throws IOException {
        for (Path f : seeds("safetensors")) {
            try (var st = org.mtporacle.io.SafetensorsFile.open(f)) {
                assertThat(st.names()).as(f.toString()).isNotNull();
            }
        }
        for (Path f : seeds("config")) {
            org.mtporacle.io.ModelConfigReader.read(f).toMtpConfig(32, 32);
        }
        for (Path f : seeds("checkpoint")) {
            FuzzModels.exercise(FuzzModels.inMemory(), org.mtporacle.io.CheckpointFiles.read(f));
        }
        for (Path f : seeds("modelDirectory")) {
            byte[][] parts = ParserFuzzTest.splitModelDir(Files.readAllBytes(f));
            Path dir = Files.createTempDirectory("mtp-seed-");
            try {
                Files.write(dir.resolve("config.json"), parts[0]);
                Files.write(dir.resolve("model.safetensors"), parts[1]);
                if (parts[2].length > 0) {
                    Files.write(dir.resolve(org.mtporacle.io.ShardedTensorStore.TARGET_HEAD_FILE), parts[2]);
                }
                if (parts[3].length > 0) {
                    Files.write(dir.resolve(org.mtporacle.io.ShardedTensorStore.INDEX_FILE), parts[3]);
                }
                FuzzModels.exercise(org.mtporacle.io.ModelLoader.load(dir), null);
            } finally {
                ParserFuzzTest.deleteTree(dir);
            }
        }
    }

    private static java.util.List<Path> seeds(String target) throws IOException {
        try (Stream<Path> s = Files.list(inputsRoot().resolve(target))) {
            return s.filter(p -> p.getFileName().toString().startsWith("seed-")).sorted().toList();
        }
    }

    /** {@code -Dfuzz.regenerateSeeds=true} rewrites the {@code seed-*} files (crash inputs are kept). */
    @Test
    @EnabledIfSystemProperty(named = "fuzz.regenerateSeeds", matches = "true")
    void regenerateSeeds() throws IOException {
        FuzzSeeds.write(inputsRoot());
    }
}
