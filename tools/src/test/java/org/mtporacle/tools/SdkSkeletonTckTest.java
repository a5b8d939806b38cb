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
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The SDKs' row skeletons under the whole TCK, one {@code mtp tck} run each (one chain per lockstep rule, a short
 * prefill-split): the numpy engine on the Python skeleton ({@code adapters/python/examples/numpy_skeleton_backend.py})
 * passes every rule; so does the TypeScript MTP block on the TypeScript skeleton ({@code adapters/typescript/examples/
 * skeleton_backend.ts} over {@code mtp_block.ts}, its committed build): dense, quantized and MoE chains, seeded
 * sampling and router choices against the reference. Skips, printing why, where python3 with numpy or Node 20 is
 * missing.
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

    private Map<String, String> tck(String backend) throws IOException {
        Cli r = Cli.run("tck", "--backend", backend, "--chains", "1", "--prefill-split", "12", "--report",
                dir.toString());
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
        assertThat(status.values().stream().filter("PASSED"::equals).count()).isGreaterThanOrEqualTo(18);
        assertThat(status).containsEntry("required_s11_1_badInputCatalogue", "PASSED")
                .containsEntry("optional_s7_seededSamplingMatchesTheReference", "PASSED")
                .containsEntry("optional_s2_quantizedChainsFollowTheReference", "PASSED");
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
}
