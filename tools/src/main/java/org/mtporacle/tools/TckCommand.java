package org.mtporacle.tools;

import org.mtporacle.conformance.report.TckHtmlReport;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.engine.support.descriptor.MethodSource;
import org.junit.platform.launcher.Launcher;
import org.junit.platform.launcher.LauncherDiscoveryRequest;
import org.junit.platform.launcher.TestExecutionListener;
import org.junit.platform.launcher.TestIdentifier;
import org.junit.platform.launcher.TestPlan;
import org.junit.platform.launcher.core.LauncherDiscoveryRequestBuilder;
import org.junit.platform.launcher.core.LauncherFactory;
import org.mtporacle.api.BackendProfile;
import org.mtporacle.api.MtpBackend;
import org.mtporacle.api.UntrustedText;
import org.mtporacle.api.MtpBackends;
import org.mtporacle.api.MtpException;
import org.mtporacle.conformance.BackendSelection;
import org.mtporacle.conformance.Conform;
import org.mtporacle.conformance.FixtureRecipe;
import org.mtporacle.conformance.chain.ContextSource;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;

import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectMethod;

/** {@code mtp tck}: every rule of the backend TCK from the shell, for any backend, in-process or {@code exec:}. */
@Command(name = "tck", mixinStandardHelpOptions = true,
        description = {"Run every rule of the backend TCK (BackendVerification) against one backend, with the "
                + "rules' own names, and write a report (console, report.json, report.html).",
                "Works for in-process backends and for engines in another language: --backend exec:'COMMAND ARGS'. "
                        + "Exit 0 when no rule failed, 1 otherwise."})
final class TckCommand implements Callable<Integer> {
    @picocli.CommandLine.Mixin
    Mixins.Engine engine;

    @picocli.CommandLine.Spec
    picocli.CommandLine.Model.CommandSpec spec;

    @Option(names = "--backend", paramLabel = "NAME",
            description = "The backend, a profile label, or exec:'COMMAND ARGS' (required unless --list-rules).")
    String backend;

    @Option(names = "--rule", paramLabel = "NAME", split = ",",
            description = "Run only these rules (repeatable or comma-separated; names from --list-rules).")
    List<String> onlyRules = new ArrayList<>();

    @Option(names = "--list-rules", description = "Print every rule's name and what it checks, then exit.")
    boolean listRules;

    @Option(names = "--fail-fast", description = "Stop at the first failing rule; the rules not run are reported "
            + "skipped.")
    boolean failFast;

    @Option(names = "--expected-failures", paramLabel = "FILE",
            description = "Known failures, one rule name a line (# comments): listed rules may fail; a new failure "
                    + "or a listed rule that passes fails the run.")
    Path expectedFailures;

    @Option(names = "--junit", paramLabel = "FILE", description = "Also write the rules' outcomes as JUnit XML.")
    Path junit;

    @Option(names = "--profile", paramLabel = "LABEL",
            description = "Which of the backend's profiles (options and tolerance) to check (default: its first).")
    String profileLabel;

    @Option(names = "--chains", paramLabel = "N", defaultValue = "40",
            description = "Random chains per lockstep rule (default: ${DEFAULT-VALUE}).")
    int chains;

    @Option(names = "--prefill-split", paramLabel = "L", defaultValue = "2050",
            description = "Length of the prefill-split rule's prefill; the default crosses the 2048 chunk "
                    + "(default: ${DEFAULT-VALUE}).")
    int prefillSplit;

    @Option(names = "--fixture", paramLabel = "NAME",
            description = "The unquantized fixture the rules run on, e.g. tiny-moe or small (default: tiny; "
                    + "tiny-target with --contexts target; `mtp fixture --list`).")
    String fixture;

    @Option(names = "--quantized-fixture", paramLabel = "NAME",
            description = "The quantized fixture of the quantized-weights rule (default: the --fixture's -q4 "
                    + "sibling where there is one, else tiny-q4).")
    String quantizedFixture;

    @Option(names = "--report", paramLabel = "DIR", defaultValue = "mtp-reports/tck",
            description = "Where report.json and report.html go (default: ${DEFAULT-VALUE}).")
    Path report;

    @Option(names = "--json", description = "Print report.json to standard output instead of the rule lines.")
    boolean json;

    @picocli.CommandLine.Mixin
    ModelOption model;

    @picocli.CommandLine.Mixin
    Mixins.Contexts contexts;

    /** One rule's outcome. */
    record Rule(String rule, String title, String status, String message, double seconds) {
    }

    /** Every rule of the TCK in its order: method name → what it checks (discovery only, nothing runs). */
    static Map<String, String> allRules() {
        return rules(TckSubject.class, TargetTckSubject.class);
    }

