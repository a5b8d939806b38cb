package org.mtporacle.conformance.tck;

import org.mtporacle.api.MtpBackend;
import org.mtporacle.reference.ReferenceBackend;

import java.nio.file.Path;

/** The reference passes its own TCK, exactly. */
class ReferenceBackendVerificationTest extends BackendVerification {
    @Override
    protected MtpBackend createBackend() {
        return new ReferenceBackend();
    }

    @Override
    protected Path fixtureCache() {
        return Path.of("target", "fixture-cache");
    }
}
