package org.mtporacle.tools;

import org.mtporacle.api.DraftModel;
import org.mtporacle.api.MtpBackend;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.UntrustedText;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.Tolerance;
import org.mtporacle.conformance.Conform;
import org.mtporacle.conformance.FixtureRecipe;
import org.mtporacle.conformance.chain.ContextSource;
import org.mtporacle.conformance.golden.GoldenDiff;
import org.mtporacle.conformance.golden.GoldenFiles;
import org.mtporacle.conformance.golden.GoldenModels;
import org.mtporacle.conformance.golden.GoldenScenarios;
import org.mtporacle.conformance.golden.GoldenTrace;
import org.mtporacle.conformance.golden.GoldenVerifier;
import org.mtporacle.conformance.golden.SpeculativeGolden;
import org.mtporacle.conformance.golden.SpeculativeGoldenVerifier;
import org.mtporacle.conformance.golden.SpeculativeGoldens;
import org.mtporacle.conformance.target.lockstep.TargetFixture;
import org.mtporacle.api.LoadedTarget;
import org.mtporacle.reference.kernels.Kernels;
import org.mtporacle.conformance.lockstep.TargetTaps;
import org.mtporacle.reference.ReferenceBackend;
import org.mtporacle.reference.ReferenceDraftModel;
import org.mtporacle.reference.kernels.KernelMode;
import org.mtporacle.reference.target.ReferenceTarget;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Parameters;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.stream.Stream;

/** {@code mtp golden}: record, verify and compare golden traces (format in golden/README.md). */
@Command(name = "golden", mixinStandardHelpOptions = true,
        subcommands = {GoldenCommand.Record.class, GoldenCommand.Verify.class, GoldenCommand.Diff.class},
        description = "Golden traces: frozen inputs and expected observables of whole lifecycles (golden/README.md).")
