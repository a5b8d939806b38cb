package org.mtporacle.conformance;

import org.junit.jupiter.api.Test;
import org.mtporacle.api.DraftRows;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.MtpModel;
import org.mtporacle.reference.ReferenceBackend;
import org.mtporacle.reference.ReferenceDraftModel;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

/**
 * Closing a model while a call computes on one of its groups (spec §11.11: one call at a time, close waits): the call
 * finishes or fails with ILLEGAL_STATE, never another exception, and close returns.
 */
class ModelCloseDuringCallTest {
    private static final int TRIES = 10;
    private static final int L = 256;

    @Test
    void closeWaitsForARunningCallOrTheCallIsRefusedCleanly() throws Exception {
        MtpModel model = FixtureRecipe.named("tiny").load(Path.of("target", "fixture-cache"));
        int h = model.config().hiddenSize();
        float[] ctx = new float[L * h];
        Arrays.fill(ctx, 0.25f);
        int[] ids = new int[L];
        for (int t = 0; t < TRIES; t++) {
            ReferenceDraftModel m = ReferenceBackend.load(model, ReferenceBackend.configuredMode(), 4);
            DraftRows g = m.openRows(Arrays.asList((org.mtporacle.api.RowCheckpoint) null));
            AtomicReference<Throwable> thrown = new AtomicReference<>();
            Thread call = Thread.ofPlatform().start(() -> {
                try {
                    for (int i = 0; i < 20; i++) {
                        g.prefill(HostTensor.ofInts(ids, 1, L), HostTensor.ofFloats(ctx, 1, L, h));
                    }
                } catch (Throwable e) {
                    thrown.set(e);
                }
            });
            Thread.sleep(20 + 7 * t);
            assertTimeoutPreemptively(Duration.ofSeconds(60), m::close, "close hung while a call ran (try " + t + ")");
            call.join(60_000);
            assertThat(call.isAlive()).as("the call hung after close (try %d)", t).isFalse();
            Throwable e = thrown.get();
            if (e != null) {
                assertThat(e).as("try %d", t).isInstanceOf(MtpException.class);
                assertThat(((MtpException) e).kind()).as("try %d: %s", t, e.getMessage())
                        .isEqualTo(MtpException.Kind.ILLEGAL_STATE);
            }
        }
    }
}
