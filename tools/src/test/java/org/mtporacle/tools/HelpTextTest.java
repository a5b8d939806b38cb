package org.mtporacle.tools;

import org.junit.jupiter.api.Test;
import org.mtporacle.conformance.FixtureRecipe;
import org.mtporacle.reference.fixture.FixtureModels;
import org.mtporacle.reference.fixture.TargetFixtures;
import picocli.CommandLine;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Every command's {@code --help}, as a new user reads it: within 80 columns, no name cut across two lines, every
 * preset listed where presets are asked for, {@code exec:} named by conform, the engine options only where an engine
 * starts, and no raw picocli split syntax.
 */
class HelpTextTest {
    private static final int WIDTH = 80;

    /** Every command path ("conform", "conform merge", …) with its help text. */
    private static Map<String, String> helps() {
        Map<String, String> out = new LinkedHashMap<>();
        collect(MtpCommand.commandLine(), new ArrayList<>(), out);
        return out;
    }

    private static void collect(CommandLine cl, List<String> path, Map<String, String> out) {
        List<String> args = new ArrayList<>(path);
        args.add("--help");
        Cli r = Cli.run(args.toArray(String[]::new));
        assertThat(r.exit()).as(String.join(" ", args)).isZero();
        out.put(String.join(" ", path), r.out());
        cl.getSubcommands().forEach((name, sub) -> {
            if (!name.equals("help")) {
                List<String> p = new ArrayList<>(path);
                p.add(name);
                collect(sub, p, out);
            }
        });
    }

    /** Names a line break must never cut: every preset and fixture recipe, and a few long identifiers. */
    private static List<String> names() {
        List<String> n = new ArrayList<>();
        FixtureModels.PRESETS.forEach(p -> n.add(p.name()));
        TargetFixtures.PRESETS.forEach(p -> n.add(p.name()));
        Stream.concat(FixtureRecipe.BUNDLED.stream(), FixtureRecipe.EXTRA.stream()).forEach(r -> n.add(r.name()));
        n.addAll(List.of("org.mtporacle.api.MtpBackend", "mtp-reports/conform", "mtp-reports/tck"));
        return n;
    }

    @Test
    void everyHelpFitsEightyColumnsAndCutsNoName() {
        Map<String, String> helps = helps();
        assertThat(helps.keySet()).contains("", "conform", "conform merge", "golden record", "bench", "fixture",
                "completion");
        List<String> problems = new ArrayList<>(); // every problem at once
        for (Map.Entry<String, String> h : helps.entrySet()) {
            String cmd = "mtp " + h.getKey() + " --help";
            for (String line : h.getValue().lines().toList()) {
                if (line.length() > WIDTH) {
                    problems.add(cmd + ": " + line.length() + " columns: " + line);
                }
            }
            // with each line break and the next line's indent removed, a name cut across two lines is whole again
            String joined = h.getValue().replaceAll("\\R\\s*", "");
            for (String name : names()) {
                if (count(h.getValue(), name) != count(joined, name)) {
                    problems.add(cmd + ": '" + name + "' cut across lines");
                }
            }
        }
        assertThat(problems).isEmpty();
    }

    @Test
    void fixtureHelpListsEveryPresetAndRecipe() {
        String help = Cli.run("fixture", "--help").out();
        for (String name : names().subList(0, names().size() - 3)) {
            assertThat(help).as(name).containsPattern("(^|[\\s,(])" + java.util.regex.Pattern.quote(name)
                    + "([\\s,.;)]|$)");
        }
        assertThat(help).contains("tiny-moe", "qwen3.5-35b-a3b", "qwen3-next-80b-a3b-target", "tiny-moe-target");
    }

    @Test
    void conformHelpNamesExecEnginesAndBenchShowsPlainListSyntax() {
        assertThat(Cli.run("conform", "--help").out()).contains("exec:COMMAND");
        String bench = Cli.run("bench", "--help").out();
        assertThat(bench).contains("--batches=B[,B...]").doesNotContain("[,B[,B...]...]")
                .doesNotContain("...]...]");
    }

    @Test
    void engineOptionsAppearOnlyWhereABackendStarts() {
        List<String> engines = List.of("conform", "tck", "replay", "golden verify", "bench", "checkpoint", "backends",
                "serve-wire");
        for (Map.Entry<String, String> h : helps().entrySet()) {
            boolean engine = engines.contains(h.getKey());
            assertThat(h.getValue().contains("--plugin=JAR")).as("mtp " + h.getKey() + " --help lists --plugin")
                    .isEqualTo(engine);
            assertThat(h.getValue().contains("--timeout=SECONDS")).as("mtp " + h.getKey() + " --timeout")
                    .isEqualTo(engine);
        }
        assertThat(Cli.run("--plugin", "/nonexistent.jar", "backends").out()).as("before the command still works")
                .contains("/nonexistent.jar");
    }

    @Test
    void completionPrintsABashScriptCoveringEveryCommand() {
        Cli r = Cli.run("completion");
        assertThat(r.exit()).isZero();
        assertThat(r.out()).contains("complete -F").contains("conform").contains("golden").contains("--fixture")
                .contains("serve-wire");
    }

    private static int count(String s, String part) {
        int n = 0;
        for (int i = s.indexOf(part); i >= 0; i = s.indexOf(part, i + 1)) {
            n++;
        }
        return n;
    }
}
