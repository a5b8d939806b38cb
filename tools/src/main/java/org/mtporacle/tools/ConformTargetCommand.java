package org.mtporacle.tools;

import org.mtporacle.conformance.BackendSelection;
import org.mtporacle.conformance.Conform;
import org.mtporacle.conformance.FixtureRecipe;
import org.mtporacle.conformance.report.ConformReport;
import org.mtporacle.conformance.report.ReportFiles;
import org.mtporacle.conformance.report.TextReport;
import org.mtporacle.conformance.target.lockstep.TargetConform;
import picocli.CommandLine.Model.CommandSpec;

import java.nio.file.Path;
import java.util.List;

/**
 * {@code mtp conform --target}: backends' hybrid targets in lockstep with the reference target (spec §13.3), every
 * backend whose {@code supportsTarget()} is true (an {@code exec:} engine claiming the wire's {@code target}
 * capability included); a backend without a target is listed as unavailable, asked for by name the run exits 3. The
 * first failure of an entry is shrunk and written as an {@code mtp-oracle-target-chain} trace. With {@code --shard K/N}
 * it runs the K-th of N disjoint ranges of the chains; {@code mtp conform merge} joins the shards' reports.
 */
final class ConformTargetCommand {
    private ConformTargetCommand() {
    }

    static Integer run(ConformCommand c) {
        CommandSpec spec = c.spec;
        List<String> backends = c.backends;
        List<String> fixtures = c.fixtures;
        int chains = c.chains;
        long seed = c.seed;
        int maxActions = c.maxActions;
        Path report = c.report;
        Mixins.Usage.require(spec, c.contexts.source().tap() == null, "--contexts target: feeds drafter chains; "
                + "--target runs target chains, which need no contexts");
        Mixins.Usage.require(spec, chains >= 1, "--chains " + chains + ": must be ≥ 1");
        Mixins.Usage.require(spec, maxActions >= 1, "--max-actions " + maxActions + ": must be ≥ 1");
        List<BackendSelection.Choice> selected = Mixins.Usage.lookup(spec, () -> BackendSelection.select(backends));
        List<String> names = fixtures.isEmpty() ? FixtureRecipe.TARGETS : fixtures;
        for (String f : names) {
            Mixins.Usage.require(spec, FixtureRecipe.TARGETS.contains(f) || FixtureRecipe.TARGET_TWINS.contains(f),
                    "--fixture " + f + ": not a target fixture (known: " + String.join(", ", FixtureRecipe.TARGETS)
                            + ", " + String.join(", ", FixtureRecipe.TARGET_TWINS) + ")");
        }
        TargetConform.Options o = new TargetConform.Options(selected, backends, names, chains, seed, maxActions,
                report, FixtureRecipe.defaultCache(), c.shard.index(), c.shard.count(), c.calibrate);
        ProgressLine progress = new ProgressLine(c.quiet.quiet || c.json.json);
        boolean live = !c.json.json;
        if (live) {
            progress.println("mtp conform --target: " + chains + " chains per entry" + (c.shard.count() == 1 ? ""
                    : " (shard " + c.shard.text() + ")") + ", seed " + seed + "; " + TargetConform.CONTEXTS);
        }
        ConformReport r = TargetConform.run(o, new Conform.Listener() {
            String label = "";
            long failed;

            @Override
            public void entryStarted(String profile, String fixture) {
                label = profile + " @ " + fixture;
                failed = 0;
                progress.update(label, 0, chains, "");
            }

            @Override
            public void chainDone(long done, long total, boolean passed) {
                failed += passed ? 0 : 1;
                progress.update(label, done, total, failed == 0 ? "" : failed + " failed");
            }

            @Override
            public void entryDone(ConformReport.Entry entry) {
                String line = TextReport.entryLine(entry);
                if (live && !line.isEmpty()) {
                    progress.println(line);
                } else {
                    progress.finish();
                }
            }
        });
        Path file = ReportFiles.write(r, report);
        if (c.json.json) {
            System.out.println(ReportFiles.toJson(r));
        } else {
            System.out.print(TextReport.footer(r));
            System.out.println("report: " + file + " and " + file.resolveSibling("report.html"));
        }
        return ConformCommand.exitCode(r);
    }
}
