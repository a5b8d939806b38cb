package org.mtporacle.tools;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The SDKs' row skeletons under the whole TCK, one {@code mtp tck} run each (one chain per lockstep rule, a short
 * prefill-split): the numpy engine on the Python skeletons ({@code adapters/python/examples/
 * numpy_skeleton_backend.py}, the drafter on {@code RowsSkeleton}, and {@code numpy_skeleton_target.py}, the hybrid
 * target on {@code TargetRowsSkeleton}) passes every rule, the target's §13 rules included; so does the TypeScript MTP
 * block on the TypeScript skeleton ({@code adapters/typescript/examples/skeleton_backend.ts} over {@code
 * mtp_block.ts}, its committed build): dense, quantized and MoE chains, seeded sampling and router choices against
 * the reference. Skips, printing why, where python3 with numpy or Node 20 is missing.
 */
class SdkSkeletonTckTest {
    private static final Path ROOT = Path.of("..").toAbsolutePath().normalize();

    @TempDir
    Path dir;

    private static String missing(String... probe) {
        try {
            Process p = new ProcessBuilder(probe).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
            if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
                return String.join(" ", probe) + " failed: " + out;
            }
            return null;
        } catch (IOException | InterruptedException e) {
            return probe[0] + " is not installed (" + e.getMessage() + ")";
        }
    }

    private static void assume(String what, String why) {
        if (why != null) {
            System.out.println("[" + what + "] skipped: " + why);
        }
        Assumptions.assumeTrue(why == null, why);
    }

    private Map<String, String> tck(String backend, String... more) throws IOException {
        List<String> args = new ArrayList<>(List.of("tck", "--backend", backend, "--chains", "1", "--prefill-split",
                "12", "--report", dir.toString()));
        args.addAll(List.of(more));
        Cli r = Cli.run(args.toArray(String[]::new));
        System.out.println(r.out().lines().filter(l -> l.startsWith("OK") || l.startsWith("FAILED"))
                .findFirst().orElse(r.out()));
        JsonNode json = new ObjectMapper().readTree(dir.resolve("report.json").toFile());
        Map<String, String> status = new TreeMap<>();
        json.get("rules").forEach(n -> status.put(n.get("rule").asText(), n.get("status").asText()));
        assertThat(r.exit()).as(r.out()).isEqualTo(status.containsValue("FAILED") ? 1 : 0);
        return status;
    }

    @Test
    void theNumpyEngineOnThePythonSkeletonPassesTheTck() throws IOException {
        assume("python skeleton", missing("python3", "-c",
                "import sys, numpy; assert sys.version_info >= (3, 10)"));
        Path python = ROOT.resolve("adapters/python");
        Map<String, String> status = tck("exec:env 'PYTHONPATH=" + python + "' python3 '"
                + python.resolve("examples/numpy_skeleton_backend.py") + "'");
        assertThat(status).doesNotContainValue("FAILED");
        assertThat(status.values().stream().filter("PASSED"::equals).count()).isGreaterThanOrEqualTo(30);
        assertThat(status).containsEntry("required_s11_1_badInputCatalogue", "PASSED")
                .containsEntry("optional_s7_seededSamplingMatchesTheReference", "PASSED")
                .containsEntry("optional_s2_quantizedChainsFollowTheReference", "PASSED");
        // the hybrid target on the target skeleton (numpy_skeleton_target.py): every §13 rule but the untestable one
        Map<String, String> target = new TreeMap<>(status);
        target.keySet().removeIf(rule -> !rule.contains("_s13_"));
        // 14 §13 rules: the 13 of the target rows and the loop, and §13.5's loop chains (the MoE target rule is §12's)
        assertThat(target).hasSize(14).containsEntry("required_s13_3_badCallCatalogue", "PASSED")
                .containsEntry("stochastic_s13_3_randomChainsFollowTheReference", "PASSED")
                .containsEntry("required_s13_3_captureRestoreRoundTripIsByteIdentical", "PASSED")
                .containsEntry("required_s13_1_logitsAndTapsMatchTheReference", "PASSED");
        target.remove("untested_s13_3_deviceFailurePoisonsTheGroup");
        assertThat(target).allSatisfy((rule, s) -> assertThat(s).as(rule).isEqualTo("PASSED"));
    }

    @Test
    void theMtpBlockOnTheTypeScriptSkeletonPassesTheTck() throws IOException {
        assume("typescript skeleton", missing("node", "-e",
                "process.exit(Number(process.versions.node.split('.')[0]) >= 20 ? 0 : 1)"));
        Path engine = ROOT.resolve("adapters/typescript/dist/examples/skeleton_backend.js");
        assertThat(engine).isRegularFile();
        Map<String, String> status = tck("exec:node '" + engine + "'");
        assertThat(status).doesNotContainValue("FAILED");
        assertThat(status.values().stream().filter("PASSED"::equals).count()).isGreaterThanOrEqualTo(18);
        assertThat(status).containsEntry("required_s11_1_badInputCatalogue", "PASSED")
                .containsEntry("stochastic_s5_randomChainsFollowTheReference", "PASSED")
                .containsEntry("required_s10_1_7_restoredRowsSurviveMembershipChanges", "PASSED")
                .containsEntry("optional_s7_seededSamplingMatchesTheReference", "PASSED")
                .containsEntry("optional_s2_quantizedChainsFollowTheReference", "PASSED")
                .containsEntry("optional_s12_moeChainsFollowTheReference", "PASSED");
    }

    /**
     * The fake target on the TypeScript target skeleton ({@code adapters/typescript/examples/
     * target_skeleton_backend.ts}, its committed build; no drafter) under the §13 rules that check an engine against
     * the contract and itself: the target bad-call catalogue above all (its numbers are not the Qwen target's, so the
     * rules that compare them with the reference are not run).
     */
    @Test
    void theFakeTargetOnTheTypeScriptTargetSkeletonPassesTheSelfConsistentTargetRules() throws IOException {
        assume("typescript target skeleton", missing("node", "-e",
                "process.exit(Number(process.versions.node.split('.')[0]) >= 20 ? 0 : 1)"));
        Path engine = ROOT.resolve("adapters/typescript/dist/examples/target_skeleton_backend.js");
        assertThat(engine).isRegularFile();
        List<String> rules = List.of("required_s13_3_badCallCatalogue",
                "required_s13_3_captureRestoreRoundTripIsByteIdentical", "required_s13_3_filterRowsPermutesRows",
                "required_s13_3_rollbackEqualsNeverFeedingTheRejected", "required_s13_3_splitPrefillEqualsOnePrefill");
        Map<String, String> status = tck("exec:node '" + engine + "'", "--rule", String.join(",", rules));
        assertThat(status.keySet()).containsExactlyInAnyOrderElementsOf(rules);
        assertThat(status).allSatisfy((rule, s) -> assertThat(s).as(rule).isEqualTo("PASSED"));
    }
}
