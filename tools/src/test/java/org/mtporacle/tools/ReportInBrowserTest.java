package org.mtporacle.tools;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

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
        double worstKv = 0;
        JsonNode drifting = null;
        for (JsonNode e : json.get("entries")) {
            if (e.get("profile").asText().equals("drifting")) {
                drifting = e;
                worstKv = e.at("/stats/maxKvNmse").asDouble();
                for (JsonNode f : e.get("failures")) {
                    failures++;
                    String tensor = f.at("/details/tensor").asText("");
                    if (tensor.equals("keys") || tensor.equals("values")) {
                        worstKv = Math.max(worstKv, f.at("/details/nmse").asDouble());
                    }
                }
            }
        }
        assertThat(drifting).as("the failing entry").isNotNull();
        assertThat(failures).isEqualTo(8);
        String worstText = String.format(java.util.Locale.ROOT, "%.2g", worstKv);
        JsonNode row = null;
        for (JsonNode x : r.get("rowTexts")) {
            if (x.get("profile").asText().equals("drifting")) {
                row = x;
            }
            assertThat(x.get("chains").asText()).as("chains read as a count of passes")
                    .containsPattern("^\\d+ of \\d+ passed").doesNotContain(" / ");
            assertThat(x.get("kv").asText()).doesNotContain("exceeded").doesNotContain("≤");
        }
        assertThat(row).isNotNull();
        assertThat(row.get("kv").asText()).as("the headline is the worst recorded").startsWith(worstText
                + ", over the threshold ");
        assertThat(row.get("chains").asText()).startsWith(drifting.get("passed").asLong() + " of 8 passed");
        int groups = r.get("groups").size();
        assertThat(r.get("failuresHeading").get(0).asText()).isEqualTo("Failures: 8 failures, " + groups
                + " distinct");
        int inGroups = 0;
        java.util.Set<String> signatures = new java.util.HashSet<>();
        for (JsonNode g : r.get("groups")) {
            inGroups += Integer.parseInt(g.get("count").asText().replace("×", "").strip());
            assertThat(signatures.add(g.get("signature").asText())).as("each signature once").isTrue();
        }
        assertThat(groups).as("8 chains failing the same few ways").isBetween(1, 5).isLessThan(8);
        assertThat(inGroups).as("the groups hold every failure").isEqualTo(8);
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
            assertThat(s.count()).isEqualTo(8);
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
