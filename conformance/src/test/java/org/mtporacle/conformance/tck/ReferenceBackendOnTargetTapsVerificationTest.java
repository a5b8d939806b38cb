package org.mtporacle.conformance.tck;

import org.mtporacle.api.HiddenTap;
import org.mtporacle.api.MtpBackend;
import org.mtporacle.conformance.chain.ContextSource;
import org.mtporacle.reference.ReferenceBackend;

import java.nio.file.Path;

/** The reference passes its own TCK on real taps: the lockstep checks fed by tiny-target's reference target. */
class ReferenceBackendOnTargetTapsVerificationTest extends BackendVerification {
    @Override
    protected MtpBackend createBackend() {
        return new ReferenceBackend();
    }

    @Override
    protected ContextSource contexts() {
        return new ContextSource.Target(HiddenTap.PRE_NORM);
    }

    @Override
    protected String denseFixture() {
        return "tiny-target";
    }

    @Override
    protected String quantizedFixture() {
        return "tiny-target-q4";
    }

    @Override
    protected int lockstepChains() {
        return 20;
    }

    @Override
    protected Path fixtureCache() {
        return Path.of("target", "fixture-cache");
    }
}
