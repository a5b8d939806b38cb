package org.mtporacle.tools;

import org.mtporacle.conformance.BackendSelection;
import org.mtporacle.conformance.Conform;
import org.mtporacle.conformance.FixtureRecipe;
import org.mtporacle.conformance.report.ConformReport;
import org.mtporacle.conformance.report.ReportFiles;
import org.mtporacle.conformance.report.TextReport;
import org.mtporacle.conformance.target.lockstep.TargetConform;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;

/** {@code mtp conform target}: backends' hybrid targets in lockstep with the reference target (spec §13.3). */
@Command(name = "target", mixinStandardHelpOptions = true,
        description = {"Run target lockstep chains (spec §13.3: prefill, verify, commit with per-row acceptance, "
                + "filterRows, capture/restore, bad calls) of every backend that runs the hybrid target against the "
                + "reference target, on the target fixtures (tiny-target, small-target, tiny-moe-target).",
                "Works for in-process backends and for engines that claim the wire's `target` capability: --backend "
                        + "exec:'COMMAND ARGS'. A backend without a target is listed as unavailable; asked for with "
                        + "--backend, the run exits 3. The first failure of an entry is shrunk and written as an "
                        + "mtp-oracle-target-chain trace.",
                "Exit 0 when every entry passed, 1 when one failed, 3 when a backend asked for is unavailable."})
final class ConformTargetCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Option(names = "--backend", paramLabel = "NAME",
            description = "Backend or profile to run (repeatable; default: all found).")
    List<String> backends = new ArrayList<>();

    @Option(names = "--fixture", paramLabel = "NAME",
            description = "Target fixture (repeatable; default: tiny-target, small-target, tiny-moe-target).")
    List<String> fixtures = new ArrayList<>();

    @Option(names = "--chains", paramLabel = "N", defaultValue = "100",
            description = "Random target chains per backend profile and fixture (default: ${DEFAULT-VALUE}).")
    int chains;

    @Option(names = "--seed", paramLabel = "S", defaultValue = "1", description = "Campaign seed (default: 1).")
    long seed;

    @Option(names = "--max-actions", paramLabel = "N", defaultValue = "30",
            description = "Longest chain, in actions (default: ${DEFAULT-VALUE}).")
    int maxActions;

    @Option(names = "--report", paramLabel = "DIR", defaultValue = "mtp-reports/conform-target",
            description = "Where report.json, report.html and this run's failing traces go (earlier traces there "
                    + "are removed; default: ${DEFAULT-VALUE}).")
    Path report;

    @Mixin
    Mixins.Json json;

    @Mixin
    Mixins.Quiet quiet;

    @Override
    public Integer call() {
        Mixins.Usage.require(spec, chains >= 1, "--chains " + chains + ": must be ≥ 1");
        Mixins.Usage.require(spec, maxActions >= 1, "--max-actions " + maxActions + ": must be ≥ 1");
        List<BackendSelection.Choice> selected = Mixins.Usage.lookup(spec, () -> BackendSelection.select(backends));
        List<String> names = fixtures.isEmpty() ? FixtureRecipe.TARGETS : fixtures;
        for (String f : names) {
            Mixins.Usage.require(spec, FixtureRecipe.TARGETS.contains(f), "--fixture " + f + ": not a target "
                    + "fixture (known: " + String.join(", ", FixtureRecipe.TARGETS) + ")");
        }
        TargetConform.Options o = new TargetConform.Options(selected, backends, names, chains, seed, maxActions,
                report, FixtureRecipe.defaultCache());
        ProgressLine progress = new ProgressLine(quiet.quiet || json.json);
        boolean live = !json.json;
        if (live) {
            progress.println("mtp conform target: " + chains + " chains per entry, seed " + seed + "; "
                    + TargetConform.CONTEXTS);
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
        if (json.json) {
            System.out.println(ReportFiles.toJson(r));
        } else {
            System.out.print(TextReport.footer(r));
            System.out.println("report: " + file + " and " + file.resolveSibling("report.html"));
        }
        return ConformCommand.exitCode(r);
    }
}
