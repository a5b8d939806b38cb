package org.mtporacle.conformance.report;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.mtporacle.api.Tolerance;
import org.mtporacle.api.MtpException;

/** report.json is read by the strict reader: no duplicates, no trailing content, no fractions, no missing fields. */
class ReportReadingTest {
    @TempDir
    Path dir;

    private String valid() {
        ConformReport.Stats s = new ConformReport.Stats(100, 3, 40, 1.5e-4, 0, 7, 0.05);
        ConformReport r = new ConformReport("t", "now", 1, 20, List.of("1/2"), "synthetic", List.of(
                new ConformReport.Entry("reference", "reference/vector", Map.of(), "tiny", "tiny: recipe", "id", Tolerance.F32, "f32", ConformReport.Status.PASSED, "", 10, 10, 1.5, s, List.of())));
        return ReportFiles.toJson(r);
    }

    private void assertRefused(String json, String... message) throws IOException {
        Path f = dir.resolve("report.json");
        Files.writeString(f, json);
        assertThatThrownBy(() -> ReportFiles.read(f)).isInstanceOfSatisfying(MtpException.class, e -> {
            assertThat(e.kind()).isEqualTo(MtpException.Kind.MALFORMED_FILE);
            assertThat(e.getMessage()).contains(message).doesNotContain("\n");
        });
    }

    @Test
    void aValidReportReads() throws IOException {
        Path f = dir.resolve("report.json");
        Files.writeString(f, valid());
        assertThat(ReportFiles.read(f).entries()).hasSize(1);
    }

    /**
     * A plan's other options (the reproduce line's {@code --calibrate}, {@code --kv}, …) are absent from reports written
     * before them, which read as none; shards whose options differ are two campaigns, but a timeout is not.
     */
    @Test
    void aPlanWithoutOptionsReadsAsNoneAndShardsWithOtherOptionsDoNotMerge() throws IOException {
        ConformReport.Plan p = new ConformReport.Plan(2, 30, List.of("reference"), List.of("tiny-target"),
                List.of("--calibrate"));
        ConformReport a = new ConformReport("t", "now", 1, 20, List.of("1/2"), "target rows", List.of(), p, List.of());
        com.fasterxml.jackson.databind.ObjectMapper json = new com.fasterxml.jackson.databind.ObjectMapper();
        var tree = json.readTree(ReportFiles.toJson(a));
        assertThat(tree.get("plan").get("options").toString()).isEqualTo("[\"--calibrate\"]");
        ((com.fasterxml.jackson.databind.node.ObjectNode) tree.get("plan")).remove("options");
        Path f = dir.resolve("report.json");
        Files.writeString(f, json.writeValueAsString(tree));
        ConformReport old = ReportFiles.read(f);
        assertThat(old.plan().options()).isEmpty();
        ConformReport b = new ConformReport("t", "now", 1, 20, List.of("2/2"), "target rows", List.of(),
                new ConformReport.Plan(2, 30, List.of("reference"), List.of("tiny-target")), List.of());
        assertThatThrownBy(() -> ReportFiles.merge(List.of(a, b))).hasMessageContaining("options [] vs [--calibrate]");
        ConformReport slower = b.withOptions(List.of("--calibrate", "--timeout", "600"));
        assertThat(ReportFiles.merge(List.of(a, slower)).shards()).containsExactly("1/2", "2/2");
    }

    @Test
    void duplicatesTrailingContentAndFractionsAreRefused() throws IOException {
        String v = valid();
        assertRefused(v.replaceFirst("\"seed\" : 1", "\"seed\" : 1, \"seed\" : 2"), "Duplicate field 'seed'");
        assertRefused(v + " []", "not valid JSON");
        assertRefused(v.replaceFirst("\"chains\" : 20", "\"chains\" : 20.5"), "not a conform report");
        assertRefused(v.replaceFirst("\"seed\" : 1", "\"seed\" : 1e400"), "outside the finite double range");
    }

    @Test
    void missingFieldsAreRefusedBeforeMergeWouldTripOnThem() throws IOException {
        String v = valid();
        com.fasterxml.jackson.databind.ObjectMapper json = new com.fasterxml.jackson.databind.ObjectMapper();
        var tree = json.readTree(v);
        ((com.fasterxml.jackson.databind.node.ObjectNode) tree.get("entries").get(0)).putNull("stats");
        assertRefused(json.writeValueAsString(tree), "entry 0 lacks");
        assertRefused(v.replaceFirst("\"status\" : \"PASSED\"", "\"status\" : null"), "entry 0");
        assertRefused(v.replaceFirst("\"entries\" : \\[", "\"entries\" : [ null, "), "not a conform report");
    }
}
