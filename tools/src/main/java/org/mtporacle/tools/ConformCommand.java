package org.mtporacle.tools;

import org.mtporacle.api.MtpBackend;
import org.mtporacle.api.MtpBackends;
import org.mtporacle.api.MtpException;
import org.mtporacle.conformance.Conform;
import org.mtporacle.conformance.FixtureRecipe;
import org.mtporacle.conformance.chain.ChainGenerator;
import org.mtporacle.conformance.report.ConformReport;
import org.mtporacle.conformance.report.ReportFiles;
import org.mtporacle.conformance.report.TextReport;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;

/** {@code mtp conform}: every available backend against the reference on the bundled fixtures. */
@Command(name = "conform", mixinStandardHelpOptions = true, subcommands = ConformCommand.Merge.class,
        description = {"Run lockstep conformance chains of backends against the reference.",
                "With no options: every available backend profile on the bundled fixtures (tiny, tiny-q4, small, "
                        + "small-q4). Exit 0 only if every entry passed; unavailable backends are listed with the "
                        + "reason and do not fail the run."})
final class ConformCommand implements Callable<Integer> {
    @Option(names = "--backend", paramLabel = "NAME",
            description = "Backend or profile to run (repeatable; default: all found, e.g. reference, mlx/native).")
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

    @Option(names = "--shard", paramLabel = "K/N",
            description = "Run only the K-th of N disjoint ranges of chains; combine with `mtp conform merge`.")
    String shard;

    @Option(names = "--report", paramLabel = "DIR", defaultValue = "mtp-reports/conform",
            description = "Where report.json, report.html and failing traces go (default: ${DEFAULT-VALUE}).")
    Path report;

    @Option(names = "--json", description = "Print report.json to standard output instead of the summary.")
    boolean json;

    @Option(names = "--quiet", description = "No progress bar.")
    boolean quiet;

    @Override
    public Integer call() {
        int[] sh = parseShard(shard);
        if (chains < 1) {
            throw MtpException.invalidArgument("--chains " + chains + " must be ≥ 1");
        }
        if (maxActions < 1) {
            throw MtpException.invalidArgument("--max-actions " + maxActions + " must be ≥ 1");
        }
        List<MtpBackend> selected = new ArrayList<>();
        for (String name : backends) {
            if (MtpBackends.isFactoryName(name)) {
                selected.add(MtpBackends.byName(name)); // exec:COMMAND, an engine in another process
            }
        }
        for (MtpBackend b : MtpBackends.all()) {
            boolean wanted = backends.isEmpty() || backends.contains(b.name())
                    || b.profiles().stream().anyMatch(p -> backends.contains(p.label()));
            if (wanted) {
                selected.add(b);
            }
        }
        for (String name : backends) {
            boolean known = selected.stream().anyMatch(b -> b.name().equals(name)
                    || b.profiles().stream().anyMatch(p -> p.label().equals(name)));
            if (!known) {
                throw MtpException.invalidArgument("--backend " + name + ": no such backend or profile (known: "
                        + String.join(", ", MtpBackends.all().stream().flatMap(b -> b.profiles().stream())
                        .map(p -> p.label()).toList()) + ")");
            }
        }
        List<FixtureRecipe> recipes = fixtures.isEmpty() ? FixtureRecipe.BUNDLED
                : fixtures.stream().map(FixtureRecipe::named).toList();
        ChainGenerator.Limits d = ChainGenerator.Limits.defaults();
        Conform.Options o = new Conform.Options(selected, backends, recipes, chains, seed, sh[0], sh[1], report,
                FixtureRecipe.defaultCache(), new ChainGenerator.Limits(maxActions, d.maxRows(), d.maxDepth(),
                d.maxPrefill(), d.badRate(), d.stochasticRate()));
        ProgressLine progress = new ProgressLine(quiet || json);
        ConformReport r = Conform.run(o, new Conform.Listener() {
            String label = "";
            long failed;

            @Override
            public void entryStarted(String profile, String fixture) {
                label = profile + " @ " + fixture;
                failed = 0;
            }

            @Override
            public void chainDone(long done, long total, boolean passed) {
                failed += passed ? 0 : 1;
                progress.update(label, done, total, failed == 0 ? "" : failed + " failed");
            }

            @Override
            public void entryDone(ConformReport.Entry entry) {
                progress.finish();
            }
        });
        Path file = ReportFiles.write(r, report);
        if (json) {
            System.out.println(ReportFiles.toJson(r));
        } else {
            System.out.print(TextReport.render(r));
            System.out.println("report: " + file + " and " + file.resolveSibling("report.html"));
        }
        return r.ok() ? MtpCommand.EXIT_OK : MtpCommand.EXIT_FAILED;
    }

    /** {@code "K/N"} → {index K−1, N}; null → {0, 1}. */
    static int[] parseShard(String s) {
        if (s == null) {
            return new int[] {0, 1};
        }
        String[] p = s.split("/");
        try {
            int k = Integer.parseInt(p[0].trim());
            int n = Integer.parseInt(p[1].trim());
            if (p.length == 2 && n >= 1 && k >= 1 && k <= n) {
                return new int[] {k - 1, n};
            }
        } catch (RuntimeException ignored) {
            // reported below
        }
        throw MtpException.invalidArgument("--shard '" + s + "': expected K/N with 1 ≤ K ≤ N, e.g. 2/8");
    }

    /** {@code mtp conform merge}: one report out of shard reports. */
    @Command(name = "merge", mixinStandardHelpOptions = true,
            description = "Merge the report.json files of the shards of one campaign into one report.")
    static final class Merge implements Callable<Integer> {
        @Parameters(paramLabel = "REPORT", arity = "1..*", description = "report.json files (or their directories).")
        List<Path> reports;

        @Option(names = "--report", paramLabel = "DIR", defaultValue = "mtp-reports/merged",
                description = "Where the merged report goes (default: ${DEFAULT-VALUE}).")
        Path out;

        @Option(names = "--json", description = "Print the merged report.json instead of the summary.")
        boolean json;

        @Override
        public Integer call() {
            List<ConformReport> parts = new ArrayList<>();
            for (Path p : reports) {
                Path f = java.nio.file.Files.isDirectory(p) ? p.resolve("report.json") : p;
                if (!java.nio.file.Files.isRegularFile(f)) {
                    throw MtpException.invalidArgument("merge: " + f + " does not exist");
                }
                parts.add(ReportFiles.read(f));
            }
            ConformReport merged = ReportFiles.merge(parts);
            Path file = ReportFiles.write(merged, out);
            if (json) {
                System.out.println(ReportFiles.toJson(merged));
            } else {
                System.out.print(TextReport.render(merged));
                System.out.println("report: " + file);
            }
            return merged.ok() ? MtpCommand.EXIT_OK : MtpCommand.EXIT_FAILED;
        }
    }
}
