package org.mtporacle.conformance.report;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.Tolerance;
import org.mtporacle.conformance.compare.GapHistogram;
import org.mtporacle.conformance.compare.NmseHistogram;

/** {@code mtp conform merge --pool}: reports of different seeds add up, distributions included; contexts must agree. */
class ReportPoolTest {
    @org.junit.jupiter.api.io.TempDir
    java.nio.file.Path dir;

    private static ConformReport report(long seed, int chains, String contexts, double nmse, double gap) {
        NmseHistogram h = new NmseHistogram();
        h.add(nmse);
        GapHistogram g = new GapHistogram();
        g.add(gap, true);
        ConformReport.Stats s = new ConformReport.Stats(10, 1, 5, nmse, 0, 0, 0, List.of(),
                ConformReport.GapData.of(g), null, Map.of("logits", ConformReport.NmseData.of(h)));
        return new ConformReport("t", "now", seed, chains, List.of("1/1"), contexts, List.of(new ConformReport.Entry(
                "mlx", "mlx/native", Map.of(), "tiny-target", "recipe", "id", Tolerance.BF16, "bf16",
                ConformReport.Status.PASSED, "", chains, chains, 1, s, List.of())));
    }

    @Test
    void reportsOfOtherSeedsPoolTheirChainsAndDistributions() {
        ConformReport a = report(1, 10, "target", 1e-5, 0.2);
        ConformReport b = report(2, 30, "target", 1e-3, 0.7);
        assertThatThrownBy(() -> ReportFiles.merge(List.of(new ReportFiles.Part("a", a),
                new ReportFiles.Part("b", b)), false)).isInstanceOf(MtpException.class).hasMessageContaining("seed");
        ConformReport p = ReportFiles.pool(List.of(new ReportFiles.Part("a", a), new ReportFiles.Part("b", b)));
        assertThat(p.chains()).isEqualTo(40);
        ConformReport.Entry e = p.entries().getFirst();
        assertThat(e.chainsRun()).isEqualTo(40);
        NmseHistogram logits = e.stats().nmse().get("logits").histogram();
        assertThat(logits.total()).isEqualTo(2);
        assertThat(logits.max()).isEqualTo(1e-3);
        GapHistogram gaps = e.stats().gaps().histogram();
        assertThat(gaps.differing()).isEqualTo(2);
        assertThat(gaps.maxDifferGap()).isEqualTo(0.7);
        // the pooled report reads back with its distributions
        ConformReport again = ReportFiles.read(ReportFiles.write(p, dir));
        assertThat(again.entries().getFirst().stats().nmse().get("logits").histogram().total()).isEqualTo(2);
    }

    /**
     * A pool is no campaign: its reproduce line lists the command of each pooled campaign (a pool pooled again keeps
     * its list), in the console, in report.html and through report.json, instead of one command with the first seed
     * and the summed chains, which nothing ran.
     */
    @Test
    void aPoolsReproduceLineGivesEachPooledCampaignsCommand() {
        ConformReport a = report(1, 10, "target", 1e-5, 0.2);
        ConformReport b = report(2, 30, "target", 1e-3, 0.7);
        ConformReport c = report(3, 5, "target", 1e-4, 0.1);
        ConformReport ab = ReportFiles.pool(List.of(new ReportFiles.Part("a", a), new ReportFiles.Part("b", b)));
        String one = "mtp conform --seed 1 --chains 10 --fixture tiny-target --contexts target";
        String two = "mtp conform --seed 2 --chains 30 --fixture tiny-target --contexts target";
        String three = "mtp conform --seed 3 --chains 5 --fixture tiny-target --contexts target";
        assertThat(ab.pooled()).containsExactly(one, two);
        ConformReport abc = ReportFiles.pool(List.of(new ReportFiles.Part("ab", ReportFiles.read(
                ReportFiles.write(ab, dir.resolve("ab")))), new ReportFiles.Part("c", c)));
        assertThat(abc.pooled()).containsExactly(one, two, three);
        assertThat(TextReport.footer(abc)).contains("reproduce: a pool of 3 campaigns (mtp conform merge --pool), each "
                + "run again by:\n  " + one + "\n  " + two + "\n  " + three + "\n").doesNotContain("--chains 45");
        assertThat(HtmlReport.render(abc)).contains("A pool of 3 campaigns")
                .contains("<li><code>" + two + "</code></li>");
        assertThat(TextReport.footer(a)).contains("reproduce: " + one);
    }

    @Test
    void reportsOfOtherContextsDoNotPool() {
        ConformReport a = report(1, 10, "target", 1e-5, 0.2);
        ConformReport b = report(2, 10, "synthetic", 1e-5, 0.2);
        assertThatThrownBy(() -> ReportFiles.pool(List.of(new ReportFiles.Part("a", a), new ReportFiles.Part("b", b))))
                .isInstanceOf(MtpException.class).hasMessageContaining("other contexts");
    }

    @Test
    void perChainMediansPoolAndPrintAgainstTheTypicalBound() {
        java.util.function.BiFunction<Long, Double, ConformReport> withMedian = (seed, median) -> {
            NmseHistogram h = new NmseHistogram();
            h.add(median);
            ConformReport r = report(seed, 10, "target", 1e-5, 0.2);
            ConformReport.Entry e = r.entries().getFirst();
            ConformReport.Stats s = e.stats();
            ConformReport.Stats withIt = new ConformReport.Stats(s.comparedTokens(), s.nearTies(),
                    s.comparedCheckpoints(), s.maxKvNmse(), s.maxHiddenNmse(), s.badCalls(), s.maxNearTieGap(),
                    s.nearTieGaps(), s.gaps(), s.router(), Map.of("logits", s.nmse().get("logits"), "median.keys",
                    ConformReport.NmseData.of(h)));
            return new ConformReport("t", "now", seed, 10, List.of("1/1"), "target", List.of(new ConformReport.Entry(
                    e.backend(), e.profile(), e.options(), e.fixture(), e.fixtureRecipe(), e.modelIdentity(),
                    e.tolerance(), e.numerics(), e.status(), e.reason(), 10, 10, 1, withIt, List.of())));
        };
        ConformReport p = ReportFiles.pool(List.of(new ReportFiles.Part("a", withMedian.apply(1L, 2e-5)),
                new ReportFiles.Part("b", withMedian.apply(2L, 4e-5))));
        ConformReport.Entry e = p.entries().getFirst();
        NmseHistogram medians = e.stats().nmse().get("median.keys").histogram();
        assertThat(medians.total()).isEqualTo(2);
        assertThat(medians.max()).isEqualTo(4e-5);
        assertThat(TextReport.nmseData(e)).anySatisfy(line -> assertThat(line)
                .startsWith("median.keys (per chain, of at least 8 comparisons): 2 compared")
                .endsWith("bf16's bound 0.00100 on a chain's typical NMSE"));
    }
}
