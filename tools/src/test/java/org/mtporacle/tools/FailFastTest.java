package org.mtporacle.tools;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/** A run whose engine cannot start or cannot shake hands stops at once: one line, exit 3. */
class FailFastTest {
    @TempDir
    Path dir;

    @Test
    void anEngineThatCannotStartCannotRunHereInConformAndTck() {
        String missing = "exec:" + dir.resolve("no-such-engine");
        for (String[] args : new String[][] {
                {"tck", "--backend", missing, "--report", dir.resolve("t").toString()},
                {"conform", "--backend", missing, "--fixture", "tiny", "--chains", "1", "--quiet",
                        "--report", dir.resolve("c").toString()}}) {
            Cli r = Cli.run(args);
            assertThat(r.exit()).as(r.out()).isEqualTo(MtpCommand.EXIT_ERROR);
            assertThat(r.out().strip().lines()).as(r.out()).hasSize(1);
            assertThat(r.out()).contains("cannot run here").contains("no-such-engine");
        }
    }

    @Test
    void anEngineThatCannotAnswerHelloIsOneLineNotAFailurePerRule() throws Exception {
        Path engine = dir.resolve("mute.sh");
        Files.writeString(engine, "read line\necho 'Traceback: no hello here' >&2\nexit 7\n");
        for (String cmd : new String[] {"tck", "conform"}) {
            Cli r = Cli.run(cmd, "--backend", "exec:sh " + engine, "--chains", "1", "--report",
                    dir.resolve(cmd).toString());
            assertThat(r.exit()).as(r.out()).isEqualTo(MtpCommand.EXIT_ERROR);
            assertThat(r.out().strip().lines()).as(r.out()).hasSize(1);
            assertThat(r.out()).contains("failed its handshake").contains("status 7").contains("no hello here");
            assertThat(dir.resolve(cmd).resolve("report.json")).doesNotExist();
        }
    }
}
