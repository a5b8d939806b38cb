package org.mtporacle.conformance.report;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.Tolerance;
import org.mtporacle.conformance.BackendSelection;
import org.mtporacle.conformance.Conform;
import org.mtporacle.conformance.FixtureRecipe;
import org.mtporacle.conformance.chain.ChainGenerator;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A conform run stopped early (a CI time limit, a lost machine) keeps what it finished: the report on disk after
 * every entry holds the finished entries and names the rest, and a merge of such a shard says so instead of passing
 * the campaign on fewer entries.
 */
class StoppedRunTest {
    @TempDir
    Path dir;

    @Test
    void theReportOnDiskAfterEachEntryHoldsWhatFinishedAndNamesWhatDidNot() {
        List<FixtureRecipe> fixtures = List.of(FixtureRecipe.named("tiny"), FixtureRecipe.named("tiny-q4"));
        List<BackendSelection.Choice> choices = BackendSelection.select(List.of("reference"));
        Conform.Options o = new Conform.Options(choices, List.of("reference"), fixtures, 2, 7, 0, 1, dir,
                Path.of("target", "fixture-cache"), ChainGenerator.Limits.defaults());
        List<ConformReport> seen = new ArrayList<>();
        ConformReport done = Conform.run(o, new Conform.Listener() {
            @Override
            public void entryStarted(String profile, String fixture) {
                if (fixture.equals("tiny-q4")) { // the run is stopped here: what does the folder hold?
                    seen.add(ReportFiles.read(dir.resolve("report.json")));
                }
            }

            @Override
            public void chainDone(long done, long total, boolean passed) {
            }

            @Override
            public void entryDone(ConformReport.Entry entry) {
            }
        });
        assertThat(seen).hasSize(choices.size());
        ConformReport stopped = seen.getFirst();
        assertThat(stopped.entries()).extracting(ConformReport.Entry::fixture).containsOnly("tiny");
        assertThat(stopped.unfinished()).isNotEmpty().allMatch(u -> u.startsWith("1/1: ") && u.endsWith(" @ tiny-q4"));
        assertThat(stopped.isPartial()).isTrue();
        assertThat(TextReport.render(stopped)).contains("INCOMPLETE: ").contains("had not finished");
        assertThat(done.unfinished()).isEmpty();
        assertThat(done.entries()).hasSize(2 * choices.size());
    }

    @Test
    void aMergeOfAStoppedShardIsRefusedUnlessPartialIsAllowed() {
        ConformReport.Stats s = new ConformReport.Stats(100, 3, 40, 1.5e-4, 0, 7, 0.05);
        ConformReport.Entry tiny = new ConformReport.Entry("reference", "reference/vector", Map.of(), "tiny",
                "tiny: recipe", "id", Tolerance.F32, "f32", ConformReport.Status.PASSED, "", 10, 10, 1.5, s, List.of());
        ConformReport.Plan plan = new ConformReport.Plan(2, 30, List.of(), List.of("tiny", "small"));
        ConformReport one = new ConformReport("t", "now", 1, 20, List.of("1/2"), "synthetic", List.of(tiny), plan,
                List.of(), List.of());
        ConformReport two = new ConformReport("t", "now", 1, 20, List.of("2/2"), "synthetic", List.of(tiny), plan,
                List.of(), List.of("2/2: reference/vector @ small"));
        List<ReportFiles.Part> parts = List.of(new ReportFiles.Part("a", one), new ReportFiles.Part("b", two));
        assertThatThrownBy(() -> ReportFiles.merge(parts, false)).isInstanceOfSatisfying(MtpException.class, e -> {
            assertThat(e.kind()).isEqualTo(MtpException.Kind.INVALID_ARGUMENT);
            assertThat(e.getMessage()).contains("1 entry had not finished").contains("2/2: reference/vector @ small")
                    .contains("--allow-partial");
        });
        ConformReport merged = ReportFiles.merge(parts, true);
        assertThat(merged.unfinished()).containsExactly("2/2: reference/vector @ small");
        assertThat(merged.missingShards()).isEmpty();
        assertThat(merged.isPartial()).isTrue();
        assertThat(HtmlReport.render(merged, dir)).contains("Incomplete: 1 entry had not finished");
    }
}
