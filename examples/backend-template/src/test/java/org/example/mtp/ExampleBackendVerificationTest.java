package org.example.mtp;

import org.mtporacle.api.MtpBackend;
import org.mtporacle.conformance.tck.BackendVerification;

/**
 * Every rule of the row contract, run on the example backend against the reference (the TCK). It holds the backend
 * to the tolerance its profiles declare (f32 by default); override {@code tolerance()} only to tighten it.
 */
class ExampleBackendVerificationTest extends BackendVerification {
    @Override
    protected MtpBackend createBackend() {
        return new ExampleBackend();
    }

    @Override
    protected boolean supportsSeededSampling() {
        return true; // false skips the §7 checks, with the reason
    }

    @Override
    protected boolean supportsQuantizedWeights() {
        return true; // false skips the 4-bit fixture, with the reason
    }

    @Override
    protected int lockstepChains() {
        return 20; // the default is 40; fewer keeps this template's build quick
    }
}
