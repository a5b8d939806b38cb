package org.mtporacle.tools;

import org.mtporacle.api.HiddenTap;
import org.mtporacle.conformance.BackendSelection;
import org.mtporacle.conformance.Conform;
import org.mtporacle.conformance.FixtureRecipe;
import org.mtporacle.conformance.loop.lockstep.LoopConform;
import org.mtporacle.conformance.report.ConformReport;
import org.mtporacle.conformance.report.ReportFiles;
import org.mtporacle.conformance.report.TextReport;
import org.mtporacle.reference.target.SpeculativeDecoding.KvPolicy;
import picocli.CommandLine.Model.CommandSpec;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * {@code mtp conform --loop}: backends' hybrid targets and drafters together, in loop chains (spec §13.5), against the
 * reference's: every backend whose {@code supportsTarget()} is true; a backend without a target is listed as
 * unavailable, asked for by name the run exits 3. {@code --tap} picks the hidden every drafter is fed (default post),
 * {@code --kv} the drafter KV policy every backend is held to (default keep; spec §13.4).
 * The first failure of an entry is shrunk and written as an {@code mtp-oracle-loop-chain} trace.
 */
final class ConformLoopCommand {
    private ConformLoopCommand() {
    }

    static Integer run(ConformCommand c) {
        CommandSpec spec = c.spec;
        Mixins.Usage.require(spec, !c.target, "--loop and --target: choose one (--loop runs the target and the "
                + "drafter together)");
        Mixins.Usage.require(spec, !c.calibrate, "--calibrate: only with --target (loop chains record no calibration "
                + "data)");
        Mixins.Usage.require(spec, c.shard.count() == 1, "--shard: not supported with --loop yet");
        Mixins.Usage.require(spec, "synthetic".equals(c.contexts.contexts), "--contexts " + c.contexts.contexts
                + ": loop chains feed each drafter its own target's taps; pick the tap with --tap");
        Mixins.Usage.require(spec, c.chains >= 1, "--chains " + c.chains + ": must be ≥ 1");
        Mixins.Usage.require(spec, c.maxActions >= 1, "--max-actions " + c.maxActions + ": must be ≥ 1");
        HiddenTap tap = c.contexts.tap == null ? HiddenTap.POST_NORM
                : Mixins.Usage.lookup(spec, () -> HiddenTap.of(c.contexts.tap));
        KvPolicy policy = c.kv == null ? KvPolicy.KEEP : Mixins.Usage.lookup(spec, () -> KvPolicy.of(c.kv));
        List<BackendSelection.Choice> selected = Mixins.Usage.lookup(spec, () -> BackendSelection.select(c.backends));
        List<String> names = c.fixtures.isEmpty() ? FixtureRecipe.TARGETS : c.fixtures;
        for (String f : names) {
            Mixins.Usage.require(spec, FixtureRecipe.TARGETS.contains(f), "--fixture " + f + ": not a target "
                    + "fixture (known: " + String.join(", ", FixtureRecipe.TARGETS) + ")");
        }
        LoopConform.Options o = new LoopConform.Options(selected, c.backends, names, c.chains, c.seed, c.maxActions,
                tap, policy, c.report, FixtureRecipe.defaultCache());
        ProgressLine progress = new ProgressLine(c.quiet.quiet || c.json.json);
        boolean live = !c.json.json;
        if (live) {
            progress.println("mtp conform --loop: " + c.chains + " chains per entry, seed " + c.seed + "; "
                    + LoopConform.contexts(tap, policy));
        }
        int chains = c.chains;
        ConformReport r = LoopConform.run(o, new Conform.Listener() {
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
        List<String> options = new ArrayList<>(policy == KvPolicy.KEEP ? List.of() : List.of("--kv",
                policy.label()));
        options.addAll(c.runOptions());
        r = r.withOptions(options);
        Path file = ReportFiles.write(r, c.report);
        if (c.json.json) {
            System.out.println(ReportFiles.toJson(r));
        } else {
            System.out.print(TextReport.footer(r));
            System.out.println("report: " + file + " and " + file.resolveSibling("report.html"));
        }
        return ConformCommand.exitCode(r);
    }
}
