package org.mtporacle.conformance.report;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.mtporacle.api.Tolerance;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

class ReportRenderingTest {
    private static final Tolerance CUSTOM = new Tolerance("x-cuda", 0.01, 5e-4, 2.5e-6);

    @TempDir
    Path dir;

    private static ConformReport.Entry entry(String shard, boolean failed) {
        org.mtporacle.conformance.compare.GapHistogram gaps = new org.mtporacle.conformance.compare.GapHistogram();
        gaps.add(0.01, true);
        gaps.add(0.2, false);
        ConformReport.Stats s = new ConformReport.Stats(100, 3, 40, 1.5e-4, 0, 7, 0.05, List.of(),
                ConformReport.GapData.of(gaps));
        List<ConformReport.FailureRecord> f = failed ? List.of(new ConformReport.FailureRecord(77, 21,
                List.of("append [-1]", "prefill L=3 seed=1", "draft depth=2 greedy seed=2"), 2, "DRAFT_TOKEN",
                "row 0 position 1: backend drafted 5, reference 9 <gap>", Map.of("row", 0, "gap", 0.5),
                "traces/t" + shard + ".json")) : List.of();
        return new ConformReport.Entry("mlx", "mlx/native", Map.of("precision", "native"), "tiny", "tiny: recipe",
                "id", Tolerance.BF16, "mlx cpu bf16", failed ? ConformReport.Status.FAILED : ConformReport.Status.PASSED, "",
                10, failed ? 9 : 10, 1.5, s, f);
    }

    @Test
    void aFailureIsRenderedWithItsChainDetailsAndReplayCommand() {
        ConformReport r = new ConformReport("t", "now", 1, 20, List.of("1/2"), "synthetic", List.of(entry("a", true),
                new ConformReport.Entry("x", "x", Map.of(), "tiny", "", "", CUSTOM, "", ConformReport.Status.UNAVAILABLE,
                        "library not found — set X", 0, 0, 0, ConformReport.Stats.none(),
                        List.of())));
        String text = TextReport.render(r);
        assertThat(text).contains("FAILED mlx/native @ tiny: DRAFT_TOKEN: row 0 position 1")
                .contains("at action 2 of 3 (draft depth=2 greedy seed=2), shrunk from 21 actions")
                .contains("replay: mtp replay traces/ta.json").contains("x: unavailable, not run: library not found — set X")
                .contains("FAILED: 0 entries passed, 1 failed, 1 unavailable")
                .contains("tolerance bf16: token gap 0.15, K/V NMSE 0.002, hidden NMSE 0.00001")
                .contains("tolerance x-cuda: token gap 0.01, K/V NMSE 0.0005, hidden NMSE 0.0000025");
        String html = HtmlReport.render(r);
        assertThat(html).contains("bf16 (token gap 0.15, K/V NMSE 0.002, hidden NMSE 0.00001)")
                .contains("&lt;gap&gt;").doesNotContain("<gap>").contains("<b>draft depth=2 greedy seed=2</b>");
    }

    @Test
    void shardReportsMergeTheirChainsAndFailures() {
        ConformReport a = new ConformReport("t", "now", 1, 20, List.of("1/2"), "synthetic", List.of(entry("a", true)));
        ConformReport b = new ConformReport("t", "now", 1, 20, List.of("2/2"), "synthetic", List.of(entry("b", false)));
        ReportFiles.write(a, dir.resolve("a"));
        ConformReport merged = ReportFiles.merge(List.of(ReportFiles.read(dir.resolve("a/report.json")), b));
        ConformReport.Entry e = merged.entries().getFirst();
        assertThat(e.chainsRun()).isEqualTo(20);
        assertThat(e.passed()).isEqualTo(19);
        assertThat(e.failures()).hasSize(1);
        assertThat(e.status()).isEqualTo(ConformReport.Status.FAILED);
        assertThat(e.stats().comparedTokens()).isEqualTo(200);
        assertThat(e.stats().gaps().histogram().positions()).as("gap counts add up across shards").isEqualTo(4);
        assertThat(e.stats().gaps().histogram().differing()).isEqualTo(2);
        assertThat(TextReport.render(merged)).contains("near-tie data mlx/native @ tiny: 4 greedy positions, "
                + "2 differing (largest gap 0.0100)");
        assertThat(e.tolerance()).as("the profile, thresholds included, survives report.json")
                .isEqualTo(Tolerance.BF16);
        assertThat(merged.shards()).containsExactly("1/2", "2/2");
        assertThat(merged.ok()).isFalse();
    }

    private static ConformReport withTraces(List<String> traces, String message) {
        List<ConformReport.FailureRecord> f = new java.util.ArrayList<>();
        for (String t : traces) {
            f.add(new ConformReport.FailureRecord(1, 2, List.of("append [-1]"), 0, "DRAFT_TOKEN", message,
                    Map.of("engine", message), t));
        }
        ConformReport.Stats s = new ConformReport.Stats(1, 0, 0, 0, 0, 0, 0);
        return new ConformReport("t", "now", 1, 2, List.of("1/1"), "synthetic", List.of(new ConformReport.Entry(
                "x", "x", Map.of(), "tiny", "", "", Tolerance.F32, message, ConformReport.Status.FAILED, "", 2, 1, 1,
                s, f)));
    }

    @Test
    void onlyARelativePathToAFileUnderTheReportFolderBecomesALink() {
        Path folder = dir.resolve("merged");
        String inside = folder.resolve("traces/ok.json").toString();
        List<String> hostile = List.of(folder.resolve("javascript:alert(1)").toString(), "javascript:alert(2)", "/",
                "a\u0000b", folder.resolve("../outside.json").toString(), "https://example.com/x.json", inside);
        for (int i = 0; i < hostile.size(); i++) { // one failure each: the page shows the first few in full
            ConformReport r = withTraces(List.of(hostile.get(i)), "m");
            for (String html : List.of(HtmlReport.render(r, folder), HtmlReport.render(r))) {
                assertThat(html).as(hostile.get(i)).doesNotContain("href=\"javascript:")
                        .doesNotContain("href=\"/").doesNotContain("href=\"https:").doesNotContain("href=\"../")
                        .doesNotContain("\u0000").contains("Trace: ");
            }
        }
        assertThat(HtmlReport.render(withTraces(List.of(hostile.get(0)), "m"), folder))
                .contains("href=\"javascript%3Aalert(1)\""); // a file under the folder, its name encoded: relative
        assertThat(HtmlReport.render(withTraces(List.of(inside), "m"), folder)).contains("href=\"traces/ok.json\"");
    }

    @Test
    void controlAndBidiCharactersFromEngineValuesAreShownEscapedInHtml() {
        String hostile = "ok\u202Edeliaf\u0007\u001b[2J\u2066x";
        String html = HtmlReport.render(withTraces(List.of(), hostile));
        assertThat(html).doesNotContain("\u202E").doesNotContain("\u0007").doesNotContain("\u001b")
                .doesNotContain("\u2066").contains("ok\\u202edeliaf\\u0007\\u001b[2J\\u2066x");
    }
}
