package org.mtporacle.conformance.trace;

import com.code_intelligence.jazzer.junit.FuzzTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;
import org.mtporacle.api.Tolerance;
import org.mtporacle.conformance.chain.Action;
import org.mtporacle.conformance.chain.ChainGenerator;
import org.mtporacle.conformance.compare.Divergence;
import org.mtporacle.io.fuzz.FuzzProperty;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Fuzz target for chain traces ({@link TraceFiles#read}), with the property of {@link FuzzProperty} plus a round
 * trip: whatever reads must write and read back to an equal trace. A normal test run replays
 * {@code src/test/resources/org/mtporacle/conformance/trace/TraceFuzzTestInputs/traces/}; {@code -P fuzz} fuzzes it
 * for {@code -Dfuzz.seconds=N}.
 */
class TraceFuzzTest {
    static {
        // first use of Jackson and the trace classes is not charged to the first input
        Path p = null;
        try {
            p = Files.createTempFile("mtp-trace-warm-", ".json");
            TraceFiles.write(trace(1, true), p);
            TraceFiles.read(p);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } finally {
            delete(p);
        }
    }

    @FuzzTest(maxDuration = "60s")
    void traces(byte[] input) throws IOException {
        Path file = Files.createTempFile("mtp-fuzz-", ".json");
        Path again = Files.createTempFile("mtp-fuzz-", ".json");
        try {
            Files.write(file, input);
            FuzzProperty.check("traces", input.length, () -> {
                ChainTrace t = TraceFiles.read(file);
                t.actions().forEach(Action::describe);
                TraceFiles.write(t, again);
                ChainTrace back = TraceFiles.read(again);
                if (!sameTrace(t, back)) {
                    throw new AssertionError("trace does not survive write → read: " + t + " vs " + back);
                }
            });
        } finally {
            delete(file);
            delete(again);
        }
    }

    private static boolean sameTrace(ChainTrace a, ChainTrace b) {
        return a.format().equals(b.format()) && a.fixture().equals(b.fixture())
                && a.modelIdentity().equals(b.modelIdentity()) && a.backend().equals(b.backend())
                && a.backendOptions().equals(b.backendOptions()) && a.tolerance().equals(b.tolerance())
                && a.seed() == b.seed() && a.actions().equals(b.actions()) && a.originalLength() == b.originalLength()
                && (a.divergence() == null) == (b.divergence() == null);
    }

    /** A trace of the chain of {@code seed}, with or without a divergence. */
    static ChainTrace trace(long seed, boolean diverged) {
        List<Action> actions = new ChainGenerator(ChainGenerator.Limits.defaults()).generate(seed);
        Divergence d = diverged ? new Divergence(Divergence.Kind.DRAFT_TOKEN, actions.size() - 1, "backend", 0, 1,
                new Divergence.TokenEvidence(3, 4, -1f, -1.25f, 0.25, 1e-4, true, "greedy", 7),
                "draft token differs at row 0 position 1") : null;
        return new ChainTrace(ChainTrace.FORMAT, "tiny", "abc123", "reference", Map.of("threads", "1"), Tolerance.F32,
                seed, actions, d, actions.size() + 3);
    }

    static Path inputs() {
        return Path.of(System.getProperty("mtp.repo.root", "..")).resolve(
                "conformance/src/test/resources/org/mtporacle/conformance/trace/TraceFuzzTestInputs/traces");
    }

    @Test
    void theCorpusHasSeedsAndIsSmall() throws IOException {
        FuzzProperty.assertSeededAndSmall(inputs());
    }

    /** {@code -Dfuzz.regenerateSeeds=true} rewrites the {@code seed-*} traces (crash inputs are kept). */
    @Test
    @EnabledIfSystemProperty(named = "fuzz.regenerateSeeds", matches = "true")
    void regenerateSeeds() throws IOException {
        Files.createDirectories(inputs());
        for (long seed : new long[] {3, 17, 2026}) {
            TraceFiles.write(trace(seed, seed != 17), inputs().resolve("seed-chain-" + seed + ".json"));
        }
    }

    private static void delete(Path p) {
        try {
            if (p != null) {
                Files.deleteIfExists(p);
            }
        } catch (IOException ignored) {
            // a leftover temp file is harmless
        }
    }
}
