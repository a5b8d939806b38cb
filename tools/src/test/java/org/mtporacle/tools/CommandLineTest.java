package org.mtporacle.tools;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.mtporacle.api.Tolerance;
import org.mtporacle.conformance.chain.Action;
import org.mtporacle.conformance.trace.ChainTrace;
import org.mtporacle.conformance.trace.TraceFiles;
import picocli.CommandLine;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/** The mtp command end to end, in process: exit codes, reports, shards and merge, replay, one-line errors. */
class CommandLineTest {
    @TempDir
    Path dir;

    private record Run(int exit, String out, String err) {
    }

    private static Run run(String... args) {
        CommandLine cl = MtpCommand.commandLine();
        StringWriter err = new StringWriter();
        cl.setErr(new PrintWriter(err));
        PrintStream saved = System.out;
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
        try {
            int code = cl.execute(args);
            return new Run(code, out.toString(StandardCharsets.UTF_8), err.toString());
        } finally {
            System.setOut(saved);
        }
    }

    @Test
    void badBenchValuesAreUsageErrors() {
        Run part = run("bench", "--only", "matvec,kernels");
        assertThat(part.exit()).isEqualTo(MtpCommand.EXIT_USAGE);
        assertThat(part.err()).contains("unknown part 'kernels'").contains("matvec, draft, prefill");
        Run threads = run("bench", "--threads", "0");
        assertThat(threads.exit()).isEqualTo(MtpCommand.EXIT_USAGE);
        assertThat(threads.err()).startsWith("mtp bench: --threads 0: every thread count must be ≥ 1");
    }

    @Test
    void conformsHelpNamesEveryBundledFixture() {
        Run help = run("conform", "--help");
        assertThat(help.exit()).isZero();
        String text = help.out().replaceAll("\\s+", " ");
        for (org.mtporacle.conformance.FixtureRecipe f : org.mtporacle.conformance.FixtureRecipe.BUNDLED) {
            assertThat(text).as(f.name()).containsPattern("[ (]" + java.util.regex.Pattern.quote(f.name()) + "[,)]");
        }
    }

    @Test
    void conformOnTheReferencePassesAndWritesBothReports() throws Exception {
        Run r = run("conform", "--backend", "reference", "--fixture", "tiny", "--chains", "6", "--report",
                dir.resolve("r").toString());
        assertThat(r.exit()).as(r.out() + r.err()).isEqualTo(0);
        assertThat(r.out()).contains("reference").contains("tiny").contains("passed");
        JsonNode json = new ObjectMapper().readTree(dir.resolve("r/report.json").toFile());
        assertThat(json.at("/entries/0/status").asText()).isEqualTo("PASSED");
        assertThat(json.at("/entries/0/chainsRun").asLong()).isEqualTo(6);
        assertThat(Files.readString(dir.resolve("r/report.html"))).contains("<svg").contains("reference");
    }