    /** The rules to run: all (the target's too for a backend that runs the target), or those named, each in its class. */
    private static List<? extends org.junit.platform.engine.DiscoverySelector> selectors(List<String> only,
                                                                                        boolean target) {
        if (only.isEmpty()) {
            return target ? List.of(selectClass(TckSubject.class), selectClass(TargetTckSubject.class))
                    : List.of(selectClass(TckSubject.class));
        }
        java.util.Set<String> targetRules = rules(TargetTckSubject.class).keySet();
        return only.stream().distinct().filter(r -> target || !targetRules.contains(r))
                .map(r -> selectMethod(targetRules.contains(r) ? TargetTckSubject.class : TckSubject.class, r))
                .toList();
    }

    private static Map<String, String> rules(Class<?>... subjects) {
        TestPlan plan = LauncherFactory.create().discover(LauncherDiscoveryRequestBuilder.request()
                .selectors(java.util.Arrays.stream(subjects).map(
                        org.junit.platform.engine.discovery.DiscoverySelectors::selectClass).toList()).build());
        Map<String, String> out = new LinkedHashMap<>();
        for (TestIdentifier root : plan.getRoots()) {
            plan.getDescendants(root).stream().filter(TestIdentifier::isTest)
                    .forEach(t -> out.put(ruleName(t), t.getDisplayName()));
        }
        return out;
    }