final class GoldenCommand implements Runnable {
    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        Mixins.Usage.missingSubcommand(spec);
    }

    /** {@code mtp golden record}. */
    @Command(name = "record", mixinStandardHelpOptions = true,
            description = {"Record golden traces from named scenarios on the reference.",
                    "With no --fixture: tiny (lifecycle, sampling), tiny-q4 (lifecycle), small (lifecycle, sampling),"
                            + " tiny-moe and tiny-moe-q4 (lifecycle) — the set committed under golden/.",
                    "--contexts target records the reference target's taps of the scenario's tokens as the contexts "
                            + "(with no --fixture: tiny-target, small-target, tiny-moe-target, both scenarios); "
                            + "the golden's name ends in -tap-pre or -tap-post."})
    static final class Record implements Callable<Integer> {
        @Option(names = "--fixture", paramLabel = "NAME",
                description = "Fixture recipe (repeatable; e.g. qwen3.5-0.8b; see `mtp fixture --list`) to record on.")
        List<String> fixtures = new ArrayList<>();

        @Option(names = "--scenario", paramLabel = "NAME",
                description = "Scenario (repeatable): lifecycle, sampling (default: the fixture's defaults, or all).")
        List<String> scenarios = new ArrayList<>();

        @Option(names = "--out", paramLabel = "DIR", defaultValue = "golden",
                description = "Output directory (default: ${DEFAULT-VALUE}).")
        Path out;

        @Option(names = "--force", description = "Replace goldens of the same name in --out (without it, a golden "
                + "that exists is refused before anything is recorded).")
        boolean force;

        @Option(names = "--speculative", description = "Record whole speculative runs instead: the reference's loop "
                + "over a target fixture's target and drafter (--fixture: tiny-target by default, small-target, "
                + "tiny-moe-target; --scenario: speculative-keep, speculative-rebuild, default both).")
        boolean speculative;

        @Mixin
        ModelOption model;

        @Mixin
        Mixins.Contexts contexts;

        @Mixin
        Mixins.Quiet quiet;

        @Spec
        CommandSpec spec;

        @Override
        public Integer call() {
            if (speculative) {
                return speculative();
            }
            ContextSource source = contexts.source();
            for (String s : scenarios) {
                Mixins.Usage.require(spec, GoldenScenarios.NAMES.contains(s), "--scenario " + s
                        + ": unknown, expected one of " + String.join(", ", GoldenScenarios.NAMES));
            }
            Map<String, List<String>> plan = new LinkedHashMap<>();
            for (FixtureRecipe own : model.recipes()) {
                plan.put(own.name(), scenarios.isEmpty() ? GoldenScenarios.NAMES : scenarios);
            }
            if (model.given() && fixtures.isEmpty()) {
                // only the user's models
            } else if (fixtures.isEmpty() && source.tap() != null) {
                for (String f : FixtureRecipe.TARGETS) {
                    plan.put(f, scenarios.isEmpty() ? GoldenScenarios.NAMES : scenarios);
                }
            } else if (fixtures.isEmpty()) {
                for (String f : GoldenScenarios.DEFAULT_FIXTURES) {
                    plan.put(f, scenarios.isEmpty() ? GoldenScenarios.DEFAULTS.get(f) : scenarios);
                }
            } else {
                for (String f : fixtures) {
                    Mixins.Usage.lookup(spec, () -> FixtureRecipe.named(f));
                    plan.put(f, scenarios.isEmpty() ? GoldenScenarios.DEFAULTS.getOrDefault(f, GoldenScenarios.NAMES)
                            : scenarios);
                }
            }
            Mixins.Usage.lookup(spec, () -> {
                Conform.checkContexts(plan.keySet().stream().map(FixtureRecipe::named).toList(), source);
                return null;
            });
            if (!force) {
                List<String> there = new ArrayList<>();
                plan.forEach((f, ss) -> ss.forEach(sc -> {
                    String name = GoldenScenarios.name(f, sc, source.tap() == null ? null : source.tap().label());
                    for (String file : List.of(name + ".json", name + ".safetensors")) {
                        if (java.nio.file.Files.exists(out.resolve(file))) {
                            there.add(file);
                        }
                    }
                }));
                if (!there.isEmpty()) {
                    throw org.mtporacle.api.MtpException.invalidArgument(out + " already holds "
                            + String.join(", ", there.size() > 4 ? there.subList(0, 4) : there)
                            + (there.size() > 4 ? " and " + (there.size() - 4) + " more" : "")
                            + " (give --force to replace them)");
                }
            }
            int total = plan.values().stream().mapToInt(List::size).sum();
            int done = 0;
            ProgressLine progress = quiet.progress();
            for (Map.Entry<String, List<String>> e : plan.entrySet()) {
                progress.update("loading " + e.getKey(), done, total, "");
                FixtureRecipe fx = FixtureRecipe.named(e.getKey());
                MtpModel model = fx.load(FixtureRecipe.defaultCache());
                try (ReferenceTarget target = source.tap() == null ? null : TargetTaps.reference(
                        fx.loadTarget(FixtureRecipe.defaultCache()), KernelMode.SCALAR,
                        Runtime.getRuntime().availableProcessors())) { // the goldens' defining order
                    TargetTaps taps = target == null ? null : new TargetTaps(target, source.tap());
                    for (String s : e.getValue()) {
                        progress.update("recording " + e.getKey() + "-" + s, done, total, "");
                        Path json = GoldenScenarios.record(model, fx.isDirectory() ? null : e.getKey(), s, out, taps);
                        done++;
                        progress.println(String.format("recorded %s (%s)", json, sizes(json)));
                    }
                }
            }
            return MtpCommand.EXIT_OK;
        }

        /** {@code --speculative}: speculative-run goldens on target fixtures ({@link SpeculativeGoldens}). */
        private Integer speculative() {
            Mixins.Usage.require(spec, !model.given() && contexts.source().tap() == null, "--speculative runs a "
                    + "target fixture's own target and drafter: --model and --contexts do not apply");
            List<String> names = fixtures.isEmpty() ? SpeculativeGoldens.DEFAULT_FIXTURES : fixtures;
            for (String f : names) {
                Mixins.Usage.require(spec, FixtureRecipe.TARGETS.contains(f), "--fixture " + f + ": not a target "
                        + "fixture (known: " + String.join(", ", FixtureRecipe.TARGETS) + ")");
            }
            for (String sc : scenarios) {
                Mixins.Usage.require(spec, SpeculativeGoldens.NAMES.contains(sc), "--scenario " + sc + ": unknown "
                        + "with --speculative, expected one of " + String.join(", ", SpeculativeGoldens.NAMES));
            }
            List<String> chosen = scenarios.isEmpty() ? SpeculativeGoldens.NAMES : scenarios;
            if (!force) {
                List<String> there = names.stream().flatMap(f -> chosen.stream().map(sc ->
                        SpeculativeGoldens.name(f, sc) + ".json")).filter(n -> Files.exists(out.resolve(n))).toList();
                if (!there.isEmpty()) {
                    throw MtpException.invalidArgument(out + " already holds " + String.join(", ", there)
                            + " (give --force to replace them)");
                }
            }
            ProgressLine progress = quiet.progress();
            int done = 0;
            for (String f : names) {
                progress.update("loading " + f, done, names.size() * chosen.size(), "");
                TargetFixture fx = TargetFixture.load(f, FixtureRecipe.defaultCache());
                for (String sc : chosen) {
                    progress.update("recording " + SpeculativeGoldens.name(f, sc), done, names.size()
                            * chosen.size(), "");
                    Path json = SpeculativeGoldens.record(fx, sc, out);
                    done++;
                    try {
                        progress.println(String.format("recorded %s (%.1f KiB)", json, Files.size(json) / 1024.0));
                    } catch (IOException e) {
                        progress.println("recorded " + json);
                    }
                }
            }
            return MtpCommand.EXIT_OK;
        }
    }

    /** {@code mtp golden verify}. */
    @Command(name = "verify", mixinStandardHelpOptions = true,
            description = {"Replay golden traces on the reference (and a backend) and check every observable with the "
                    + "conformance rules: tie-aware tokens, log-probs, checkpoint digests or NMSE.",
                    "Exit 0 when every trace passes, 1 when one diverges, 3 when one is malformed, tampered or its "
                            + "model is unavailable."})
    static final class Verify implements Callable<Integer> {
        @picocli.CommandLine.Mixin
        Mixins.Engine engine;

        @Parameters(paramLabel = "TRACE|DIR", arity = "1..*",
                description = "Golden JSON files, or directories searched for them.")
        List<Path> paths;

        @Mixin
        Mixins.Backend backend;

        @Option(names = "--tolerance", paramLabel = "exact|f32|bf16",
                description = "Tolerance profile (default: the backend's profile, exact read as f32; without --backend "
                        + "the golden's own).")
        String tolerance;

        @Option(names = "--model", paramLabel = "DIR",
                description = "Model directory, for goldens recorded on a model directory rather than a fixture.")
        Path modelDir;

        @Mixin
        Mixins.Quiet quiet;

        @Spec
        CommandSpec spec;

        @Override
        public Integer call() {
            if (tolerance != null) {
                Mixins.Usage.lookup(spec, () -> Tolerance.named(tolerance));
            }
            List<Path> files = expand(paths);
            MtpBackend b = backend.given() ? backend.resolve(null) : null;
            Map<String, MtpModel> models = new HashMap<>();
            ProgressLine progress = quiet.progress();
            int failed = 0;
            int bad = 0;
            Map<String, TargetFixture> targets = new HashMap<>();
            for (Path f : files) {
                try {
                    if (SpeculativeGolden.isGolden(f)) {
                        failed += speculative(f, b, targets) ? 0 : 1;
                        continue;
                    }
                    GoldenFiles.Golden g = GoldenFiles.read(f);
                    MtpModel model = GoldenModels.resolve(g, modelDir, FixtureRecipe.defaultCache(), models);
                    Tolerance tol = GoldenModels.tolerance(tolerance, b, backend.options, g.trace());
                    GoldenVerifier.Result r;
                    try (ReferenceDraftModel ref = ReferenceBackend.load(model, KernelMode.SCALAR,
                            Runtime.getRuntime().availableProcessors());
                         DraftModel subject = b == null ? null : b.load(model, backend.options)) {
                        String label = g.trace().name();
                        r = GoldenVerifier.verify(g, ref, subject, tol, (done, total) ->
                                progress.update(label, done, total, ""));
                    }
                    progress.finish();
                    print(f, r, tol);
                    failed += r.ok() ? 0 : 1;
                } catch (MtpException e) {
                    progress.finish();
                    if (e.kind() == MtpException.Kind.BACKEND_FAILURE && b != null) {
                        // the reference runs in process and a golden cannot make it fail so: the engine failed
                        System.out.println("FAIL " + UntrustedText.path(f) + ": the backend failed: " + e.getMessage());
                        failed++;
                    } else {
                        System.out.println("BAD  " + UntrustedText.path(f) + ": " + e.getMessage());
                        bad++;
                    }
                } catch (IllegalArgumentException e) {
                    progress.finish();
                    System.out.println("BAD  " + UntrustedText.path(f) + ": " + UntrustedText.line(e.getMessage()));
                    bad++;
                }
            }
            System.out.printf("%d golden trace(s): %d passed, %d failed, %d malformed or unavailable%n", files.size(),
                    files.size() - failed - bad, failed, bad);
            return bad > 0 ? MtpCommand.EXIT_ERROR : failed > 0 ? MtpCommand.EXIT_FAILED : MtpCommand.EXIT_OK;
        }

        /**
         * A speculative-run golden: the reference's loop on the golden's target fixture, then the backend's target and
         * drafter through the same loop; true when both pass.
         */
        private boolean speculative(Path f, MtpBackend b, Map<String, TargetFixture> targets) {
            SpeculativeGolden g = SpeculativeGolden.read(f);
            if (g.fixture() == null || !FixtureRecipe.TARGETS.contains(g.fixture())) {
                throw MtpException.malformedFile("golden " + UntrustedText.path(f) + ": model.fixture "
                        + (g.fixture() == null ? "null" : UntrustedText.quote(g.fixture())) + " is not a target "
                        + "fixture (" + String.join(", ", FixtureRecipe.TARGETS) + ")");
            }
            if (b != null && !b.supportsTarget()) {
                throw new MtpException(MtpException.Kind.UNAVAILABLE, "backend " + b.name() + " runs the drafter "
                        + "only (no hybrid target); a speculative-run golden needs both");
            }
            TargetFixture fx = targets.computeIfAbsent(g.fixture(), n -> TargetFixture.load(n,
                    FixtureRecipe.defaultCache()));
            Tolerance tol = GoldenModels.tolerance(tolerance, b, backend.options, g.tolerance());
            int threads = Runtime.getRuntime().availableProcessors();
            List<SpeculativeGoldenVerifier.Result> results;
            try (ReferenceTarget rt = new ReferenceTarget(fx.target(), new Kernels(KernelMode.SCALAR, threads));
                 ReferenceDraftModel rd = ReferenceBackend.load(fx.drafter(), KernelMode.SCALAR, threads);
                 LoadedTarget st = b == null ? null : b.loadTarget(fx.target(), backend.options);
                 DraftModel sd = b == null ? null : b.load(fx.drafter(), backend.options)) {
                results = SpeculativeGoldenVerifier.verify(g, rt, rd, st, sd, tol);
            }
            boolean ok = results.stream().allMatch(SpeculativeGoldenVerifier.Result::ok);
            System.out.println((ok ? "ok   " : "FAIL ") + f + ": a whole speculative run (tap " + g.tap().label()
                    + ", kv " + g.policy().label() + ", " + g.requests().size() + " requests)");
            for (SpeculativeGoldenVerifier.Result r : results) {
                System.out.printf("     %s: %d/%d rounds, %d tokens (%d near-ties), states %s, tolerance %s%s%n",
                        r.side(), r.roundsCompared(), r.rounds(), r.tokens(), r.nearTies(), r.digests() > 0
                                ? r.digests() + " by digest" : r.normStates() + " by P and tensor norms (a lower "
                                + "bound on their NMSE; lockstep compares the tensors)", r.tolerance(),
                        r.side().equals("backend") ? "; speculative == plain on its own target" : "");
                if (r.roundsOffPath() > 0) {
                    System.out.println("     " + r.roundsOffPath() + " rounds not compared: the run left the golden's "
                            + "path at a near-tie");
                }
                r.findings().forEach(x -> System.out.println("     " + UntrustedText.line(x)));
            }
            return ok;
        }

        private void print(Path f, GoldenVerifier.Result r, Tolerance tol) {
            System.out.printf("%s %s: %d/%d steps, %d tokens (%d near-ties), %d checkpoints%s%s, tolerance %s%n",
                    r.ok() ? "ok  " : "FAIL", f, r.stepsRun(), r.steps(), r.comparedTokens(), r.nearTies(),
                    r.comparedCheckpoints(), r.digestOnly() > 0 ? " (" + r.digestOnly() + " digest-only, not "
                            + "compared)" : "", r.router().compared() == 0 ? "" : ", " + r.router().compared()
                            + " router choices (" + r.router().nearTies() + " near-ties)", tol.describe());
            if (r.offPath() > 0) {
                System.out.println("     " + r.offPath() + " observables not compared: rows left the golden's path "
                        + "at near-ties");
            }
            if (!r.ok()) {
                if (!quiet.quiet) {
                    r.lines().forEach(l -> System.out.println("     " + UntrustedText.line(l)));
                }
                r.findings().forEach(x -> System.out.println("     step " + x.actionIndex() + " (" + x.side() + "): "
                        + UntrustedText.line(x.message())));
            }
        }
    }

    /** {@code mtp golden diff}. */
    @Command(name = "diff", mixinStandardHelpOptions = true,
            description = {"Show what changed between two golden traces, step by step (checksums are not required to "
                    + "hold).", "Exit 0 when they say the same thing, 1 when they differ."})
    static final class Diff implements Callable<Integer> {
        @Parameters(index = "0", paramLabel = "A", description = "The first golden JSON.")
        Path a;

        @Parameters(index = "1", paramLabel = "B", description = "The second golden JSON.")
        Path b;

        @Override
        public Integer call() {
            for (Path p : List.of(a, b)) {
                if (!Files.isRegularFile(p)) {
                    throw MtpException.invalidArgument("diff: " + p + ": no such file");
                }
            }
            List<String> lines = SpeculativeGolden.isGolden(a) && SpeculativeGolden.isGolden(b)
                    ? GoldenDiff.diffSpeculative(a, b) : GoldenDiff.diff(a, b);
            if (lines.isEmpty()) {
                System.out.println("no differences");
                return MtpCommand.EXIT_OK;
            }
            System.out.println("--- " + a);
            System.out.println("+++ " + b);
            lines.forEach(System.out::println);
            return MtpCommand.EXIT_FAILED;
        }
    }

    /** Files as given, directories expanded to the golden JSON files they hold (sorted). */
    static List<Path> expand(List<Path> paths) {
        List<Path> out = new ArrayList<>();
        for (Path p : paths) {
            if (Files.isDirectory(p)) {
                try (Stream<Path> s = Files.walk(p)) {
                    s.filter(x -> x.toString().endsWith(".json"))
                            .filter(x -> GoldenFiles.isGolden(x) || SpeculativeGolden.isGolden(x)).sorted()
                            .forEach(out::add);
                } catch (IOException e) {
                    throw MtpException.invalidArgument("verify: cannot list " + p + " (" + e.getMessage() + ")");
                }
            } else if (Files.isRegularFile(p)) {
                out.add(p);
            } else {
                throw MtpException.invalidArgument("verify: " + p + ": no such file or directory");
            }
        }
        if (out.isEmpty()) {
            throw MtpException.invalidArgument("verify: no golden traces found in " + paths);
        }
        return out;
    }

    static String sizes(Path json) {
        try {
            Path st = json.resolveSibling(json.getFileName().toString().replaceAll("\\.json$", ".safetensors"));
            return String.format("%.1f KiB JSON + %.1f KiB tensors", Files.size(json) / 1024.0,
                    Files.size(st) / 1024.0);
        } catch (IOException e) {
            return "size unknown";
        }
    }
}