    @Test
    void shardsCoverTheCampaignOnceAndMergeIntoOneReport() throws Exception {
        for (int k = 1; k <= 3; k++) {
            Run r = run("conform", "--backend", "reference", "--fixture", "tiny", "--chains", "7", "--shard",
                    k + "/3", "--report", dir.resolve("s" + k).toString());
            assertThat(r.exit()).as(r.err()).isEqualTo(0);
        }
        Run m = run("conform", "merge", dir.resolve("s1").toString(), dir.resolve("s2/report.json").toString(),
                dir.resolve("s3").toString(), "--report", dir.resolve("m").toString());
        assertThat(m.exit()).as(m.err()).isEqualTo(0);
        JsonNode json = new ObjectMapper().readTree(dir.resolve("m/report.json").toFile());
        assertThat(json.at("/entries/0/chainsRun").asLong()).as("2 + 2 + 3 chains").isEqualTo(7);
        assertThat(json.get("shards")).hasSize(3);
        Run twice = run("conform", "merge", dir.resolve("s1").toString(), dir.resolve("s1").toString(),
                "--report", dir.resolve("m2").toString());
        assertThat(twice.exit()).isEqualTo(3);
        assertThat(twice.err()).contains("shard 1/3 appears twice");
        Run partial = run("conform", "merge", dir.resolve("s1").toString(), dir.resolve("s3").toString(),
                "--report", dir.resolve("m3").toString());
        assertThat(partial.exit()).isEqualTo(3);
        assertThat(partial.err().strip()).isEqualTo("mtp conform merge: the campaign (seed 1, 7 chains, 3 shards) is "
                + "incomplete: shard 2/3 missing (merge them too, or pass --allow-partial)");
        assertThat(dir.resolve("m3")).doesNotExist();
        Run allowed = run("conform", "merge", dir.resolve("s1").toString(), dir.resolve("s3").toString(),
                "--allow-partial", "--report", dir.resolve("m4").toString());
        assertThat(allowed.exit()).as(allowed.err()).isEqualTo(0);
        assertThat(allowed.out()).contains("PARTIAL: shard 2/3 of 3 missing");
        JsonNode p = new ObjectMapper().readTree(dir.resolve("m4/report.json").toFile());
        assertThat(p.at("/entries/0/chainsRun").asLong()).as("2 + 3 chains").isEqualTo(5);
        assertThat(p.get("missingShards").get(0).asText()).isEqualTo("2/3");
        Run other = run("conform", "--backend", "reference", "--fixture", "tiny", "--chains", "7", "--seed", "2",
                "--shard", "2/3", "--report", dir.resolve("seed2").toString(), "--quiet");
        assertThat(other.exit()).isZero();
        Run mixed = run("conform", "merge", dir.resolve("s1").toString(), dir.resolve("seed2").toString(),
                dir.resolve("s3").toString(), "--report", dir.resolve("m5").toString());
        assertThat(mixed.exit()).isEqualTo(3);
        assertThat(mixed.err()).contains(dir.resolve("seed2/report.json") + " is from another campaign than "
                + dir.resolve("s1/report.json") + ": seed 2 vs 1");
    }

    @Test
    void aRunKeepsOnlyItsOwnTracesAndShowsTheFirstFailuresInFull() throws Exception {
        Path report = dir.resolve("r");
        Run failing = run("conform", "--backend", "drifting", "--fixture", "tiny", "--chains", "7", "--report",
                report.toString());
        assertThat(failing.exit()).isEqualTo(1);
        try (var s = Files.list(report.resolve("traces"))) {
            assertThat(s.count()).isEqualTo(7);
        }
        java.util.regex.Matcher groups = java.util.regex.Pattern.compile("failures: 7 failures, (\\d+) distinct")
                .matcher(failing.out());
        assertThat(groups.find()).as(failing.out()).isTrue();
        int distinct = Integer.parseInt(groups.group(1));
        assertThat(failing.out().split("\nFAILED drifting @ tiny", -1)).as("each distinct failure once, 5 at most")
                .hasSize(Math.min(5, distinct) + 1);
        assertThat(failing.out().contains("more distinct failures")).isEqualTo(distinct > 5);
        JsonNode json = new ObjectMapper().readTree(report.resolve("report.json").toFile());
        assertThat(json.at("/entries/0/failures")).hasSize(7);
        Run passing = run("conform", "--backend", "reference", "--fixture", "tiny", "--chains", "2", "--report",
                report.toString());
        assertThat(passing.exit()).isZero();
        try (var s = Files.list(report.resolve("traces"))) {
            assertThat(s.toList()).as("the failing run's traces are gone").isEmpty();
        }
        assertThat(Files.readString(report.resolve("report.html"))).doesNotContain("drifting");
    }

