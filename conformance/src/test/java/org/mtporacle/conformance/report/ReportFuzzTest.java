package org.mtporacle.conformance.report;

import com.code_intelligence.jazzer.junit.FuzzTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;
import org.mtporacle.api.Tolerance;
import org.mtporacle.io.fuzz.FuzzProperty;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Fuzz target for {@code report.json} (the input of {@code mtp conform merge}), with the property of
 * {@link FuzzProperty}: {@link ReportFiles#read}, then a merge of the report with a copy of itself under another shard
 * name, and both renderings. A normal run replays
 * {@code src/test/resources/org/mtporacle/conformance/report/ReportFuzzTestInputs/reports/}.
 */
class ReportFuzzTest {
    static {
        try {
            Path p = Files.createTempFile("mtp-report-warm-", ".json");
            Files.writeString(p, ReportFiles.toJson(sample(true)));
            ConformReport r = ReportFiles.read(p);
            TextReport.render(r);
            HtmlReport.render(r);
            Files.delete(p);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    @FuzzTest(maxDuration = "60s")
    void reports(byte[] input) throws IOException {
        Path file = Files.createTempFile("mtp-fuzz-", ".json");
        try {
            Files.write(file, input);
            FuzzProperty.check("reports", input.length, () -> {
                ConformReport r = ReportFiles.read(file);
                ConformReport other = new ConformReport(r.tool(), r.created(), r.seed(), r.chains(),
                        r.shards().stream().map(s -> s + "'").toList(), r.contexts(), r.entries());
                ConformReport m = ReportFiles.merge(List.of(r, other));
                String text = TextReport.render(m);
                HtmlReport.render(m);
                String html = HtmlReport.render(m, file.getParent().resolve("report"));
                for (int at = html.indexOf("href=\""); at >= 0; at = html.indexOf("href=\"", at + 1)) {
                    String href = html.substring(at + 6, html.indexOf('"', at + 6));
                    if (href.contains(":") || href.startsWith("/") || href.startsWith("..") || href.contains("/../")) {
                        throw new AssertionError("report.html links outside its folder: href=\"" + href + "\"");
                    }
                }
                long lines = text.lines().count();
                long failures = m.entries().stream().mapToLong(e -> e.failures().size()).sum();
                if (lines > 4 + m.entries().size() + 5 * failures + m.entries().size()) {
                    throw new AssertionError("text report has " + lines + " lines for " + m.entries().size()
                            + " entries: a value split a line");
                }
            });
        } finally {
            Files.deleteIfExists(file);
        }
    }

    /** A report with one passed entry, one unavailable and, when {@code failed}, one failure. */
    static ConformReport sample(boolean failed) {
        ConformReport.Stats s = new ConformReport.Stats(100, 3, 40, 1.5e-4, 0, 7, 0.05);
        List<ConformReport.FailureRecord> f = failed ? List.of(new ConformReport.FailureRecord(77, 21,
                List.of("append [-1]", "prefill L=3 seed=1", "draft depth=2 greedy seed=2"), 2, "DRAFT_TOKEN",
                "row 0 position 1: backend drafted 5, reference 9", Map.of("row", 0, "gap", 0.5),
                "traces/t.json")) : List.of();
        return new ConformReport("mtp test", "2026-12-01T00:00:00Z", 1, 20, List.of("1/2"), "synthetic", List.of(
                new ConformReport.Entry("reference", "reference/vector", Map.of("threads", "1"), "tiny",
                        "tiny: recipe", "id", Tolerance.F32, "f32", failed ? ConformReport.Status.FAILED
                        : ConformReport.Status.PASSED, "", 10, failed ? 9 : 10, 1.5, s, f),
                new ConformReport.Entry("mlx", "mlx/native", Map.of(), "tiny", "", "", Tolerance.BF16, "",
                        ConformReport.Status.UNAVAILABLE, "library not found", 0, 0, 0,
                        new ConformReport.Stats(0, 0, 0, 0, 0, 0, 0), List.of())));
    }

    static Path inputs() {
        return Path.of(System.getProperty("mtp.repo.root", "..")).resolve(
                "conformance/src/test/resources/org/mtporacle/conformance/report/ReportFuzzTestInputs/reports");
    }

    @Test
    void theCorpusHasSeedsAndIsSmall() throws IOException {
        FuzzProperty.assertSeededAndSmall(inputs());
    }

    /** {@code -Dfuzz.regenerateSeeds=true} rewrites the {@code seed-*} reports. */
    @Test
    @EnabledIfSystemProperty(named = "fuzz.regenerateSeeds", matches = "true")
    void regenerateSeeds() throws IOException {
        Files.createDirectories(inputs());
        Files.writeString(inputs().resolve("seed-failed.json"), ReportFiles.toJson(sample(true)));
        Files.writeString(inputs().resolve("seed-passed.json"), ReportFiles.toJson(sample(false)));
    }
}
