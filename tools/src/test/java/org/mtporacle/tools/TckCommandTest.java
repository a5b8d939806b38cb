package org.mtporacle.tools;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.mtporacle.conformance.tck.BackendVerification;

import java.lang.reflect.Method;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;

/** {@code mtp tck} runs every rule of BackendVerification by its own name and reports each. */
class TckCommandTest {
    @TempDir
    Path dir;

    @Test
    void everyRuleOfTheTckRunsUnderItsOwnNameAndTheReferencePassesThem() throws Exception {
        Cli r = Cli.run("tck", "--backend", "reference", "--chains", "1", "--prefill-split", "12", "--report",
                dir.toString());
        assertThat(r.exit()).as(r.out()).isZero();
        Set<String> expected = java.util.stream.Stream.concat(
                        Arrays.stream(BackendVerification.class.getDeclaredMethods()),
                        // the reference runs the hybrid target, so the target rules run beside the drafter's
                        Arrays.stream(org.mtporacle.conformance.target.tck.TargetBackendVerification.class
                                .getDeclaredMethods()))
                .filter(m -> m.isAnnotationPresent(org.junit.jupiter.api.Test.class)).map(Method::getName)
                .collect(Collectors.toCollection(TreeSet::new));
        JsonNode json = new ObjectMapper().readTree(dir.resolve("report.json").toFile());
        Set<String> reported = new TreeSet<>();
        json.get("rules").forEach(n -> reported.add(n.get("rule").asText()));
        assertThat(reported).isEqualTo(expected);
        assertThat(json.get("failed").asInt()).isZero();
        assertThat(json.get("passed").asInt()).isGreaterThan(10);
        assertThat(r.out()).contains("pass required_s11_1_badInputCatalogue").contains("OK: ")
                .contains("pass required_s13_3_badCallCatalogue");
        // the reference loads MoE models, so the default run (no --fixture) runs the MoE fixtures' rule too
        assertThat(json.get("rules")).anySatisfy(n -> {
            assertThat(n.get("rule").asText()).isEqualTo("optional_s12_moeChainsFollowTheReference");
            assertThat(n.get("status").asText()).isEqualTo("PASSED");
        });
        // and the target's: tiny-moe-target and the Qwen3-Next tiny-moe-next-target
        assertThat(json.get("rules")).anySatisfy(n -> {
            assertThat(n.get("rule").asText()).isEqualTo("optional_s12_moeTargetChainsFollowTheReference");
            assertThat(n.get("status").asText()).isEqualTo("PASSED");
        });
        assertThat(Files.readString(dir.resolve("report.html"))).contains("required_s10_1_7_checkpointRoundTrip");
    }

    @Test
    void theRulesRunOnTheFixturesAskedForAndTheReportNamesThem() throws Exception {
        Cli r = Cli.run("tck", "--backend", "reference", "--fixture", "tiny-moe", "--chains", "1", "--prefill-split",
                "12", "--report", dir.toString());
        assertThat(r.exit()).as(r.out()).isZero();
        assertThat(r.out()).contains("fixtures tiny-moe and tiny-moe-q4");
        JsonNode json = new ObjectMapper().readTree(dir.resolve("report.json").toFile());
        assertThat(json.get("fixture").asText()).isEqualTo("tiny-moe");
        assertThat(json.get("quantizedFixture").asText()).isEqualTo("tiny-moe-q4");
        assertThat(json.get("failed").asInt()).isZero();
        assertThat(TckCommand.quantizedSibling("small", org.mtporacle.conformance.chain.ContextSource.SYNTHETIC)).isEqualTo("small-q4");
        assertThat(TckCommand.quantizedSibling("tiny-f32", org.mtporacle.conformance.chain.ContextSource.SYNTHETIC)).isEqualTo("tiny-q4");
    }

    @Test
    void aFixtureOfTheWrongKindOrNoneIsAUsageErrorBeforeAnyRuleRuns() {
        for (String[] bad : new String[][] {{"--fixture", "nonesuch"}, {"--fixture", "tiny-q4"},
                {"--quantized-fixture", "small"}}) {
            Cli r = Cli.run("tck", "--backend", "reference", bad[0], bad[1], "--report", dir.toString());
            assertThat(r.exit()).as(r.out()).isEqualTo(MtpCommand.EXIT_USAGE);
            assertThat(r.out()).contains(bad[1]).doesNotContain("pass ");
            assertThat(dir.resolve("report.json")).doesNotExist();
        }
    }

    @Test
    void anUnknownBackendIsAUsageErrorNamingTheKnownOnes() {
        Cli r = Cli.run("tck", "--backend", "nonesuch", "--report", dir.toString());
        assertThat(r.exit()).isEqualTo(MtpCommand.EXIT_USAGE);
        assertThat(r.out()).contains("nonesuch").contains("reference");
    }
}
