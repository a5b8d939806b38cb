package org.mtporacle.wire;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.LoadedTarget;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.TargetModel;
import org.mtporacle.api.TargetRows;
import org.mtporacle.conformance.target.chain.TargetBadCall;
import org.mtporacle.conformance.target.chain.TargetShape;
import org.mtporacle.conformance.target.lockstep.TargetFixture;
import org.mtporacle.reference.ReferenceBackend;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The SDKs' target skeletons ({@code adapters/python/mtp_wire/target_rows.py} under the numpy target,
 * {@code adapters/typescript/src/target_rows.ts} under the fake target) over {@code exec:} refuse every call of the
 * target bad-call catalogue ({@code TargetBadCall}) in every state it applies to with the reference's kind <em>and
 * message</em> ({@code AbstractTargetRows}, {@code TargetContract}): the TCK compares kinds only, the skeletons
 * promise the words too. The one difference allowed is how the SDKs print a tensor ({@code F32 [2, 3]} in Python,
 * {@code F32[2, 3]} in Java). Skips, printing why, where python3 with numpy or Node 20 is missing.
 */
class SdkTargetSkeletonMessagesTest {
    private static final Path ROOT = Path.of("..").toAbsolutePath().normalize();

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

    /** The TCK's states 0–3: empty; two warm rows; a warm and a cold row added; two warm rows in a round of width 3. */
    private static TargetShape prepare(TargetRows g, int state) {
        if (state == 0) {
            return TargetShape.empty();
        }
        g.append(Arrays.asList(null, null));
        g.prefill(HostTensor.ofIntRows(new int[][] {{1, 2, 3}, {4, 5, 6}}));
        if (state == 2) {
            g.append(Collections.singletonList(null));
            return new TargetShape(new boolean[] {true, true, false}, false, 0, 0);
        }
        if (state == 3) {
            g.verify(HostTensor.ofIntRows(new int[][] {{7, 8, 9}, {10, 11, 12}}));
            return new TargetShape(new boolean[] {true, true}, true, 3, 0);
        }
        return new TargetShape(new boolean[] {true, true}, false, 0, 0);
    }

    private static String outcome(Runnable call) {
        try {
            call.run();
            return "succeeded";
        } catch (MtpException e) {
            return e.kind() + ": " + e.getMessage().replaceAll("([A-Z0-9]+) \\[", "$1[");
        }
    }

    /** Runs the catalogue against the engine and the reference; returns every call whose outcome differs. */
    private static List<String> differences(String command) {
        TargetModel model = TargetFixture.load("tiny-target", TestEngines.fixtureCache()).target();
        List<String> out = new ArrayList<>();
        int compared = 0;
        try (LoadedTarget oracle = new ReferenceBackend().loadTarget(model, Map.of());
             LoadedTarget subject = new ExecBackend(command, Duration.ofSeconds(120)).loadTarget(model, Map.of())) {
            for (int state = 0; state < 4; state++) {   // a refused call changes nothing: one group per state
                TargetRows a = oracle.openRows(List.of());
                TargetRows b = subject.openRows(List.of());
                TargetShape shape = prepare(a, state);
                prepare(b, state);
                for (TargetBadCall call : TargetBadCall.values()) {
                    if (!call.appliesTo(shape)) {
                        continue;
                    }
                    String want = outcome(() -> call.invoke(a, model, shape, 42));
                    String got = outcome(() -> call.invoke(b, model, shape, 42));
                    compared++;
                    assertThat(want).as("the reference refuses %s", call).isNotEqualTo("succeeded");
                    if (!want.equals(got)) {
                        out.add(call + " (state " + state + "): reference " + want + "; engine " + got);
                    }
                    assertThat(got).as("%s (state %d) changed the engine's group; the calls after it would not "
                            + "be comparable", call, state).isNotEqualTo("succeeded");
                }
                a.close();
                b.close();
            }
        }
        System.out.printf("[sdk target skeleton] %s: %d bad calls compared, %d differ%n", command, compared,
                out.size());
        assertThat(compared).isGreaterThanOrEqualTo(TargetBadCall.values().length);
        return out;
    }

    @Test
    void thePythonTargetSkeletonRefusesTheCatalogueInTheReferencesWords() {
        assume("python target skeleton", missing("python3", "-c",
                "import sys, numpy; assert sys.version_info >= (3, 10)"));
        Path python = ROOT.resolve("adapters/python");
        assertThat(differences("env 'PYTHONPATH=" + python + "' python3 '"
                + python.resolve("examples/numpy_skeleton_backend.py") + "'")).isEmpty();
    }

    @Test
    void theTypeScriptTargetSkeletonRefusesTheCatalogueInTheReferencesWords() {
        assume("typescript target skeleton", missing("node", "-e",
                "process.exit(Number(process.versions.node.split('.')[0]) >= 20 ? 0 : 1)"));
        Path engine = ROOT.resolve("adapters/typescript/dist/examples/target_skeleton_backend.js");
        assertThat(engine).isRegularFile();
        assertThat(differences("node '" + engine + "'")).isEmpty();
    }
}
