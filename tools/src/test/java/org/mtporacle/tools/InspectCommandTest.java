package org.mtporacle.tools;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.RowCheckpoint;
import org.mtporacle.api.Tolerance;
import org.mtporacle.conformance.chain.Action;
import org.mtporacle.conformance.trace.ChainTrace;
import org.mtporacle.conformance.trace.TraceFiles;
import org.mtporacle.io.CheckpointFiles;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/** {@code mtp inspect} detects checkpoint files and chain traces, as text and JSON; other JSON is refused. */
class InspectCommandTest {
    @Test
    void checkpointFileShowsItsSchemaAlignmentAndTensors(@TempDir Path tmp) {
        RowCheckpoint cp = new RowCheckpoint(RowCheckpoint.SCHEMA, 3, 2, "abc",
                HostTensor.ofFloats(new float[16], 1, 2, 2, 4), HostTensor.ofFloats(new float[16], 1, 2, 2, 4),
                HostTensor.ofFloats(new float[8], 1, 1, 8));
        Path f = tmp.resolve("row.safetensors");
        CheckpointFiles.write(cp, f);
        Cli r = Cli.run("inspect", f.toString());
        assertThat(r.exit()).isZero();
        assertThat(r.out()).contains("kind: checkpoint", "processedTokens: 3", "draftOffset: 2", "aligned: true",
                "modelIdentity: abc", "keys: F32[1, 2, 2, 4]");
        Cli j = Cli.run("inspect", "--json", f.toString());
        assertThat(j.out()).contains("\"kind\" : \"checkpoint\"", "\"goldenDigest\"", "\"contentDigest\"");
        assertThat(r.out()).contains("contentDigest: " + cp.contentDigest(), "recordedDigest: none");

        Path sealed = tmp.resolve("sealed.safetensors");
        Cli s = Cli.run("checkpoint", "--seal", f.toString(), "--out", sealed.toString());
        assertThat(s.exit()).isZero();
        assertThat(Cli.run("inspect", sealed.toString()).out()).contains("recordedDigest: matches");

        Path relabelled = tmp.resolve("relabelled.safetensors");
        RowCheckpoint good = cp.sealed();
        CheckpointFiles.write(new RowCheckpoint(cp.schema(), 3, 2, "abd", cp.keys(), cp.values(), cp.hidden(),
                good.digest()), relabelled);
        Cli bad = Cli.run("inspect", relabelled.toString());
        assertThat(bad.exit()).isZero();
        assertThat(bad.out()).contains("recordedDigest: DOES NOT MATCH (recorded " + good.digest().substring(0, 12)
                + "…)").doesNotContain(good.digest());
    }

    @Test
    void chainTraceShowsItsActionsAndDivergence(@TempDir Path tmp) throws Exception {
        Path f = tmp.resolve("chain.json");
        TraceFiles.write(new ChainTrace(ChainTrace.FORMAT, "tiny", "id", "mlx", Map.of(), Tolerance.F32, 42,
                List.of(new Action.Append(List.of(-1), false), new Action.Prefill(3, 7)), null, 9), f);
        Cli r = Cli.run("inspect", f.toString());
        assertThat(r.exit()).isZero();
        assertThat(r.out()).contains("kind: chain trace", "backend: mlx", "actions: 2 (shrunk from 9)",
                "prefill L=3 seed=7");
        Path other = tmp.resolve("other.json");
        Files.writeString(other, "{\"format\": \"something\"}");
        Cli bad = Cli.run("inspect", other.toString());
        assertThat(bad.exit()).isEqualTo(MtpCommand.EXIT_ERROR);
        assertThat(bad.out()).contains("format 'something', expected a chain trace");
    }

    @Test
    void sealingInPlaceOrThroughALinkToTheInputIsRefusedAndTheFileIsUnchanged(@TempDir Path tmp) throws Exception {
        RowCheckpoint cp = new RowCheckpoint(RowCheckpoint.SCHEMA, 1, 0, "abc", null, null,
                HostTensor.ofFloats(new float[] {1, 2, 3}, 1, 1, 3));
        Path f = tmp.resolve("in-place.safetensors");
        CheckpointFiles.write(cp, f);
        byte[] before = Files.readAllBytes(f);
        Path link = Files.createSymbolicLink(tmp.resolve("link.safetensors"), f);
        for (Path out : List.of(f, link)) {
            Cli r = Cli.run("checkpoint", "--seal", f.toString(), "--out", out.toString(), "--force");
            assertThat(r.exit()).as(r.out()).isEqualTo(MtpCommand.EXIT_ERROR);
            assertThat(r.out()).contains("--out").contains("is the --seal input");
            assertThat(Files.readAllBytes(f)).isEqualTo(before);
        }
    }
}
