package org.mtporacle.tools;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.mtporacle.conformance.tck.BackendVerification;
import org.mtporacle.conformance.target.tck.TargetBackendVerification;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;

import javax.xml.parsers.DocumentBuilderFactory;
import java.lang.reflect.Method;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/** Known-failure lists, rule selection, fail-fast, JUnit XML and the version: what CI pipelines expect of a runner. */
class CiConventionsTest {
    private static final String FAILS = "required_s5_8_commitKeepsAcceptedPlusOneRows"; // drifting's first draft
    private static final String PASSES = "required_s11_1_closedGroupRefusesEveryCall";

    @TempDir
    Path dir;

    @Test
    void listRulesNamesEveryRuleWithoutABackend() {
        Cli r = Cli.run("tck", "--list-rules");
        assertThat(r.exit()).as(r.out()).isZero();
        // the drafter's rules and the target's (spec §13), which run for a backend that runs the target
        Set<String> expected = Stream.of(BackendVerification.class, TargetBackendVerification.class)
                .flatMap(c -> Arrays.stream(c.getDeclaredMethods()))
                .filter(m -> m.isAnnotationPresent(org.junit.jupiter.api.Test.class)).map(Method::getName)
                .collect(Collectors.toCollection(TreeSet::new));
        Set<String> listed = r.out().lines().map(l -> l.split("\\s+")[0]).collect(Collectors.toCollection(TreeSet::new));
        assertThat(listed).isEqualTo(expected);
        assertThat(r.out()).contains("§");
        Cli none = Cli.run("tck");
        assertThat(none.exit()).isEqualTo(MtpCommand.EXIT_USAGE);
        Cli unknown = Cli.run("tck", "--backend", "reference", "--rule", "required_nonesuch");
        assertThat(unknown.exit()).isEqualTo(MtpCommand.EXIT_USAGE);
        assertThat(unknown.out()).contains("required_nonesuch").contains("--list-rules");
    }

    @Test
    void ruleSelectionRunsOnlyThoseRulesAndJUnitXmlReportsThem() throws Exception {
        Path xml = dir.resolve("ci/tck.xml");
        Cli r = Cli.run("tck", "--backend", "drifting", "--rule", FAILS + "," + PASSES, "--chains", "1",
                "--report", dir.resolve("tck").toString(), "--junit", xml.toString());
        assertThat(r.exit()).as(r.out()).isEqualTo(MtpCommand.EXIT_FAILED);
        JsonNode json = new ObjectMapper().readTree(dir.resolve("tck/report.json").toFile());
        assertThat(json.get("rules")).hasSize(2);
        Document d = DocumentBuilderFactory.newInstance().newDocumentBuilder().parse(xml.toFile());
        Element suite = d.getDocumentElement();
        assertThat(suite.getTagName()).isEqualTo("testsuite");
        assertThat(suite.getAttribute("tests")).isEqualTo("2");
        assertThat(suite.getAttribute("failures")).isEqualTo("1");
        NodeList cases = suite.getElementsByTagName("testcase");
        List<String> failed = new ArrayList<>();
        for (int i = 0; i < cases.getLength(); i++) {
            Element c = (Element) cases.item(i);
            if (c.getElementsByTagName("failure").getLength() == 1) {
                failed.add(c.getAttribute("name"));
                assertThat(((Element) c.getElementsByTagName("failure").item(0)).getAttribute("message")).isNotEmpty();
            }
        }
        assertThat(failed).containsExactly(FAILS);
    }

    @Test
    void expectedFailuresFailOnNewFailuresAndOnUnexpectedPasses() throws Exception {
        Path list = dir.resolve("known.txt");
        String[] run = {"tck", "--backend", "drifting", "--rule", FAILS + "," + PASSES, "--chains", "1",
                "--report", dir.resolve("tck").toString(), "--expected-failures", list.toString()};
        Files.writeString(list, "# drifting's known bug\n" + FAILS + "   # first draft shifted\n");
        Cli listed = Cli.run(run);
        assertThat(listed.exit()).as(listed.out()).isZero();
        assertThat(listed.out()).contains("1 failed as listed, 0 new, 0 unexpectedly passed");

        Files.writeString(list, FAILS + "\n" + PASSES + "\n");
        Cli fixed = Cli.run(run);
        assertThat(fixed.exit()).as(fixed.out()).isEqualTo(MtpCommand.EXIT_FAILED);
        assertThat(fixed.out()).contains("unexpected pass").contains(PASSES);

        Files.writeString(list, "\n");
        Cli fresh = Cli.run(run);
        assertThat(fresh.exit()).as(fresh.out()).isEqualTo(MtpCommand.EXIT_FAILED);
        assertThat(fresh.out()).contains("new failure (not in the list): " + FAILS);

        Files.writeString(list, "required_s5_8_commitKeepsAcceptedPlusOneRow\n"); // a typo cannot hide a failure
        Cli typo = Cli.run(run);
        assertThat(typo.exit()).as(typo.out()).isEqualTo(MtpCommand.EXIT_USAGE);
        assertThat(typo.out()).contains("known.txt:1").contains("no rule named");
    }

