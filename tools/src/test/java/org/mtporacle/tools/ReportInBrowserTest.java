package org.mtporacle.tools;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.mtporacle.conformance.report.ConformReport;
import org.mtporacle.conformance.report.ReportFiles;

import javax.imageio.ImageIO;
import java.awt.image.BufferedImage;
import java.io.File;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * report.html of a real run (a passing, a failing and a within-tolerance backend, two unavailable ones) laid out by a
 * real headless Chromium: a probe script added to a copy of the page measures it after layout, and a screenshot is
 * checked for the pass and fail colours. What the page says is checked against report.json: the worst K/V NMSE shown
 * is the worst recorded anywhere (the campaign's or a failure's), the failures are grouped (the groups' counts add up
 * to every failure, each signature once), and the wording reads as words ("of 8 passed", "over the threshold"), not
 * as inequalities or progress. Skipped, saying why, where no Chromium is found (PATH, or MTP_CHROMIUM; .ci/run
 * installs Debian's chromium).
 */
class ReportInBrowserTest {
    private static final String PROBE = """
            <script>
            const q = s => [...document.querySelectorAll(s)];
            const bars = q('svg.meter rect.within, svg.meter rect.over').map(e => ({
              width: e.getBoundingClientRect().width, fill: getComputedStyle(e).fill,
              over: e.classList.contains('over')}));
            const r = {bars, ticks: q('svg.meter rect.tick').length, rows: q('table.entries tbody tr').length,
              unavailable: q('.unavailable li').map(e => e.textContent), links: q('section.fail a').map(a => a.href),
              fullFailures: q('section.fail').length, more: q('p.more').map(e => e.textContent),
              overflow: document.documentElement.scrollWidth - window.innerWidth,
              verdict: document.querySelector('header.verdict').className,
              rowTexts: q('table.entries tbody tr').map(tr => ({profile: tr.cells[0].textContent,
                chains: tr.querySelector('td.chains').innerText, kv: tr.cells[5].innerText})),
              failuresHeading: q('h2.failures').map(e => e.textContent),
              groups: q('section.fail h3').map(e => ({count: e.querySelector('.count').textContent,
                signature: e.querySelector('.signature').textContent})),
              places: q('section.fail p.places').map(e => e.textContent),
              reproduce: q('code.reproduce').map(e => e.textContent),
              body: document.body.innerText};
            const out = document.createElement('pre');
            out.id = 'probe-out';
            out.textContent = JSON.stringify(r);
            document.body.appendChild(out);
            </script>""";

    @TempDir
    Path dir;

    static Optional<Path> chromium() {
        String env = System.getenv("MTP_CHROMIUM");
        if (env != null && !env.isBlank()) {
            return Optional.of(Path.of(env));
        }
        for (String dirName : System.getenv().getOrDefault("PATH", "").split(File.pathSeparator)) {
            for (String name : List.of("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")) {
                Path p = Path.of(dirName.isEmpty() ? "." : dirName, name);
                if (Files.isExecutable(p)) {
                    return Optional.of(p);
                }
            }
        }
        return Optional.empty();
    }

    private String browser(Path chromium, String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(chromium.toString(), "--headless", "--no-sandbox", "--disable-gpu",
                "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--user-data-dir=" + Files.createTempDirectory(dir, "profile"), "--window-size=1280,1800"));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).redirectError(dir.resolve("chromium-" + System.nanoTime() + ".log")
                .toFile()).start();
        byte[] out = p.getInputStream().readAllBytes();
        assertThat(p.waitFor(90, TimeUnit.SECONDS)).as("chromium finishes").isTrue();
        return new String(out, StandardCharsets.UTF_8);
    }

    @Test
    void theReportReadsRightInARealBrowser() throws Exception {
        Optional<Path> chromium = chromium();
        Assumptions.assumeTrue(chromium.isPresent(), "no Chromium on the PATH (chromium, chromium-browser, "
                + "google-chrome) and MTP_CHROMIUM unset: report.html is not checked in a browser");
        Path report = dir.resolve("report");
        Cli run = Cli.run("conform", "--fixture", "tiny", "--chains", "8", "--report", report.toString());
        assertThat(run.exit()).as("the default run: drifting fails\n" + run.out()).isEqualTo(1);
        JsonNode json = new ObjectMapper().readTree(report.resolve("report.json").toFile());
        int ran = 0;
        int thresholds = 0;
        java.util.Set<String> reasons = new java.util.HashSet<>();
        for (JsonNode e : json.get("entries")) {
            if (e.get("status").asText().equals("UNAVAILABLE")) {
                reasons.add(e.get("reason").asText());
                continue;
            }
            ran++;
            thresholds += (e.at("/tolerance/kvNmse").asDouble() > 0 ? 1 : 0)
                    + (e.at("/tolerance/hiddenNmse").asDouble() > 0 ? 1 : 0);
        }
        assertThat(reasons).as("absent is unavailable everywhere").isNotEmpty();

        String html = Files.readString(report.resolve("report.html"));
        Path probe = report.resolve("probe.html");
        Files.writeString(probe, html.replace("</body>", PROBE + "</body>"));
        String dom = browser(chromium.get(), "--dump-dom", probe.toUri().toString());
        Matcher m = Pattern.compile("<pre id=\"probe-out\">(.*?)</pre>", Pattern.DOTALL).matcher(dom);
        assertThat(m.find()).as("the probe ran in the browser:\n" + dom).isTrue();
        JsonNode r = new ObjectMapper().readTree(m.group(1).replace("&lt;", "<").replace("&gt;", ">")
                .replace("&amp;", "&"));

        assertThat(r.get("rows").asInt()).as("one row per entry that ran").isEqualTo(ran).isGreaterThanOrEqualTo(3);
        assertThat(r.get("bars")).as("two meters (K/V, hidden) per entry").hasSize(2 * ran);
        for (JsonNode bar : r.get("bars")) {
            assertThat(bar.get("width").asDouble()).as("no zero-width bar").isGreaterThanOrEqualTo(3);
            assertThat(bar.get("fill").asText()).isEqualTo(bar.get("over").asBoolean() ? "rgb(198, 40, 40)"
                    : "rgb(46, 125, 50)");
        }
        assertThat(r.get("ticks").asInt()).as("a tolerance mark wherever the threshold is not 0")
                .isEqualTo(thresholds).isPositive();
        assertThat(r.get("unavailable")).as("one line per reason, not per entry").hasSize(reasons.size());
        int failures = 0;
        JsonNode drifting = null;
        for (JsonNode e : json.get("entries")) {
            if (e.get("profile").asText().equals("drifting")) {
                drifting = e;
                failures = e.get("failures").size();
            }
        }
        assertThat(drifting).as("the failing entry").isNotNull();
        assertThat(failures).isEqualTo(8);
        int checked = 0;
        for (JsonNode x : r.get("rowTexts")) {
            assertThat(x.get("chains").asText()).as("chains read as a count of passes")
                    .containsPattern("^\\d+ of \\d+ passed").doesNotContain(" / ");
            for (JsonNode e : json.get("entries")) {
                if (!e.get("profile").asText().equals(x.get("profile").asText())
                        || e.get("status").asText().equals("UNAVAILABLE")) {
                    continue;
                }
                // the worst K/V NMSE recorded anywhere in report.json: the campaign's, or any failure's evidence
                double worst = e.at("/stats/maxKvNmse").asDouble();
                for (JsonNode f : e.get("failures")) {
                    String tensor = f.at("/details/tensor").asText("");
                    if (tensor.equals("keys") || tensor.equals("values")) {
                        worst = Math.max(worst, f.at("/details/nmse").asDouble());
                    }
                }
                double threshold = e.at("/tolerance/kvNmse").asDouble();
                String kv = x.get("kv").asText();
                assertThat(kv).doesNotContain("exceeded").doesNotContain("≤");
                if (threshold > 0) {
                    assertThat(kv).as(x.get("profile") + ": the headline is the worst recorded").startsWith(
                            (worst == 0 ? "0 (identical)" : String.format(java.util.Locale.ROOT, "%.2g", worst))
                                    + (worst > threshold ? ", over the threshold " : ", within "));
                    checked++;
                }
            }
        }
        assertThat(checked).as("rows with a K/V threshold").isPositive();        int groups = r.get("groups").size();
        // the failures the report records (the test backends drifting and drifting-late fail every chain), counted in
        // report.json independently of the page
        long recorded = 0;
        for (JsonNode e : json.get("entries")) {
            recorded += e.get("failures").size();
        }
        assertThat(recorded).as("failures in report.json").isGreaterThanOrEqualTo(8);
        assertThat(r.get("failuresHeading").get(0).asText()).isEqualTo("Failures: " + recorded + " failures, "
                + groups + " distinct");
        int inGroups = 0;
        long failingEntries = 0;
        for (JsonNode e : json.get("entries")) {
            failingEntries += e.get("failures").isEmpty() ? 0 : 1;
        }
        java.util.Map<String, Integer> signatures = new java.util.HashMap<>();
        for (JsonNode g : r.get("groups")) {
            inGroups += Integer.parseInt(g.get("count").asText().replace("×", "").strip());
            assertThat(signatures.merge(g.get("signature").asText(), 1, Integer::sum)).as("each signature once per "
                    + "failing entry").isLessThanOrEqualTo((int) failingEntries);
        }
        assertThat(groups).as("the failing chains fail the same few ways").isBetween(1, 5).isLessThan(8);
        assertThat(inGroups).as("the groups hold every failure").isEqualTo(recorded);
        assertThat(r.get("reproduce").get(0).asText()).isEqualTo("mtp conform --seed 1 --chains 8 --max-actions 30 "
                + "--fixture tiny");
        assertThat(r.get("body").asText()).doesNotContain("exceeded").doesNotContain("σ=");
        boolean located = false;
        for (JsonNode f : drifting.get("failures")) {
            located |= f.at("/details/largestDifference").isTextual();
        }
        if (located) {
            assertThat(r.get("places").get(0).asText()).as("where the tensor differs most")
                    .containsPattern("Where the tensor differs most: kv head \\d+, position \\d+, dim \\d+ \\(\\d+×\\)");
        }
        for (JsonNode link : r.get("links")) {
            assertThat(Path.of(URI.create(link.asText()))).as("each trace link opens a trace").isRegularFile();
        }
        assertThat(r.get("overflow").asInt()).as("no horizontal scrolling at 1280 px").isLessThanOrEqualTo(0);
        assertThat(r.get("verdict").asText()).contains("FAILED");

        Path png = report.resolve("report.png");
        browser(chromium.get(), "--screenshot=" + png, "--hide-scrollbars", report.resolve("report.html").toUri()
                .toString());
        BufferedImage img = ImageIO.read(png.toFile());
        assertThat(img).as("a screenshot was written").isNotNull();
        assertThat(pixels(img, 198, 40, 40)).as("red: the verdict and the failing entry").isGreaterThan(500);
        assertThat(pixels(img, 46, 125, 50)).as("green: bars within tolerance, passed badges").isGreaterThan(100);
        String keep = System.getenv("MTP_REPORT_SCREENSHOT"); // to look at: a PNG of this failing campaign
        if (keep != null) {
            Files.copy(png, Path.of(keep), java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        }
        try (Stream<Path> s = Files.list(report.resolve("traces"))) {
            assertThat(s.count()).as("a trace per failure").isEqualTo(recorded);
        }
    }

    /**
     * 75 chains failing one way, with K/V NMSE from 0.53 to 0.93 in their evidence while the campaign's own worst
     * says 0.39 (a shrunk chain is another chain): in the browser the headline says 0.93, over the threshold, and the
     * failures read as one group of 75 with the places where the tensor differs most.
     */
    @Test
    void aFailingCampaignShowsItsWorstAndItsFailuresGrouped() throws Exception {
        Optional<Path> chromium = chromium();
        Assumptions.assumeTrue(chromium.isPresent(), "no Chromium on the PATH (chromium, chromium-browser, "
                + "google-chrome) and MTP_CHROMIUM unset: report.html is not checked in a browser");
        List<ConformReport.FailureRecord> f = new ArrayList<>();
        for (int i = 0; i < 75; i++) {
            java.util.Map<String, Object> d = new java.util.LinkedHashMap<>();
            d.put("kind", "CHECKPOINT_TENSOR");
            d.put("tensor", "keys");
            d.put("nmse", 0.53 + 0.4 * i / 74);
            d.put("threshold", 1e-9);
            d.put("largestDifference", (i < 60 ? "kv head 1, position 4, dim 9" : "kv head 0, position 4, dim 2")
                    + ": 0.7 vs 0.1 (40 of 64 elements differ)");
            f.add(new ConformReport.FailureRecord(1000 + i, 30, List.of("append [-1]", "prefill L=5 seed=" + i,
                    "draft depth=3 greedy seed=" + i, "commit full seed=" + i), 3, "CHECKPOINT",
                    "commit full: keys NMSE " + d.get("nmse") + " > 1e-09 f32", d, null));
        }
        ConformReport.Entry e = new ConformReport.Entry("drifting", "drifting", java.util.Map.of(), "tiny", "", "",
                org.mtporacle.api.Tolerance.F32, "f64", ConformReport.Status.FAILED, "", 100, 25, 4,
                new ConformReport.Stats(800, 0, 400, 0.39, 0, 10, 0), f);
        ConformReport report = new ConformReport("t", "now", 3, 100, List.of("1/1"), "synthetic", List.of(e),
                new ConformReport.Plan(1, 30, List.of("drifting"), List.of("tiny")), List.of());
        Path out = dir.resolve("seventy-five");
        ReportFiles.write(report, out);
        Path probe = out.resolve("probe.html");
        Files.writeString(probe, Files.readString(out.resolve("report.html")).replace("</body>", PROBE + "</body>"));
        String dom = browser(chromium.get(), "--dump-dom", probe.toUri().toString());
        Matcher m = Pattern.compile("<pre id=\"probe-out\">(.*?)</pre>", Pattern.DOTALL).matcher(dom);
        assertThat(m.find()).as("the probe ran in the browser:\n" + dom).isTrue();
        JsonNode r = new ObjectMapper().readTree(m.group(1).replace("&lt;", "<").replace("&gt;", ">")
                .replace("&amp;", "&"));
        JsonNode row = r.get("rowTexts").get(0);
        assertThat(row.get("kv").asText()).startsWith("0.93, over the threshold 1.0e-09");
        assertThat(row.get("chains").asText()).startsWith("25 of 100 passed");
        assertThat(r.get("failuresHeading").get(0).asText()).isEqualTo("Failures: 75 failures, 1 distinct");
        assertThat(r.get("groups")).hasSize(1);
        assertThat(r.get("groups").get(0).get("count").asText()).isEqualTo("75 ×");
        assertThat(r.get("groups").get(0).get("signature").asText()).isEqualTo("CHECKPOINT keys at \"commit full\"");
        assertThat(r.get("places").get(0).asText()).isEqualTo("Where the tensor differs most: kv head 1, position 4, "
                + "dim 9 (60×); kv head 0, position 4, dim 2 (15×).");
        assertThat(r.get("reproduce").get(0).asText()).isEqualTo("mtp conform --seed 3 --chains 100 --max-actions 30 "
                + "--backend drifting --fixture tiny");
        assertThat(r.get("body").asText()).doesNotContain("0.39").doesNotContain("exceeded");
        assertThat(r.get("overflow").asInt()).as("no horizontal scrolling at 1280 px").isLessThanOrEqualTo(0);
        String keep = System.getenv("MTP_REPORT_SCREENSHOT_GROUPED");
        if (keep != null) {
            browser(chromium.get(), "--screenshot=" + keep, "--hide-scrollbars", out.resolve("report.html").toUri()
                    .toString());
        }
    }

    private static long pixels(BufferedImage img, int r, int g, int b) {
        long n = 0;
        for (int y = 0; y < img.getHeight(); y++) {
            for (int x = 0; x < img.getWidth(); x++) {
                int p = img.getRGB(x, y);
                if (Math.abs((p >> 16 & 255) - r) < 8 && Math.abs((p >> 8 & 255) - g) < 8
                        && Math.abs((p & 255) - b) < 8) {
                    n++;
                }
            }
        }
        return n;
    }
}
