package org.mtporacle.tools;

import org.mtporacle.conformance.BackendSelection;
import org.mtporacle.conformance.Conform;
import org.mtporacle.conformance.FixtureRecipe;
import org.mtporacle.conformance.chain.ChainGenerator;
import org.mtporacle.conformance.chain.ContextSource;
import org.mtporacle.conformance.report.ConformReport;
import org.mtporacle.conformance.report.ReportFiles;
import org.mtporacle.conformance.report.TextReport;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;

/** {@code mtp conform}: every available backend against the reference on the bundled fixtures. */
@Command(name = "conform", mixinStandardHelpOptions = true, subcommands = ConformCommand.Merge.class,
        description = {"Run lockstep conformance chains of backends against the reference.",
                "With no options: every backend profile found on the bundled fixtures (dense and MoE: tiny, "
                        + "tiny-q4, small, small-q4, tiny-moe, tiny-moe-q4, small-moe, small-moe-q4); unavailable backends are listed with the reason and do not fail the run. A "
                        + "backend asked for with --backend must run: unavailable, the run exits 3.",
                "--contexts target feeds every chain the taps of the fixture's reference target (with no --fixture: "
                        + "tiny-target, small-target, tiny-moe-target).",
                "Exit 0 when every entry passed, 1 when one failed, 3 when a backend asked for is unavailable."})
final class ConformCommand implements Callable<Integer> {
    @picocli.CommandLine.Mixin
    Mixins.Engine engine;

    @Spec
    CommandSpec spec;

    @Option(names = "--backend", paramLabel = "NAME",
            description = "Backend or profile to run (repeatable; default: all found, e.g. reference, mlx/native; "
                    + "exec:COMMAND runs an engine that speaks the wire protocol, conformance/WIRE.md).")
    List<String> backends = new ArrayList<>();

    @Option(names = "--fixture", paramLabel = "NAME",
            description = "Fixture recipe (repeatable; default: the bundled ones). See `mtp fixture --list`.")
    List<String> fixtures = new ArrayList<>();

    @Option(names = "--chains", paramLabel = "N", defaultValue = "100",
            description = "Random chains per backend profile and fixture (default: ${DEFAULT-VALUE}).")
    int chains;

    @Option(names = "--seed", paramLabel = "S", defaultValue = "1", description = "Campaign seed (default: 1).")
    long seed;

    @Option(names = "--max-actions", paramLabel = "N", defaultValue = "30",
            description = "Longest chain, in actions (default: ${DEFAULT-VALUE}).")
    int maxActions;

    @Option(names = "--shard", paramLabel = "K/N", converter = Shard.Converter.class,
            description = "Run only the K-th of N disjoint ranges of chains; combine with `mtp conform merge`.")
    Shard shard = Shard.WHOLE;

    @Option(names = "--report", paramLabel = "DIR", defaultValue = "mtp-reports/conform",
            description = "Where report.json, report.html and this run's failing traces go (earlier traces there "
                    + "are removed; default: ${DEFAULT-VALUE}).")
    Path report;

    @Option(names = "--expected-failures", paramLabel = "FILE",
            description = "Known failures, one entry a line as PROFILE @ FIXTURE (# comments), e.g. "
                    + "'mlx/native @ tiny-q4': listed entries may fail; a new failure or a listed entry that passes "
                    + "fails the run.")
    Path expectedFailures;

    @Option(names = "--junit", paramLabel = "FILE", description = "Also write the entries' outcomes as JUnit XML.")
    Path junit;

    @Mixin
    ModelOption model;

    @Option(names = "--target", description = "Run target chains (spec §13.3) of the backends that run the hybrid "
            + "target, against the reference target, on the target fixtures (default tiny-target, small-target, "
            + "tiny-moe-target; also tiny-moe-next-target and tiny-wide-target when named), instead of drafter "
            + "chains.")
    boolean target;

    @Option(names = "--loop", description = "Run loop chains (spec §13.5) of the backends that run the hybrid target: "
            + "their target and drafter together as an engine runs them (each drafter fed its own target's --tap, "
            + "default post), against the reference's, on the target fixtures, instead of drafter chains.")
    boolean loop;

    @Option(names = "--calibrate", description = "With --target: record the distributions the bf16 bounds are derived "
            + "from (greedy logit gaps, NMSEs by kind) with every numeric threshold off, so chains run to their end "
            + "(conformance/SPEC.md, \"Deriving the target's bf16 bounds\").")
    boolean calibrate;

    @Mixin
    Mixins.Contexts contexts;

    @Mixin
    Mixins.Json json;

    @Mixin
    Mixins.Quiet quiet;

