package org.example.mtp;

import org.mtporacle.api.MtpBackend;
import org.mtporacle.conformance.tck.BackendVerification;

/**
 * Every rule of the row contract on the example backend, against the reference (the TCK), held to the tolerance the
 * backend's profiles declare (f32 by default; override {@code tolerance()} only to tighten it).
 */
class ExampleBackendVerificationTest extends BackendVerification {
    @Override
    protected MtpBackend createBackend() {
        return new ExampleBackend();
    }

    @Override
    protected boolean supportsSeededSampling() {
        return true; // false skips the §7 checks, naming this hook; supportsQuantizedWeights() likewise
    }

    @Override
    protected int lockstepChains() {
        return 20; // the default is 40; fewer keeps this template's build quick
    }
}
