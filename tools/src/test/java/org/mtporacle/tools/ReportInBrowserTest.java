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
 * checked for the pass and fail colours. Skipped, saying why, where no Chromium is found (PATH, or MTP_CHROMIUM).
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
              verdict: document.querySelector('header.verdict').className};
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
                "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
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
        assertThat(r.get("fullFailures").asInt()).as("at most 5 failures in full").isEqualTo(5);
        assertThat(r.get("more").get(0).asText()).contains("3 more failures").contains("drifting @ tiny");
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
        String keep = System.getenv("MTP_REPORT_SCREENSHOT");
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
