package org.mtporacle.tools;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/** A conform run stopped by a signal writes the report of what finished, as a time-limited shard does. */
class InterruptTest {
    @TempDir
    Path dir;

    @Test
    void aSignalStopsConformAfterItsCurrentChainAndTheReportHoldsWhatRan() throws Exception {
        Path report = dir.resolve("r");
        List<String> cmd = new ArrayList<>(List.of(ProcessHandle.current().info().command().orElseThrow(),
                "--add-modules", "jdk.incubator.vector", "-XX:+UseSerialGC", "-cp",
                System.getProperty("java.class.path")));
        String cache = System.getProperty("mtp.cache");
        if (cache != null) {
            cmd.add("-Dmtp.cache=" + cache);
        }
        cmd.addAll(List.of(MtpCommand.class.getName(), "conform", "--backend", "drifting", "--fixture", "tiny",
                "--fixture", "small", "--chains", "1000000", "--quiet", "--report", report.toString()));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
        StringBuilder seen = new StringBuilder();
        Path traces = report.resolve("traces");
        long deadline = System.nanoTime() + 180_000_000_000L;
        while (!hasFile(traces) && System.nanoTime() < deadline && p.isAlive()) {
            Thread.sleep(200); // drifting fails its chains: a trace means chains are running
        }
        assertThat(hasFile(traces)).as("a chain ran").isTrue();
        p.toHandle().destroy(); // SIGTERM runs the same shutdown hook as Ctrl-C's SIGINT; the pipes stay open
        for (String l; (l = out.readLine()) != null; ) {
            seen.append(l).append('\n');
        }
        assertThat(p.waitFor(120, TimeUnit.SECONDS)).isTrue();
        String all = seen.toString();
        assertThat(p.exitValue()).as(all).isEqualTo(143); // the signal's own status
        assertThat(all).contains("stopping after the current chain").contains("stopped by a signal");
        JsonNode json = new ObjectMapper().readTree(report.resolve("report.json").toFile());
        assertThat(json.get("entries")).as(all).hasSize(1);
        long ran = json.get("entries").get(0).get("chainsRun").asLong();
        assertThat(ran).as(all).isBetween(1L, 999_999L);
        assertThat(json.get("unfinished").toString()).contains("drifting @ tiny (stopped after " + ran
                + " of 1000000 chains)").contains("drifting @ small");
    }

    private static boolean hasFile(Path d) throws java.io.IOException {
        if (!java.nio.file.Files.isDirectory(d)) {
            return false;
        }
        try (var s = java.nio.file.Files.list(d)) {
            return s.findAny().isPresent();
        }
    }
}
