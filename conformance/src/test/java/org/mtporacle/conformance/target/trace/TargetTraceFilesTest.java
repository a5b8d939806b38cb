package org.mtporacle.conformance.target.trace;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.mtporacle.api.MtpException;
import org.mtporacle.conformance.target.chain.TargetAction;
import org.mtporacle.conformance.target.chain.TargetBadCall;
import org.mtporacle.conformance.target.chain.TargetChainGenerator;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Target chain traces round-trip every action exactly, and a reader refuses another format or version. */
class TargetTraceFilesTest {
    @TempDir
    Path tmp;

    @Test
    void everyActionOfGeneratedChainsRoundTrips() {
        TargetChainGenerator gen = new TargetChainGenerator(TargetChainGenerator.Limits.defaults());
        for (long seed = 0; seed < 50; seed++) {
            List<TargetAction> chain = gen.generate(seed);
            Path f = tmp.resolve("t" + seed + ".json");
            TargetTraceFiles.write(f, new TargetChainTrace("tiny-target", "simple", "f32", "dv_dk/K", seed, chain,
                    seed % 2 == 0 ? null : "STATE_TENSOR", 3, 1, -1, "row 1: convWindows NMSE 2.5 > 1e-09 f32"));
            TargetChainTrace back = TargetTraceFiles.read(f);
            assertThat(back.actions()).isEqualTo(chain);
            assertThat(back.seed()).isEqualTo(seed);
            assertThat(back.divergenceKind()).isEqualTo(seed % 2 == 0 ? null : "STATE_TENSOR");
        }
        List<TargetAction> all = List.of(new TargetAction.Append(List.of(-1, 0, 2)), new TargetAction.Filter(3, true),
                new TargetAction.Prefill(70, -4), new TargetAction.Verify(0, 5, 100),
                new TargetAction.Commit(TargetAction.Acceptance.MATCHED, 6), new TargetAction.Capture(7),
                new TargetAction.Bad(TargetBadCall.COMMIT_ACCEPTED_EQUALS_WIDTH, 8));
        Path f = tmp.resolve("all.json");
        TargetTraceFiles.write(f, new TargetChainTrace("tiny-target", "x", "exact", "dk_dv/K-1", 1, all, null, -1, -1,
                -1, null));
        assertThat(TargetTraceFiles.read(f).actions()).isEqualTo(all);
    }

    @Test
    void anotherFormatOrVersionIsRefusedNamingBoth() throws Exception {
        Path f = tmp.resolve("old.json");
        Files.writeString(f, "{\"format\": \"mtp-oracle-target-chain\", \"version\": 2, \"actions\": []}");
        assertThatThrownBy(() -> TargetTraceFiles.read(f)).isInstanceOf(MtpException.class)
                .hasMessageContaining("version 2").hasMessageContaining("expected 'mtp-oracle-target-chain' version 1");
        Files.writeString(f, "{\"format\": \"mtp-oracle-chain\", \"version\": 1}");
        assertThatThrownBy(() -> TargetTraceFiles.read(f)).isInstanceOf(MtpException.class)
                .hasMessageContaining("format 'mtp-oracle-chain'");
    }
}
