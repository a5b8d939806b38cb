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
        assertThat(text).contains("FAILED mlx/native @ tiny: DRAFT_TOKEN at \"draft\": 1 failure\n"
                        + "  row 0 position 1")
                .contains("at action 2 of 3 (draft depth=2 greedy seed=2), shrunk from 21 actions")
                .contains("replay: mtp replay --backend mlx --option precision=native traces/ta.json")
                .contains("x: unavailable, not run: library not found — set X")
                .contains("FAILED: 0 of 2 entries passed, 1 failed, 1 unavailable")
                .contains("tolerance bf16: token gap 0.15, K/V NMSE 0.002, hidden NMSE 0.00001")
                .contains("tolerance x-cuda: token gap 0.01, K/V NMSE 0.0005, hidden NMSE 0.0000025");
        String html = HtmlReport.render(r);
        assertThat(html).contains("bf16 (token gap 0.15, K/V NMSE 0.002, hidden NMSE 0.00001)")
                .contains("&lt;gap&gt;").doesNotContain("<gap>").contains("<b>draft depth=2 greedy seed=2</b>")
                .contains("replay: <code>mtp replay --backend mlx --option precision=native traces/ta.json</code>");
    }

    /**
     * A target entry's footer line gives the thresholds the target kit held it to, router gap and a chain's median
     * bounds included, not the drafter-shaped reading stored in report.json (K/V NMSE = state, hidden = logits/taps).
     */
    @Test
    void aTargetEntrysToleranceLineIsTheTargetKitsReading() {
        ConformReport.Entry target = new ConformReport.Entry("mlx", "mlx/native", Map.of("precision", "native"),
                "tiny-moe-target", "target preset tiny-moe-target, seed 1, bf16 (hybrid target)", "id",
                org.mtporacle.conformance.target.lockstep.TargetTolerance.BF16.asTolerance(), "mlx cpu bf16",
                ConformReport.Status.PASSED, "", 10, 10, 1.5, ConformReport.Stats.none(), List.of());
        ConformReport r = new ConformReport("t", "now", 1, 10, List.of(), "synthetic", List.of(entry("a", false),
                target));
        String text = TextReport.render(r);
        assertThat(text).contains("tolerance bf16: token gap 0.15, K/V NMSE 0.002, hidden NMSE 0.00001\n")
                .contains("tolerance bf16 (target): token gap 4.0, logits/taps NMSE 0.25, state NMSE 0.1, router gap "
                        + "0.15, a chain's median NMSE {convWindows=0.001, keys=0.001, logits=0.002, "
                        + "recurrentStates=0.001, taps=0.002, values=0.001} over at least 8 comparisons\n");
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
        assertThat(TextReport.render(merged)).contains("near-ties mlx/native @ tiny: another token at 2 of 4 greedy "
                + "draft positions, largest gap 0.0100 within the allowance 0.15; the data ");
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

    // ---- what the report says at a glance ----------------------------------------------------------------------

    /** A K/V failure of {@code nmse} at "commit full", as the lockstep judge records it. */
    private static ConformReport.FailureRecord kvFailure(long seed, int length, double nmse, String where) {
        Map<String, Object> d = new java.util.LinkedHashMap<>();
        d.put("kind", "CHECKPOINT_TENSOR");
        d.put("side", "backend");
        d.put("row", 0);
        d.put("tensor", "keys");
        d.put("expectedShape", "F32[1, 2, 3, 16]");
        d.put("actualShape", "F32[1, 2, 3, 16]");
        d.put("nmse", nmse);
        d.put("threshold", 1e-9);
        d.put("largestDifference", where + ": 0.5 vs 0.1 (3 of 96 elements differ)");
        List<String> chain = new java.util.ArrayList<>(List.of("append [-1]", "prefill L=3 seed=" + seed,
                "draft depth=2 greedy seed=4"));
        for (int i = 0; i < length - 4; i++) {
            chain.add("capture seed=" + i);
        }
        chain.add("commit full seed=" + seed);
        return new ConformReport.FailureRecord(seed, 30, chain, chain.size() - 1, "CHECKPOINT",
                "commit full: keys NMSE " + nmse + " > 1e-09 f32", d, "traces/" + seed + ".json");
    }

    /** 75 chains failing one way, their NMSE from 0.53 to 0.93, while the campaign's own worst says 0.39. */
    private static ConformReport seventyFive() {
        List<ConformReport.FailureRecord> f = new java.util.ArrayList<>();
        for (int i = 0; i < 75; i++) {
            f.add(kvFailure(100 + i, 4 + i % 3, 0.53 + 0.4 * i / 74, i % 4 == 0 ? "kv head 1, position 2, dim 7"
                    : "kv head 0, position 2, dim 3"));
        }
        ConformReport.Stats s = new ConformReport.Stats(500, 0, 300, 0.39, 0, 4, 0);
        ConformReport.Entry e = new ConformReport.Entry("drifting", "drifting", Map.of(), "tiny", "", "",
                Tolerance.F32, "f64", ConformReport.Status.FAILED, "", 100, 25, 2, s, f);
        return new ConformReport("t", "now", 7, 100, List.of("1/1"), "synthetic", List.of(e),
                new ConformReport.Plan(1, 30, List.of("drifting"), List.of("tiny")), List.of());
    }

    @Test
    void theHeadlineWorstIsTheWorstOfTheCampaignAndItsFailures() {
        ConformReport r = seventyFive();
        double worst = 0.53 + 0.4 * 74 / 74; // the largest failure's, by construction above
        assertThat(r.entries().getFirst().worstKvNmse()).isEqualTo(worst);
        assertThat(HtmlReport.render(r)).contains("0.93, over the threshold 1.0e-09")
                .doesNotContain("0.39").doesNotContain("exceeded").doesNotContain("≤");
        assertThat(TextReport.render(r)).contains(" 9.30e-01 ");
        assertThat(HtmlReport.meterText(2.1e-12, 1e-9, 5)).isEqualTo("2.1e-12, within 1.0e-09");
        assertThat(HtmlReport.meterText(0, 0, 5)).isEqualTo("identical (exact)");
        assertThat(HtmlReport.meterText(1e-7, 0, 5)).isEqualTo("1.0e-07, differs (exact: must be identical)");
    }

    @Test
    void identicalFailuresAreOneGroupWithWhereTheTensorDiffers() {
        ConformReport r = seventyFive();
        List<FailureGroups.Group> g = FailureGroups.of(r);
        assertThat(g).hasSize(1);
        assertThat(g.getFirst().signature()).isEqualTo("CHECKPOINT keys at \"commit full\"");
        assertThat(g.getFirst().example().record().shrunkActions()).as("the shortest shrunk chain").hasSize(4);
        assertThat(g.getFirst().places()).containsExactly(Map.entry("kv head 0, position 2, dim 3", 56),
                Map.entry("kv head 1, position 2, dim 7", 19));
        String html = HtmlReport.render(r);
        assertThat(html).contains("Failures: 75 failures, 1 distinct")
                .contains("75 ×</span> drifting @ tiny: <span class=\"signature\">CHECKPOINT keys at "
                        + "&quot;commit full&quot;</span>")
                .contains("kv head 0, position 2, dim 3 (56×); kv head 1, position 2, dim 7 (19×)")
                .contains("<b>25 of 100 passed</b>");
        assertThat(html.split("<section class=\"fail\">", -1)).as("one section for the group").hasSize(2);
        String text = TextReport.render(r);
        assertThat(text).contains("failures: 75 failures, 1 distinct")
                .contains("FAILED drifting @ tiny: CHECKPOINT keys at \"commit full\": 75 failures")
                .contains("differs most at: kv head 0, position 2, dim 3 (56×)")
                .contains("reproduce: mtp conform --seed 7 --chains 100 --max-actions 30 --backend drifting "
                        + "--fixture tiny");
        assertThat(text.split("\nFAILED drifting", -1)).hasSize(2);
    }

    @Test
    void theEvidenceKeepsTheOrderTheJudgeGaveIt() {
        ConformReport.FailureRecord f = kvFailure(1, 4, 0.5, "dim 1");
        assertThat(f.details().keySet()).containsExactly("kind", "side", "row", "tensor", "expectedShape",
                "actualShape", "nmse", "threshold", "largestDifference");
        String html = HtmlReport.render(seventyFive());
        assertThat(html.indexOf("<th>kind</th>")).isLessThan(html.indexOf("<th>tensor</th>"));
        assertThat(html.indexOf("<th>tensor</th>")).isLessThan(html.indexOf("<th>nmse</th>"));
        assertThat(html.indexOf("<th>nmse</th>")).isLessThan(html.indexOf("<th>largestDifference</th>"));
    }

    @Test
    void anEntryThatRanFewerChainsThanItsCampaignSaysSo() {
        ConformReport.Entry e = new ConformReport.Entry("r", "reference", Map.of(), "tiny", "", "", Tolerance.F32,
                "", ConformReport.Status.PASSED, "", 5, 5, 1, new ConformReport.Stats(1, 0, 1, 0, 0, 0, 0), List.of());
        ConformReport r = new ConformReport("t", "now", 1, 100, List.of("1/1"), "synthetic", List.of(e), null,
                List.of(), List.of("1/1: reference @ small"));
        assertThat(HtmlReport.render(r)).contains("<b>5 of 5 passed</b>").contains("only 5 of 100 chains ran");
        assertThat(TextReport.render(r)).contains("INCOMPLETE: 1 entry had not finished")
                .contains("OK: 1 of 1 entry passed");
    }

    @Test
    void longNamesKeepTheColumnsAlignedAndColourIsOnlyWhenAsked() {
        ConformReport.Stats s = new ConformReport.Stats(1, 0, 1, 0, 0, 0, 0);
        String exec = "exec:python3 adapters/python/examples/numpy_backend.py";
        List<ConformReport.Entry> es = List.of(
                new ConformReport.Entry("r", "reference", Map.of(), "tiny", "", "", Tolerance.F32, "f64",
                        ConformReport.Status.PASSED, "", 4, 4, 1, s, List.of()),
                new ConformReport.Entry("e", exec, Map.of(), "tiny-moe-q4", "", "", Tolerance.F32, "f64",
                        ConformReport.Status.FAILED, "", 4, 3, 1, s, List.of()));
        ConformReport r = new ConformReport("t", "now", 1, 4, List.of("1/1"), "synthetic", es);
        String plain = TextReport.render(r, TextReport.Layout.of(r, false));
        List<String> rows = plain.lines().filter(l -> l.startsWith("backend") || l.startsWith("reference")
                || l.startsWith("exec:")).toList();
        assertThat(rows).hasSize(3);
        for (String column : List.of("tolerance", "status")) {
            int at = rows.getFirst().indexOf(column);
            String cell = column.equals("status") ? "passed|failed|status" : "f32|tolerance";
            for (String row : rows) {
                assertThat(row.substring(at).split(" ")[0]).as(column + " starts at column " + at + " in\n" + plain)
                        .matches(cell);
            }
        }
        assertThat(plain).doesNotContain("\u001b");
        String coloured = TextReport.render(r, TextReport.Layout.of(r, true));
        assertThat(coloured).contains("\u001b[1;31mfailed").contains("\u001b[1;31mFAILED\u001b[0m: 1 of 2 entries");
        assertThat(coloured.lines().filter(l -> l.startsWith("reference")).findFirst().orElseThrow())
                .doesNotContain("\u001b");
    }

    private static String nearTieLine(double[] differ, double[] agree) {
        org.mtporacle.conformance.compare.GapHistogram h = new org.mtporacle.conformance.compare.GapHistogram();
        for (double g : agree) {
            h.add(g, false);
        }
        for (double g : differ) {
            h.add(g, true);
        }
        ConformReport.Stats s = new ConformReport.Stats(differ.length + agree.length, differ.length, 10, 0, 0, 0,
                0.012, List.of(), ConformReport.GapData.of(h));
        return TextReport.nearTieData(new ConformReport.Entry("m", "mlx/native", Map.of(), "tiny", "", "",
                Tolerance.BF16, "", ConformReport.Status.PASSED, "", 50, 50, 1, s, List.of()));
    }

    @Test
    void theNearTieLineSaysPlainlyWhetherTheDataSupportTheAllowance() {
        // every position near a tie differed, and none agreed below 0.3: the error is as large as the gaps seen, so
        // a long campaign will meet gaps past 0.15 where the backend differs
        double[] far = new double[1000];
        for (int i = 0; i < far.length; i++) {
            far[i] = 0.3 + i * 0.0005;
        }
        String unsupported = nearTieLine(new double[] {0.004, 0.012}, far);
        assertThat(unsupported).startsWith("another token at 2 of 1002 greedy draft positions, largest gap 0.0120 "
                + "within the allowance 0.15; the data do not support the allowance (a 10,000-chain campaign like "
                + "this one needs ").doesNotContain("σ").doesNotContain("Laplace").doesNotContain("log-lik");
        // two differences at gaps of 0.0005 among a thousand agreeing positions spread from 0.001 up: a tiny error
        double[] near = new double[1000];
        for (int i = 0; i < near.length; i++) {
            near[i] = 0.001 + i * 0.0005;
        }
        assertThat(nearTieLine(new double[] {0.0005, 0.0005}, near)).contains("largest gap 0.0005 within the "
                + "allowance 0.15; the data support the allowance");
    }

    @Test
    void theTckReportListsFailuresFirstAndRulesInSpecOrder() {
        List<TckHtmlReport.Rule> rules = List.of(
                new TckHtmlReport.Rule("required_s10_1_6_rollbackIsTraceFree", "§10.1.6 rollback", "PASSED", "", 1),
                new TckHtmlReport.Rule("required_s5_8_commitKeepsAcceptedPlusOneRows", "§5.8 commit", "PASSED", "", 1),
                new TckHtmlReport.Rule("required_s10_1_11_filterRowsPermutesRows", "§10.1.11", "FAILED", "a <b>", 1),
                new TckHtmlReport.Rule("required_s10_1_2_x", "§10.1.2", "FAILED", "y", 1),
                new TckHtmlReport.Rule("optional_s7_seeded", "§7", "SKIPPED", "not applicable", 0));
        assertThat(TckHtmlReport.inSpecOrder(rules).stream().map(TckHtmlReport.Rule::rule).toList()).containsExactly(
                "required_s5_8_commitKeepsAcceptedPlusOneRows", "optional_s7_seeded", "required_s10_1_2_x",
                "required_s10_1_6_rollbackIsTraceFree", "required_s10_1_11_filterRowsPermutesRows");
        String html = TckHtmlReport.render("b", "a backend", "p", "tiny", rules, null);
        assertThat(html).contains("<header class=\"verdict FAILED\"><h1>mtp tck: b: failed</h1>")
                .contains("2 of 5 rules passed, 2 failed, 1 skipped").contains("a &lt;b&gt;").doesNotContain("<b>\n");
        int failedAt = html.indexOf("<h2 class=\"FAILED\">");
        int skippedAt = html.indexOf("<h2 class=\"SKIPPED\">");
        int passedAt = html.indexOf("<h2 class=\"PASSED\">");
        assertThat(failedAt).isPositive().isLessThan(skippedAt);
        assertThat(skippedAt).isLessThan(passedAt);
        assertThat(html.indexOf("required_s10_1_2_x")).isLessThan(html.indexOf("required_s10_1_11_filterRows"));
        assertThat(html.indexOf("required_s5_8_")).isLessThan(html.indexOf("required_s10_1_6_"));
        assertThat(html).contains(HtmlReport.CSS);
    }

    /**
     * The replay command a report prints runs as written: a trace never chooses its backend, so the command names the
     * entry's (quoted for the shell); a report of target rows reproduces with {@code --target}.
     */
    @Test
    void theCommandsAReportPrintsNameWhatTheyNeed() {
        ConformReport.Entry exec = new ConformReport.Entry("exec:python3 my engine.py", "numpy", Map.of(), "tiny", "",
                "", Tolerance.F32, "", ConformReport.Status.FAILED, "", 1, 0, 1, ConformReport.Stats.none(), List.of());
        assertThat(TextReport.replayCommand(exec, "traces/it's.json"))
                .isEqualTo("mtp replay --backend 'exec:python3 my engine.py' 'traces/it'\\''s.json'");
        // a profile's options travel on the command line too (older target traces do not carry them)
        ConformReport.Entry f32 = new ConformReport.Entry("mlx", "mlx/f32",
                Map.of("precision", "f32", "moe", "per expert"), "tiny-moe-target", "", "", Tolerance.F32, "",
                ConformReport.Status.FAILED, "", 1, 0, 1, ConformReport.Stats.none(), List.of());
        assertThat(TextReport.replayCommand(f32, "t.json"))
                .isEqualTo("mtp replay --backend mlx --option 'moe=per expert' --option precision=f32 t.json");
        ConformReport target = new ConformReport("t", "now", 3, 5, List.of("1/1"),
                org.mtporacle.conformance.target.lockstep.TargetConform.CONTEXTS, List.of(),
                new ConformReport.Plan(1, 30, List.of("reference"), List.of("tiny-target")), List.of());
        assertThat(TextReport.reproduce(target)).isEqualTo("mtp conform --seed 3 --chains 5 --max-actions 30 "
                + "--backend reference --fixture tiny-target --target");
        ConformReport calibrated = target.withOptions(List.of("--calibrate", "--plugin", "my plugins/x.jar"));
        assertThat(TextReport.reproduce(calibrated)).isEqualTo("mtp conform --seed 3 --chains 5 --max-actions 30 "
                + "--backend reference --fixture tiny-target --target --calibrate --plugin 'my plugins/x.jar'");
    }
}
