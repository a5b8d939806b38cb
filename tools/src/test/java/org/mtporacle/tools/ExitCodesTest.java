package org.mtporacle.tools;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.io.TempDir;
import org.mtporacle.conformance.chain.Action;
import org.mtporacle.conformance.trace.ChainTrace;
import org.mtporacle.conformance.trace.TraceFiles;
import picocli.CommandLine;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Every command against the exit-code table of docs/cli.md: one case per "yes" cell, run in process, and every
 * command of the command line has a row. The table is the expectation; the cases only say how to provoke each code.
 */
class ExitCodesTest {
    @TempDir
    static Path dir;

    static Path root = Path.of(System.getProperty("mtp.repo.root", ".."));
    static Path golden;

    /** Command → code → arguments after the command's words that must give that code. */
    static final Map<String, Map<Integer, String[]>> CASES = new LinkedHashMap<>();

    /** "command → code" → what its output must also hold (where the case checks more than the code). */
    static final Map<String, List<String>> OUTPUT = Map.of(
            "mtp bench → 0", List.of("read bandwidth", "vector FMA peak", "4-bit g64 mat-vec"),
            "mtp bench → 3", List.of("backend absent is unavailable"),
            "mtp conform → 3", List.of("asked for but unavailable"),
            "mtp conform merge → 3", List.of("shard 2/2 missing"),
            "mtp convert → 3", List.of("is not empty (give --force"));

    private static void cases(String command, Object... codeAndArgs) {
        Map<Integer, String[]> m = new LinkedHashMap<>();
        for (int i = 0; i < codeAndArgs.length; i += 2) {
            m.put((Integer) codeAndArgs[i], (String[]) codeAndArgs[i + 1]);
        }
        CASES.put(command, m);
    }

    private static String[] a(String... args) {
        return args;
    }

    private static String p(String name) {
        return dir.resolve(name).toString();
    }

    @BeforeAll
    static void setUp() throws IOException {
        golden = root.resolve("golden");
        Files.writeString(dir.resolve("file"), "a regular file");
        Files.writeString(dir.resolve("not-json.json"), "{ nope");
        run("fixture", "--preset", "tiny", "--out", p("hf"), "--quiet");
        for (String k : List.of("1", "2")) {
            run("conform", "--backend", "reference", "--fixture", "tiny", "--chains", "2", "--shard", k + "/2",
                    "--report", p("shard" + k), "--quiet");
        }
        run("conform", "--backend", "drifting", "--fixture", "tiny", "--chains", "1", "--report", p("failing"),
                "--quiet");
        Path passing = dir.resolve("passing-trace.json");
        TraceFiles.write(new ChainTrace(ChainTrace.FORMAT, "tiny", "", "reference", Map.of(), org.mtporacle.api.Tolerance.EXACT, 5,
                List.of(new Action.Append(List.of(-1), false), new Action.Prefill(4, 1), new Action.Draft(3, 2, false),
                        new Action.Commit(Action.Acceptance.FULL, 3)), null, 4), passing);
        TraceFiles.write(new ChainTrace(ChainTrace.FORMAT, "tiny", "", "drifting", Map.of(), org.mtporacle.api.Tolerance.F32, 5,
                List.of(new Action.Append(List.of(-1), false), new Action.Prefill(4, 1), new Action.Draft(3, 2, false),
                        new Action.Commit(Action.Acceptance.FULL, 3)), null, 4), dir.resolve("drifting-trace.json"));
        String tiny = golden.resolve("tiny-lifecycle.json").toString();
        String sampling = golden.resolve("tiny-sampling.json").toString();

        cases("mtp", 0, a("--version"), 2, a());
        cases("mtp conform", 0, a("--backend", "reference", "--fixture", "tiny", "--chains", "1", "--report", p("c0")),
                1, a("--backend", "drifting", "--fixture", "tiny", "--chains", "1", "--report", p("c1")),
                2, a("--chains", "abc"),
                3, a("--backend", "absent", "--fixture", "tiny", "--chains", "1", "--report", p("c3")));
        cases("mtp conform merge", 0, a(p("shard1"), p("shard2"), "--report", p("m0")),
                1, a(p("failing"), "--report", p("m1")),
                2, a(),
                3, a(p("shard1"), "--report", p("m3")));
        cases("mtp replay", 0, a(p("passing-trace.json"), "--backend", "reference"),
                1, a(p("drifting-trace.json"), "--trace-backend"), 2, a(p("passing-trace.json")),
                3, a(p("missing.json"), "--backend", "reference"));
        cases("mtp golden", 0, a("--help"), 2, a());
        cases("mtp golden record", 0, a("--fixture", "tiny", "--scenario", "lifecycle", "--out", p("g0"), "--quiet"),
                2, a("--scenario", "nope"), 3, a("--fixture", "tiny", "--out", p("file/sub"), "--quiet"));
        cases("mtp golden verify", 0, a(tiny, "--quiet"), 1, a(tiny, "--backend", "drifting", "--quiet"),
                2, a(tiny, "--tolerance", "nope"), 3, a(p("not-json.json")));
        cases("mtp golden diff", 0, a(tiny, tiny), 1, a(tiny, sampling), 2, a(tiny), 3, a(tiny, p("missing.json")));
        cases("mtp fixture", 0, a("--list"), 2, a("--preset", "tiny", "--out", p("f2"), "--dtype", "f64"),
                3, a("--preset", "tiny", "--out", p("file/sub"), "--quiet"));
        cases("mtp inspect", 0, a(tiny), 1, a(ConvertCommandTest.doubleFolded(dir).toString(), "--strict"), 2, a(),
                3, a(p("missing.json")));
        cases("mtp convert", 0, a("--from", p("hf"), "--out", p("companion"), "--quiet"),
                2, a("--from", p("hf"), "--out", p("q"), "--quantize", "7"),
                3, a("--from", p("hf"), "--out", p("hf"), "--quiet"));
        cases("mtp checkpoint", 0, a("--fixture", "tiny", "--out", p("row0.safetensors")),
                2, a("--fixture", "tiny", "--out", p("row1.safetensors"), "--tokens", "0"),
                3, a("--model", p("missing-model"), "--out", p("row2.safetensors")));
        cases("mtp bench", 0, a("--quick", "--only", "matvec", "--threads", "1", "--repetitions", "1",
                        "--no-openblas", "--quiet"),
                2, a("--only", "kernels"), 3, a("--quick", "--only", "matvec", "--backend", "absent", "--quiet"));
        cases("mtp tck", 0, a("--backend", "reference", "--chains", "1", "--prefill-split", "12", "--report", p("t0")),
                1, a("--backend", "drifting", "--chains", "1", "--prefill-split", "12", "--report", p("t1")),
                2, a("--backend", "nope"), 3, a("--backend", "absent", "--report", p("t3")));
        String target = root.resolve("reference/src/test/data/qwen35-target-transformers/float32").toString();
        cases("mtp spec", 0, a("--model", target, "--prompt", "13,6", "--tokens", "6"),
                2, a("--model", target, "--depth", "65"), 3, a("--model", p("missing-model")));
        cases("mtp serve-wire", 0, a("--help"), 2, a("--backend", "exec:python3 x.py"));
        cases("mtp backends", 0, a(), 2, a("--bogus"));
        cases("mtp help", 0, a("conform"), 2, a("nope"));
    }