    @Override
    public Integer call() {
        report = report.toAbsolutePath().normalize(); // the paths printed work from any folder
        if (listRules) {
            allRules().forEach((rule, title) -> System.out.printf(Locale.ROOT, "%-62s %s%n", rule, title));
            return MtpCommand.EXIT_OK;
        }
        Mixins.Usage.require(spec, backend != null, "--backend NAME is required (or --list-rules)");
        Map<String, String> known = allRules();
        for (String r : onlyRules) {
            Mixins.Usage.require(spec, known.containsKey(r), "--rule " + r + ": no such rule (see `mtp tck "
                    + "--list-rules`)");
        }
        ExpectedFailures expected = expectedFailures == null ? null : ExpectedFailures.read(expectedFailures);
        if (expected != null) {
            Mixins.Usage.lookup(spec, () -> {
                expected.requireKnown(known.keySet(), "rule");
                return null;
            });
        }
        Mixins.Usage.require(spec, chains >= 1, "--chains " + chains + ": must be ≥ 1");
        Mixins.Usage.require(spec, prefillSplit >= 2, "--prefill-split " + prefillSplit + ": must be ≥ 2");
        ContextSource source = contexts.source();
        Mixins.Usage.require(spec, model.dirs.size() <= 1, "--model: given " + model.dirs.size()
                + " times, the TCK checks one model (run it once per model)");
        FixtureRecipe own = model.given() ? model.recipes().getFirst() : null;
        boolean ownQuantized = own != null && own.bits() != 0;
        Mixins.Usage.require(spec, own == null || (ownQuantized ? quantizedFixture == null : fixture == null),
                "--model " + (own == null ? "" : own.name()) + ": it is the " + (ownQuantized ? "quantized" : "dense")
                        + " model of the rules, so --" + (ownQuantized ? "quantized-fixture" : "fixture")
                        + " cannot be given too");
        String denseName = fixture != null ? fixture : own != null && !ownQuantized ? own.name()
                : source.tap() == null ? "tiny" : "tiny-target";
        FixtureRecipe dense = own != null && !ownQuantized ? own
                : Mixins.Usage.lookup(spec, () -> FixtureRecipe.named(denseName));
        Mixins.Usage.require(spec, dense.bits() == 0,
                "--fixture " + denseName + ": is " + dense.bits() + "-bit quantized; name an unquantized fixture "
                        + "(the quantized one goes to --quantized-fixture)");
        FixtureRecipe quantized = ownQuantized ? own : Mixins.Usage.lookup(spec, () -> FixtureRecipe.named(
                quantizedFixture != null ? quantizedFixture : quantizedSibling(denseName, source)));
        Mixins.Usage.require(spec, quantized.bits() != 0,
                "--quantized-fixture " + quantized.name() + ": is not quantized (name one with affine weights)");
        Mixins.Usage.lookup(spec, () -> {
            Conform.checkContexts(List.of(dense, quantized), source);
            return null;
        });
        MtpBackend b = Mixins.Usage.lookup(spec, this::resolve);
        BackendProfile p = Mixins.Usage.lookup(spec, () -> profile(b));
        BackendSelection.requireAvailable(b); // asked for by name: unavailable is exit 3, not a run of skips
        Handshakes.require(List.of(b)); // an engine that cannot answer hello: one line, exit 3
        TckSubject.configure(b, p, chains, prefillSplit, dense, quantized, source);
        TckSubject.stopAfterFailure(failFast);
        boolean target = TargetTckSubject.applies(b); // the target rules (spec §13) for a backend that runs it
        TargetTckSubject.configure(b, p, chains, "tiny-target");
        if (!json) {
            System.out.println("mtp tck: " + UntrustedText.clip(b.name()) + " (profile " + UntrustedText.clip(p.label())
                    + ", options " + UntrustedText.clip(p.options().toString()) + ", tolerance "
                    + UntrustedText.clip(p.tolerance().describe()) + "; fixtures " + dense.name() + " and "
                    + quantized.name() + ")");
            System.out.println("contexts of the lockstep rules: " + source.describe());
            System.out.println(target ? "target rules (spec §13): on tiny-target; the §12 rule on tiny-moe-target and "
                    + "tiny-moe-next-target" : "target rules: none (this backend runs the drafter only)");
        }
        Map<String, Rule> rules = new LinkedHashMap<>();
        Map<String, Long> started = new LinkedHashMap<>();
        String[] containerProblem = {null};
        TestExecutionListener listener = new TestExecutionListener() {
            @Override
            public void testPlanExecutionStarted(TestPlan plan) {
                for (TestIdentifier root : plan.getRoots()) {
                    plan.getDescendants(root).stream().filter(TestIdentifier::isTest).forEach(t ->
                            rules.put(t.getUniqueId(), new Rule(ruleName(t), t.getDisplayName(), "NOT RUN", "", 0)));
                }
            }

            @Override
            public void executionStarted(TestIdentifier id) {
                started.put(id.getUniqueId(), System.nanoTime());
            }

            @Override
            public void executionSkipped(TestIdentifier id, String reason) {
                if (id.isTest()) {
                    finish(id, "SKIPPED", reason);
                }
            }

            @Override
            public void executionFinished(TestIdentifier id, TestExecutionResult r) {
                String message = r.getThrowable().map(t -> String.valueOf(t.getMessage())).orElse("");
                if (id.isTest()) {
                    finish(id, switch (r.getStatus()) {
                        case SUCCESSFUL -> "PASSED";
                        case ABORTED -> "SKIPPED";
                        case FAILED -> "FAILED";
                    }, message);
                    if (r.getStatus() == TestExecutionResult.Status.FAILED) {
                        TckSubject.failed(ruleName(id));
                    }
                } else if (r.getStatus() != TestExecutionResult.Status.SUCCESSFUL && containerProblem[0] == null) {
                    containerProblem[0] = (r.getStatus() == TestExecutionResult.Status.ABORTED ? "skipped: " : "failed: ")
                            + message;
                }
            }

            private void finish(TestIdentifier id, String status, String message) {
                Long t0 = started.get(id.getUniqueId());
                double s = t0 == null ? 0 : (System.nanoTime() - t0) / 1e9;
                Rule r = new Rule(ruleName(id), id.getDisplayName(), status, message == null ? "" : message, s);
                rules.put(id.getUniqueId(), r);
                if (!json) {
                    System.out.println(line(r));
                }
            }
        };
        LauncherDiscoveryRequest request = LauncherDiscoveryRequestBuilder.request()
                .selectors(selectors(onlyRules, target)).build();
        org.mtporacle.conformance.report.ReportFiles.checkWritable(report); // before any rule runs
        Launcher launcher = LauncherFactory.create();
        long t0 = System.nanoTime();
        launcher.execute(request, listener);
        double seconds = (System.nanoTime() - t0) / 1e9;
        List<Rule> all = new ArrayList<>();
        for (Rule r : rules.values()) {
            all.add(r.status().equals("NOT RUN") && containerProblem[0] != null
                    ? new Rule(r.rule(), r.title(), containerProblem[0].startsWith("skipped") ? "SKIPPED" : "FAILED",
                    containerProblem[0], 0) : r);
        }
        long failed = all.stream().filter(r -> r.status().equals("FAILED")).count();
        long passed = all.stream().filter(r -> r.status().equals("PASSED")).count();
        long skipped = all.size() - failed - passed;
        Map<String, Object> doc = new LinkedHashMap<>();
        doc.put("format", "mtp-tck-report-1");
        doc.put("created", Instant.now().toString());
        doc.put("backend", b.name());
        doc.put("description", b.description());
        doc.put("profile", p.label());
        doc.put("options", p.options());
        doc.put("tolerance", p.tolerance());
        doc.put("fixture", dense.name());
        doc.put("quantizedFixture", quantized.name());
        doc.put("contexts", source.describe());
        doc.put("chainsPerRule", chains);
        doc.put("seconds", seconds);
        doc.put("passed", passed);
        doc.put("failed", failed);
        doc.put("skipped", skipped);
        if (containerProblem[0] != null) {
            doc.put("problem", containerProblem[0]);
        }
        doc.put("rules", all);
        String jsonText;
        try {
            jsonText = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValueAsString(doc);
            Files.createDirectories(report);
            Files.writeString(report.resolve("report.json"), jsonText + "\n");
            Files.writeString(report.resolve("report.html"), TckHtmlReport.render(b.name(), b.description(),
                    p.label() + ", options " + p.options() + ", tolerance " + p.tolerance().describe(), dense.name()
                            + " and " + quantized.name() + "; contexts of the lockstep rules: " + source.describe(),
                    all.stream().map(r -> new TckHtmlReport.Rule(r.rule(), r.title(), r.status(), r.message(),
                            r.seconds())).toList(), containerProblem[0]));
        } catch (IOException e) {
            throw new UncheckedIOException("tck: cannot write the report under " + report, e);
        }
        if (junit != null) {
            JUnitXml.write(junit, "mtp tck " + b.name() + " (" + p.label() + ")", all.stream().map(r ->
                    new JUnitXml.Case("mtp.tck", r.rule(), r.status(), r.message(), r.seconds())).toList(), seconds);
        }
        ExpectedFailures.Judgement judged = expected == null ? null : expected.judge(
                all.stream().filter(r -> r.status().equals("FAILED")).map(Rule::rule).toList(),
                all.stream().filter(r -> r.status().equals("PASSED")).map(Rule::rule).toList());
        boolean ok = judged == null ? failed == 0 : judged.ok();
        if (json) {
            System.out.println(jsonText);
        } else {
            if (containerProblem[0] != null) {
                System.out.println("the TCK class " + UntrustedText.line(containerProblem[0]));
            }
            System.out.printf(Locale.ROOT, "%n%s: %d rules passed, %d failed, %d skipped (%.1f s)%nreport: %s and %s%n",
                    ok ? "OK" : "FAILED", passed, failed, skipped, seconds, report.resolve("report.json"),
                    report.resolve("report.html"));
            if (judged != null) {
                judged.lines(expected.file()).forEach(System.out::println);
            }
            if (junit != null) {
                System.out.println("junit: " + junit);
            }
        }
        return ok ? MtpCommand.EXIT_OK : MtpCommand.EXIT_FAILED;
    }

