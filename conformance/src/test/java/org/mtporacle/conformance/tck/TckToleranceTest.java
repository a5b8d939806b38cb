package org.mtporacle.conformance.tck;

import org.junit.jupiter.api.Test;
import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.testkit.engine.EngineTestKit;
import org.junit.platform.testkit.engine.Events;
import org.mtporacle.api.MtpBackend;
import org.mtporacle.api.Tolerance;
import org.mtporacle.reference.ReferenceBackend;

import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;

/** The TCK holds a backend to the profile it declares; its {@code tolerance()} hook may tighten it, never loosen. */
class TckToleranceTest {

    /** The reference declares {@code exact}; this subclass claims {@code f32}, which is looser. */
    static class LooserThanDeclared extends BackendVerification {
        @Override
        protected MtpBackend createBackend() {
            return new ReferenceBackend();
        }

        @Override
        protected Tolerance tolerance() {
            return Tolerance.F32;
        }

        @Override
        protected Path fixtureCache() {
            return Path.of("target", "fixture-cache");
        }
    }

    @Test
    void aLooserHookFailsTheWholeClassNamingBothProfiles() {
        Events containers = EngineTestKit.engine("junit-jupiter").selectors(selectClass(LooserThanDeclared.class))
                .execute().containerEvents();
        var messages = containers.failed().stream().map(e -> e.getPayload(TestExecutionResult.class)
                .flatMap(TestExecutionResult::getThrowable).map(Throwable::getMessage).orElse("")).toList();
        assertThat(messages).anyMatch(m -> m.contains("tolerance() returns f32 (token gap 0.0001, K/V NMSE 1E-9, "
                + "hidden NMSE 0), looser than the profile reference declares for these options, exact (token gap 0, "
                + "K/V NMSE 0, hidden NMSE 0)"));
    }

    @Test
    void theDefaultIsTheDeclaredProfile() {
        BackendVerification v = new BackendVerification() {
            @Override
            protected MtpBackend createBackend() {
                return new ReferenceBackend();
            }
        };
        v.checkAvailable();
        assertThat(v.tolerance()).isEqualTo(Tolerance.EXACT);
    }
}