    @Override
    public Integer call() {
        // absolute, so the trace paths and replay commands the report prints work from any folder
        report = report.toAbsolutePath().normalize();
        if (loop) {
            return ConformLoopCommand.run(this);
        }
        if (target) {
            return ConformTargetCommand.run(this);
        }
        Mixins.Usage.require(spec, !calibrate, "--calibrate: only with --target");
        Mixins.Usage.require(spec, chains >= 1, "--chains " + chains + ": must be ≥ 1");
        Mixins.Usage.require(spec, maxActions >= 1, "--max-actions " + maxActions + ": must be ≥ 1");
        List<BackendSelection.Choice> selected = new ArrayList<>(Mixins.Usage.lookup(spec,
                () -> BackendSelection.select(backends)));
        BundledEngines.Found bundled = null;
        if (backends.isEmpty()) { // the default run: a second implementation wherever one can run
            bundled = BundledEngines.numpy(System.getProperty(BundledEngines.HOME));
            selected.addAll(bundled.choices());
        }
        Handshakes.require(selected.stream().map(BackendSelection.Choice::backend).distinct().toList());
        ContextSource source = contexts.source();
        List<FixtureRecipe> recipes = new ArrayList<>(fixtures.isEmpty() && !model.given() ? (source.tap() == null
                ? FixtureRecipe.BUNDLED : FixtureRecipe.TARGETS.stream().map(FixtureRecipe::named).toList())
                : Mixins.Usage.lookup(spec, () -> fixtures.stream().map(FixtureRecipe::named).toList()));
        recipes.addAll(model.recipes());
        Mixins.Usage.lookup(spec, () -> {
            Conform.checkContexts(recipes, source);
            return null;
        });
        ExpectedFailures expected = expectedFailures == null ? null : ExpectedFailures.read(expectedFailures);
        if (expected != null) {
            List<String> keys = new ArrayList<>();
            recipes.forEach(fx -> selected.forEach(c -> keys.add(c.label() + " @ " + fx.name())));
            Mixins.Usage.lookup(spec, () -> {
                expected.requireKnown(keys, "entry");
                return null;
            });
        }
        ChainGenerator.Limits d = ChainGenerator.Limits.defaults();
        Conform.Options o = new Conform.Options(selected, backends, recipes, chains, seed, shard.index(),
                shard.count(), report, FixtureRecipe.defaultCache(), new ChainGenerator.Limits(maxActions,
                d.maxRows(), d.maxDepth(), d.maxPrefill(), d.badRate(), d.stochasticRate()), source);
        ReportFiles.checkWritable(report); // before any work: a bad --report fails now, not after an entry ran
        ProgressLine progress = new ProgressLine(quiet.quiet || json.json);
        boolean live = !json.json;
        TextReport.Layout layout = TextReport.Layout.of(selected.stream().map(c -> c.profile().label()).toList(),
                recipes.stream().map(FixtureRecipe::name).toList(), Terminal.colour());
        if (live) {
            progress.println(TextReport.header(new ConformReport("", "", seed, chains, List.of(shard.text()),
                    source.describe(), List.of(), new ConformReport.Plan(shard.count(), maxActions, backends,
                    List.of()), List.of()), layout));
            if (bundled != null) {
                progress.println(bundled.note());
            }
        }
        try (StopOnSignal signal = new StopOnSignal("mtp conform", Duration.ofSeconds(Math.max(60,
                org.mtporacle.wire.ExecBackend.configuredTimeout().toSeconds() + 30)))) {
            return run(o, selected, expected, progress, live, signal, layout);
        }
    }

    private int run(Conform.Options o, List<BackendSelection.Choice> selected, ExpectedFailures expected,
                    ProgressLine progress, boolean live, StopOnSignal signal, TextReport.Layout layout) {
        ConformReport r = Conform.run(o, new Conform.Listener() {
            String label = "";
            long failed;

            @Override
            public void entryStarted(String profile, String fixture) {
                label = profile + " @ " + fixture;
                failed = 0;
                progress.update(label, 0, o.chains(), "");
            }

            @Override
            public void chainDone(long done, long total, boolean passed) {
                failed += passed ? 0 : 1;
                progress.update(label, done, total, failed == 0 ? "" : failed + " failed");
            }

            @Override
            public void entryDone(ConformReport.Entry entry) {
                String line = TextReport.entryLine(entry, layout);
                if (live && !line.isEmpty()) {
                    progress.println(line);
                } else {
                    progress.finish();
                }
            }

            @Override
            public boolean stopRequested() {
                return signal.requested();
            }
        });
        Path file = ReportFiles.write(r, report);
        if (junit != null) {
            JUnitXml.write(junit, "mtp conform", r.entries().stream().map(e -> new JUnitXml.Case("mtp.conform."
                    + e.profile(), e.key(), e.status().name(), e.status() == ConformReport.Status.FAILED
                    ? (e.failures().isEmpty() ? e.reason() : e.failures().getFirst().message()
                    + (e.failures().getFirst().trace() == null ? "" : "\ntrace: " + e.failures().getFirst().trace()))
                    : e.reason(), e.seconds())).toList(), r.entries().stream().mapToDouble(
                    ConformReport.Entry::seconds).sum());
        }
        ExpectedFailures.Judgement judged = expected == null ? null : expected.judge(
                r.entries().stream().filter(e -> e.status() == ConformReport.Status.FAILED)
                        .map(ConformReport.Entry::key).toList(),
                r.entries().stream().filter(e -> e.status() == ConformReport.Status.PASSED)
                        .map(ConformReport.Entry::key).toList());
        if (json.json) {
            System.out.println(ReportFiles.toJson(r));
        } else {
            System.out.print(TextReport.footer(r, layout));
            selected.stream().map(BackendSelection.Choice::backend).distinct().forEach(b -> {
                String c = Conform.coverage(b.name(), o.limits(), b.capabilities());
                if (c != null) {
                    System.out.println(c);
                }
            });
            System.out.println("report: " + file + " and " + file.resolveSibling("report.html"));
            if (judged != null) {
                judged.lines(expected.file()).forEach(System.out::println);
            }
            if (junit != null) {
                System.out.println("junit: " + junit);
            }
            selected.stream().map(BackendSelection.Choice::backend).distinct()
                    .filter(b -> b.name().equals(org.mtporacle.reference.ReferenceBackend.NAME)).forEach(b ->
                            System.out.println("note: the 'reference' entries hold the reference to itself (the "
                                    + "kit's self-check, not a second implementation); "
                                    + (selected.stream().anyMatch(c -> !c.backend().name().equals(b.name())
                                    && c.backend().availability().available())
                                    ? "the other entries compare independent implementations"
                                    : "name a backend or engine with --backend to compare one")));
            if (signal.requested()) {
                System.out.println("stopped by a signal: the report holds the " + r.entries().size() + " entries that "
                        + "ran (" + r.unfinished().size() + " unfinished, listed in it)");
            }
        }
        System.out.flush();
        if (judged != null && r.verdict() != ConformReport.Verdict.UNAVAILABLE) {
            return judged.ok() ? MtpCommand.EXIT_OK : MtpCommand.EXIT_FAILED;
        }
        return exitCode(r);
    }