    /**
     * {@code small → small-q4} where that recipe exists, else {@code tiny-q4} ({@code tiny-target-q4} for target
     * contexts, which need a fixture with a target).
     */
    static String quantizedSibling(String fixture, ContextSource contexts) {
        String sibling = fixture + "-q4";
        boolean known = java.util.stream.Stream.concat(FixtureRecipe.BUNDLED.stream(), FixtureRecipe.EXTRA.stream())
                .anyMatch(r -> r.name().equals(sibling));
        return known ? sibling : contexts.tap() == null ? "tiny-q4" : "tiny-target-q4";
    }

    private MtpBackend resolve() {
        if (MtpBackends.isFactoryName(backend)) {
            return MtpBackends.byName(backend);
        }
        // a backend name or one of its profile labels
        for (MtpBackend b : MtpBackends.all()) {
            if (b.name().equals(backend) || b.profiles().stream().anyMatch(p -> p.label().equals(backend))) {
                if (profileLabel == null && !b.name().equals(backend)) {
                    profileLabel = backend;
                }
                return b;
            }
        }
        return BackendSelection.byName(backend); // fails naming the known backends and profiles
    }

    private BackendProfile profile(MtpBackend b) {
        List<BackendProfile> ps = b.profiles();
        if (profileLabel == null) {
            return ps.getFirst();
        }
        return ps.stream().filter(p -> p.label().equals(profileLabel)).findFirst().orElseThrow(() ->
                MtpException.invalidArgument("--profile " + profileLabel + ": " + b.name() + " has no such profile "
                        + "(known: " + String.join(", ", ps.stream().map(BackendProfile::label).toList()) + ")"));
    }

    static String ruleName(TestIdentifier t) {
        return t.getSource().filter(MethodSource.class::isInstance).map(s -> ((MethodSource) s).getMethodName())
                .orElse(t.getDisplayName());
    }

    static String line(Rule r) {
        String mark = switch (r.status()) {
            case "PASSED" -> "pass";
            case "FAILED" -> "FAIL";
            default -> "skip";
        };
        String msg = r.message().isEmpty() || r.status().equals("PASSED") ? ""
                : "\n      " + UntrustedText.line(r.message().lines().findFirst().orElse(""));
        return String.format(Locale.ROOT, "  %s %-62s %s%s", mark, r.rule(), r.title(), msg);
    }
}
