package org.mtporacle.tools;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/** The default `mtp conform` compares the reference with the bundled numpy engine where python3 and numpy are. */
class BundledEnginesTest {
    @TempDir
    Path dir;

    @Test
    void withoutARepositoryOrItsScriptTheEngineIsNotRunAndTheNoteSaysWhy() {
        BundledEngines.Found none = BundledEngines.numpy(null);
        assertThat(none.choices()).isEmpty();
        assertThat(none.note()).startsWith("numpy engine: not run").contains("--backend exec:");
        BundledEngines.Found missing = BundledEngines.numpy(dir.toString());
        assertThat(missing.choices()).isEmpty();
        assertThat(missing.note()).contains("numpy_backend.py is missing");
    }

    @Test
    void theDefaultRunHoldsTheReferenceToTheNumpyEngineAndLabelsTheSelfCheck() throws Exception {
        String repo = Path.of(System.getProperty("mtp.repo.root", "..")).toAbsolutePath().normalize().toString();
        BundledEngines.Found found = BundledEngines.numpy(repo);
        Assumptions.assumeTrue(!found.choices().isEmpty(), "skipped: " + found.note());
        String saved = System.getProperty(BundledEngines.HOME);
        System.setProperty(BundledEngines.HOME, repo);
        try {
            Path report = dir.resolve("r");
            Cli r = Cli.run("conform", "--fixture", "tiny", "--chains", "2", "--max-actions", "4", "--quiet", "--report",
                    report.toString()); // every backend found runs: short chains keep it cheap
            assertThat(r.out()).contains("numpy engine: exec:python3").contains("an independent implementation")
                    .contains("note: the 'reference' entries hold the reference to itself");
            JsonNode entries = new ObjectMapper().readTree(report.resolve("report.json").toFile()).get("entries");
            boolean numpyPassed = false;
            for (JsonNode e : entries) {
                if (e.get("backend").asText().contains("numpy_backend.py")) {
                    assertThat(e.get("status").asText()).as(r.out()).isEqualTo("PASSED");
                    numpyPassed = true;
                }
            }
            assertThat(numpyPassed).as(r.out()).isTrue();
        } finally {
            if (saved == null) {
                System.clearProperty(BundledEngines.HOME);
            } else {
                System.setProperty(BundledEngines.HOME, saved);
            }
        }
    }
}