    private static Cli run(String... args) {
        Cli r = Cli.run(args);
        assertThat(r.exit()).as("setup: mtp %s\n%s", String.join(" ", args), r.out()).isLessThanOrEqualTo(1);
        return r;
    }

    /** The rows of the table under "Which codes each command gives" in docs/cli.md: command → code → yes. */
    static Map<String, Map<Integer, Boolean>> table() throws IOException {
        String doc = Files.readString(root.resolve("docs/cli.md"));
        String section = doc.substring(doc.indexOf("Which codes each command gives"));
        Map<String, Map<Integer, Boolean>> rows = new LinkedHashMap<>();
        for (String line : section.lines().skip(1).toList()) {
            if (line.startsWith("| `mtp")) {
                String[] cells = line.split("\\|");
                Map<Integer, Boolean> codes = new LinkedHashMap<>();
                for (int code = 0; code <= 3; code++) {
                    codes.put(code, cells[code + 2].strip().equals("yes"));
                }
                rows.put(cells[1].strip().replace("`", ""), codes);
            } else if (line.startsWith("#")) {
                break;
            }
        }
        return rows;
    }

    @Test
    void everyCommandHasARowAndEveryRowItsCases() throws IOException {
        TreeSet<String> commands = new TreeSet<>();
        walk(MtpCommand.commandLine(), commands);
        Map<String, Map<Integer, Boolean>> t = table();
        assertThat(t.keySet()).as("docs/cli.md's exit-code table lists every command").containsAll(commands);
        assertThat(commands).as("the table lists no command that does not exist").containsAll(t.keySet());
        for (var row : t.entrySet()) {
            for (var cell : row.getValue().entrySet()) {
                boolean hasCase = CASES.getOrDefault(row.getKey(), Map.of()).containsKey(cell.getKey());
                assertThat(hasCase).as("%s: the table says %s for exit %d; this test needs a case for each yes and "
                        + "none for a dash", row.getKey(), cell.getValue() ? "yes" : "—", cell.getKey())
                        .isEqualTo(cell.getValue());
            }
        }
    }

    private static void walk(CommandLine cl, TreeSet<String> out) {
        out.add(cl.getCommandSpec().qualifiedName());
        cl.getSubcommands().values().forEach(sub -> walk(sub, out));
    }

    @TestFactory
    Stream<DynamicTest> eachCommandGivesTheCodesItsRowSays() throws IOException {
        List<DynamicTest> tests = new ArrayList<>();
        for (var row : table().entrySet()) {
            for (var cell : row.getValue().entrySet()) {
                String[] args = CASES.getOrDefault(row.getKey(), Map.of()).get(cell.getKey());
                if (!cell.getValue() || args == null) {
                    continue;
                }
                List<String> line = new ArrayList<>(List.of(row.getKey().split(" ")).subList(1,
                        row.getKey().split(" ").length));
                line.addAll(List.of(args));
                int code = cell.getKey();
                tests.add(DynamicTest.dynamicTest(row.getKey() + " → " + code, () -> {
                    Cli r = Cli.run(line.toArray(String[]::new));
                    assertThat(r.exit()).as("mtp %s\n%s", String.join(" ", line), r.out()).isEqualTo(code);
                    for (String part : OUTPUT.getOrDefault(row.getKey() + " → " + code, List.of())) {
                        assertThat(r.out()).contains(part);
                    }
                    if (code >= 2) {
                        assertThat(r.out()).as("one plain line, no internals").doesNotContain("Exception", "\tat ",
                                "null");
                    }
                }));
            }
        }
        return tests.stream();
    }
}
