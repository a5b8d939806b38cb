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

    /** {@code -Dfuzz.regenerateSeeds=true} rewrites the {@code seed-*} files (crash inputs are kept). */
    @Test
    @EnabledIfSystemProperty(named = "fuzz.regenerateSeeds", matches = "true")
    void regenerateSeeds() throws IOException {
        FuzzSeeds.write(inputsRoot());
    }
}