    @Test
    void badOptionValuesAreOneLineUsageErrors() {
        assertThat(run("conform", "--chains").exit()).isEqualTo(2);
        Run shard = run("conform", "--shard", "4/3");
        assertThat(shard.exit()).isEqualTo(2);
        assertThat(shard.err().lines().toList()).containsExactly(
                "mtp conform: Invalid value for option '--shard': '4/3': expected K/N with 1 ≤ K ≤ N, e.g. 2/8",
                "see 'mtp conform --help' for the usage");
        Run backend = run("conform", "--backend", "nope");
        assertThat(backend.exit()).isEqualTo(2);
        assertThat(backend.err()).contains("no such backend").contains("reference").doesNotContain("Exception");
        Run typo = run("conform", "--chians", "3");
        assertThat(typo.exit()).isEqualTo(2);
        assertThat(typo.err()).contains("Unknown options: '--chians'").contains("Possible solutions: --chains");
    }

    @Test
    void inspectOfAMalformedFileIsOneLineWithoutATrace() throws Exception {
        Path bad = dir.resolve("bad.safetensors");
        Files.write(bad, new byte[] {(byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0xff, 0, 0, 0, 0, '{'});
        Run r = run("inspect", bad.toString());
        assertThat(r.exit()).isEqualTo(3);
        assertThat(r.err().strip().lines().count()).isEqualTo(1);
        assertThat(r.err()).contains(bad.toString()).doesNotContain("at org.");
    }

    @Test
    void replayRerunsATraceAndReportsThatItPasses() throws Exception {
        Path trace = dir.resolve("t.json");
        TraceFiles.write(new ChainTrace(ChainTrace.FORMAT, "tiny", "", "reference", Map.of(), Tolerance.EXACT, 5,
                List.of(new Action.Append(List.of(-1), false), new Action.Prefill(4, 1), new Action.Draft(3, 2, false),
                        new Action.Commit(Action.Acceptance.FULL, 3)), null, 4), trace);
        Run r = run("replay", trace.toString(), "--backend", "reference");
        assertThat(r.exit()).as(r.out() + r.err()).isEqualTo(0);
        assertThat(r.out()).contains("passed").contains("draft depth=3");
        Files.writeString(trace, "{\"format\": \"mtp-oracle-chain/1\", \"actions\": 3}");
        Run bad = run("replay", trace.toString());
        assertThat(bad.exit()).isEqualTo(3);
        assertThat(bad.err()).contains(trace.toString()).contains("'actions' must be an array");
    }

    @Test
    void fixtureWritesAModelThatInspectReads() {
        Run f = run("fixture", "--preset", "tiny", "--out", dir.resolve("m").toString(), "--quantize", "4",
                "--group-size", "32", "--layout", "companion");
        assertThat(f.exit()).as(f.err()).isEqualTo(0);
        Run i = run("inspect", dir.resolve("m").toString(), "--json");
        assertThat(i.exit()).as(i.err()).isEqualTo(0);
        assertThat(i.out()).contains("\"layout\"").contains("companion");
    }

    @Test
    void fixtureWritesAHybridTargetThatTheTargetAndDrafterLoadersRead() {
        Run list = run("fixture", "--list");
        assertThat(list.out()).contains("tiny-target", "small-target", "tiny-moe-target",
                "qwen3-next-80b-a3b-target", "(in memory only)");
        Path out = dir.resolve("target");
        Run f = run("fixture", "--preset", "tiny-target", "--out", out.toString(), "--dtype", "f32", "--quiet");
        assertThat(f.exit()).as(f.err()).isEqualTo(0);
        assertThat(org.mtporacle.io.TargetLoader.load(out).config().layerCount()).isEqualTo(4);
        assertThat(org.mtporacle.io.ModelLoader.load(out).layout()).isEqualTo("hf");
        for (String[] bad : List.of(new String[] {"--preset", "qwen3.5-4b-target"},
                new String[] {"--preset", "tiny-target", "--quantize", "4"},
                new String[] {"--preset", "tiny-target", "--layout", "companion"})) {
            List<String> args = new java.util.ArrayList<>(List.of("fixture", "--out", dir.resolve("x").toString()));
            args.addAll(List.of(bad));
            Run r = run(args.toArray(String[]::new));
            assertThat(r.exit()).as(String.join(" ", bad)).isEqualTo(MtpCommand.EXIT_USAGE);
            assertThat(r.err()).containsAnyOf("a target preset is", "too big to write").doesNotContain("Exception");
        }
    }
}
