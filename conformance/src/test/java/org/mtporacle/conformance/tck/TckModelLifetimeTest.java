package org.mtporacle.conformance.tck;

import org.junit.jupiter.api.Test;
import org.junit.platform.testkit.engine.EngineTestKit;
import org.mtporacle.api.Availability;
import org.mtporacle.api.BackendProfile;
import org.mtporacle.api.DraftModel;
import org.mtporacle.api.DraftRows;
import org.mtporacle.api.MtpBackend;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.RowCheckpoint;
import org.mtporacle.reference.ReferenceBackend;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;

/** Each rule closes the models it loaded when it ends: an exec: engine is one process per model, not one per rule. */
class TckModelLifetimeTest {
    static final AtomicInteger OPEN = new AtomicInteger();
    static final AtomicInteger MOST_OPEN = new AtomicInteger();
    static final AtomicInteger LOADS = new AtomicInteger();

    /** The reference, counting the models that are open at once. */
    static final class Counting implements MtpBackend {
        private final ReferenceBackend inner = new ReferenceBackend();

        @Override
        public String name() {
            return inner.name();
        }

        @Override
        public String description() {
            return "the reference, counting open models";
        }

        @Override
        public Availability availability() {
            return inner.availability();
        }

        @Override
        public List<BackendProfile> profiles() {
            return inner.profiles();
        }

        @Override
        public DraftModel load(MtpModel model, Map<String, String> options) {
            DraftModel d = inner.load(model, options);
            LOADS.incrementAndGet();
            MOST_OPEN.accumulateAndGet(OPEN.incrementAndGet(), Math::max);
            return new DraftModel() {
                private boolean closed;

                @Override
                public MtpModel model() {
                    return d.model();
                }

                @Override
                public String numerics() {
                    return d.numerics();
                }

                @Override
                public DraftRows openRows(List<RowCheckpoint> checkpoints) {
                    return d.openRows(checkpoints);
                }

                @Override
                public void close() {
                    if (!closed) {
                        closed = true;
                        OPEN.decrementAndGet();
                    }
                    d.close();
                }
            };
        }
    }

    static class CountingVerification extends BackendVerification {
        @Override
        protected MtpBackend createBackend() {
            return new Counting();
        }

        @Override
        protected int lockstepChains() {
            return 1;
        }

        @Override
        protected Path fixtureCache() {
            return Path.of("target", "fixture-cache");
        }
    }

    @Test
    void noRuleLeavesAModelOpenForTheNext() {
        EngineTestKit.engine("junit-jupiter").selectors(selectClass(CountingVerification.class)).execute();
        assertThat(LOADS.get()).as("models loaded over the run").isGreaterThan(10);
        assertThat(MOST_OPEN.get()).as("models open at once (of %d loaded)", LOADS.get()).isLessThanOrEqualTo(4);
        assertThat(OPEN.get()).as("models open after the run").isZero();
    }
}
