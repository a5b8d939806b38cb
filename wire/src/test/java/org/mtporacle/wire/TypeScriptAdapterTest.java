package org.mtporacle.wire;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code adapters/typescript}'s own tests (the SDK's framing, handshake, errors and its example engine over a pipe),
 * run from the project's test command with Node's test runner. Skips, printing why, where Node 20 or newer is missing.
 */
class TypeScriptAdapterTest {
    private static final Path ROOT = Path.of("..").toAbsolutePath().normalize();
    private static final Path TESTS = ROOT.resolve("adapters/typescript/test");

    private static String nodeMissing() {
        if (!Files.isDirectory(TESTS)) {
            return "adapters/typescript is not in this checkout (" + TESTS + ")";
        }
        try {
            Process p = new ProcessBuilder("node", "--version").redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
            if (!p.waitFor(30, TimeUnit.SECONDS) || p.exitValue() != 0) {
                return "node --version failed: " + out;
            }
            int major = Integer.parseInt(out.replaceFirst("^v", "").split("\\.")[0]);
            return major >= 20 ? null : "Node " + out + " is older than the SDK's Node 20";
        } catch (IOException | InterruptedException | NumberFormatException e) {
            return "node is not installed (" + e.getMessage() + ")";
        }
    }

    @Test
    void theTypeScriptSdkTestsPassUnderNode() throws Exception {
        String why = nodeMissing();
        if (why != null) {
            System.out.println("[typescript adapter] skipped: " + why);
        }
        Assumptions.assumeTrue(why == null, why);
        Process p = new ProcessBuilder("node", "--test", "adapters/typescript/test/").directory(ROOT.toFile())
                .redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(180, TimeUnit.SECONDS)).as("node --test finished").isTrue();
        System.out.println("[typescript adapter] " + out.lines().filter(l -> l.startsWith("# pass")
                || l.startsWith("# fail")).reduce((a, b) -> a + ", " + b).orElse(""));
        assertThat(p.exitValue()).as("node --test adapters/typescript/test/ output:%n%s", out).isZero();
        assertThat(out).contains("# fail 0");
    }
}