    @Test
    void conformHoldsItsEntriesAgainstAnExpectedFailureListAndWritesJUnitXml() throws Exception {
        Path list = dir.resolve("known.txt");
        Files.writeString(list, "drifting @ tiny\n");
        Path xml = dir.resolve("conform.xml");
        Cli r = Cli.run("conform", "--backend", "drifting", "--fixture", "tiny", "--chains", "2", "--quiet",
                "--report", dir.resolve("c").toString(), "--expected-failures", list.toString(), "--junit",
                xml.toString());
        assertThat(r.exit()).as(r.out()).isZero();
        Document d = DocumentBuilderFactory.newInstance().newDocumentBuilder().parse(xml.toFile());
        assertThat(d.getDocumentElement().getAttribute("failures")).isEqualTo("1");
        assertThat(((Element) d.getElementsByTagName("testcase").item(0)).getAttribute("name"))
                .isEqualTo("drifting @ tiny");
        Files.writeString(list, "reference @ tiny\n");
        Cli stale = Cli.run("conform", "--backend", "drifting", "--fixture", "tiny", "--chains", "2", "--quiet",
                "--report", dir.resolve("c").toString(), "--expected-failures", list.toString());
        assertThat(stale.exit()).as(stale.out()).isEqualTo(MtpCommand.EXIT_USAGE);
    }

    @Test
    void failFastSkipsEveryRuleAfterTheFirstFailure() throws Exception {
        List<String> order = new ArrayList<>(TckCommand.allRules().keySet());
        List<String> chosen = order.stream().filter(n -> n.startsWith("required_s10_1") || n.equals(FAILS)).toList();
        Cli r = Cli.run("tck", "--backend", "drifting", "--rule", String.join(",", chosen), "--chains", "1",
                "--prefill-split", "12", "--fail-fast", "--report", dir.resolve("tck").toString());
        assertThat(r.exit()).as(r.out()).isEqualTo(MtpCommand.EXIT_FAILED);
        JsonNode rules = new ObjectMapper().readTree(dir.resolve("tck/report.json").toFile()).get("rules");
        List<String> statuses = new ArrayList<>();
        rules.forEach(n -> statuses.add(n.get("status").asText()));
        int first = statuses.indexOf("FAILED");
        assertThat(first).as(r.out()).isBetween(0, statuses.size() - 2); // something came after it
        for (int i = first + 1; i < statuses.size(); i++) {
            assertThat(statuses.get(i)).isEqualTo("SKIPPED");
            assertThat(rules.get(i).get("message").asText()).contains("--fail-fast")
                    .contains(rules.get(first).get("rule").asText());
        }
    }

    @Test
    void versionNamesTheVersionAndTheCommitItWasBuiltFrom() throws Exception {
        Cli r = Cli.run("--version");
        assertThat(r.exit()).isZero();
        assertThat(r.out()).containsPattern("^mtp \\d+\\.\\d+\\.\\d+\\S* \\(commit ([0-9a-f]{12}(\\+modified)?|unknown), "
                + "Java \\d+");
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("commit ([0-9a-f]{12})").matcher(r.out());
        if (m.find()) { // the commit baked in is one of this checkout's (HEAD may have moved since the build)
            Process git = new ProcessBuilder("git", "cat-file", "-e", m.group(1) + "^{commit}")
                    .redirectErrorStream(true).start();
            git.getInputStream().readAllBytes();
            assertThat(git.waitFor()).as("git cat-file -e %s", m.group(1)).isZero();
        }
    }
}
