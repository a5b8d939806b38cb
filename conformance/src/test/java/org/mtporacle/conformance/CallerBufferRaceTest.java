package org.mtporacle.conformance;

import org.junit.jupiter.api.Test;
import org.mtporacle.api.DraftRows;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.RowCheckpoint;
import org.mtporacle.reference.ReferenceBackend;
import org.mtporacle.reference.ReferenceDraftModel;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A context buffer another thread changes during {@code prefill}: a call that succeeds has checked and used one copy,
 * so the group never holds a value it did not check (a NaN), however the race falls.
 */
class CallerBufferRaceTest {
    private static final int TRIES = 300;

    @Test
    void aPrefillThatSucceedsNeverPublishesAValueItDidNotCheck() throws Exception {
        MtpModel model = FixtureRecipe.named("tiny").load(Path.of("target", "fixture-cache"));
        int h = model.config().hiddenSize();
        int l = 8;
        float[] good = new float[l * h];
        Arrays.fill(good, 0.5f);
        MemorySegment buf = MemorySegment.ofArray(good.clone());
        HostTensor ctx = HostTensor.view(org.mtporacle.api.DType.F32, new int[] {1, l, h}, buf);
        AtomicBoolean stop = new AtomicBoolean();
        Thread flipper = Thread.ofPlatform().start(() -> {
            long i = 0;
            while (!stop.get()) { // one element NaN for a moment, then valid for longer: a call sees either
                long at = (i++ * 7919) % ((long) l * h);
                buf.setAtIndex(ValueLayout.JAVA_FLOAT, at, Float.NaN);
                for (int k = 0; k < 300; k++) {
                    Thread.onSpinWait();
                }
                buf.setAtIndex(ValueLayout.JAVA_FLOAT, at, 0.5f);
                for (int k = 0; k < 3000; k++) {
                    Thread.onSpinWait();
                }
            }
        });
        int published = 0;
        try (ReferenceDraftModel m = ReferenceBackend.load(model, ReferenceBackend.configuredMode(), 1)) {
            for (int t = 0; t < TRIES; t++) {
                try (DraftRows g = m.openRows(Arrays.asList((RowCheckpoint) null))) {
                    try {
                        g.prefill(HostTensor.ofInts(new int[l], 1, l), ctx);
                    } catch (MtpException refused) {
                        continue; // it saw the NaN and refused: the group is unchanged
                    }
                    published++;
                    float[] hidden = g.capture(0).hidden().toFloatArray();
                    for (float v : hidden) {
                        assertThat(Float.isFinite(v)).as("try %d: a NaN reached the group's hidden", t).isTrue();
                    }
                }
            }
        } finally {
            stop.set(true);
            flipper.join();
        }
        assertThat(published).as("prefills that succeeded").isPositive();
    }
}