    static int exitCode(ConformReport r) {
        return switch (r.verdict()) {
            case PASSED -> MtpCommand.EXIT_OK;
            case FAILED -> MtpCommand.EXIT_FAILED;
            case UNAVAILABLE -> MtpCommand.EXIT_ERROR;
        };
    }

    /** {@code --shard K/N}: index K−1 of N. */
    record Shard(int index, int count) {
        static final Shard WHOLE = new Shard(0, 1);

        String text() {
            return (index + 1) + "/" + count;
        }

        static final class Converter implements picocli.CommandLine.ITypeConverter<Shard> {
            @Override
            public Shard convert(String s) {
                String[] p = s.split("/", -1);
                try {
                    int k = Integer.parseInt(p[0].trim());
                    int n = Integer.parseInt(p[1].trim());
                    if (p.length == 2 && n >= 1 && k >= 1 && k <= n) {
                        return new Shard(k - 1, n);
                    }
                } catch (RuntimeException ignored) {
                    // reported below
                }
                throw new picocli.CommandLine.TypeConversionException("'" + s
                        + "': expected K/N with 1 ≤ K ≤ N, e.g. 2/8");
            }
        }
    }

    /** {@code mtp conform merge}: one report out of shard reports. */
    @Command(name = "merge", mixinStandardHelpOptions = true,
            description = {"Merge the report.json files of the shards of one campaign into one report.",
                    "Refuses (exit 3, naming them) reports of different campaigns, a shard given twice, and a "
                            + "missing shard unless --allow-partial. Exit 0 when every entry passed, 1 when one "
                            + "failed."})
    static final class Merge implements Callable<Integer> {
        @Spec
        CommandSpec spec;

        @Parameters(paramLabel = "REPORT", arity = "1..*", description = "report.json files (or their directories).")
        List<Path> reports;

        @Option(names = "--report", paramLabel = "DIR", defaultValue = "mtp-reports/merged",
                description = "Where the merged report goes (default: ${DEFAULT-VALUE}).")
        Path out;

        @Option(names = "--allow-partial", description = "Merge even when shards are missing; the report lists them.")
        boolean allowPartial;

        @Option(names = "--pool", description = "Pool reports of different campaigns (other seeds or chain counts) "
                + "for calibration: entries of the same profile and fixture add their chains, stats and "
                + "distributions; the contexts must agree (conformance/SPEC.md, \"Deriving the target's bf16 "
                + "bounds\").")
        boolean pool;

        @Mixin
        Mixins.Json json;

        @Override
        public Integer call() {
            List<ReportFiles.Part> parts = new ArrayList<>();
            for (Path p : reports) {
                Path f = Files.isDirectory(p) ? p.resolve("report.json") : p;
                parts.add(new ReportFiles.Part(f.toString(), ReportFiles.read(f)));
            }
            Mixins.Usage.require(spec, !(pool && allowPartial), "--pool: pools whole reports; --allow-partial is "
                    + "for shards of one campaign");
            ConformReport merged = pool ? ReportFiles.pool(parts) : ReportFiles.merge(parts, allowPartial);
            Path file = ReportFiles.write(merged, out.toAbsolutePath().normalize());
            if (json.json) {
                System.out.println(ReportFiles.toJson(merged));
            } else {
                System.out.print(TextReport.render(merged, TextReport.Layout.of(merged, Terminal.colour())));
                System.out.println("report: " + file + " and " + file.resolveSibling("report.html"));
            }
            return exitCode(merged);
        }
    }
}
