package org.example.mtp;

import org.mtporacle.api.MtpBackend;
import org.mtporacle.conformance.lockstep.Tolerance;
import org.mtporacle.conformance.tck.BackendVerification;

/** Every rule of the row contract, run on the example backend against the reference (the TCK). */
class ExampleBackendVerificationTest extends BackendVerification {
    @Override
    protected MtpBackend createBackend() {
        return new ExampleBackend();
    }

    @Override
    protected Tolerance tolerance() {
        return Tolerance.F32; // a backend computing in f32; BF16 for one computing activations in bf16
    }

    @Override
    protected boolean supportsSeededSampling() {
        return true; // false skips the §7 checks, with the reason
    }

    @Override
    protected int lockstepChains() {
        return 20; // the default is 40; fewer keeps this template's build quick
    }
}
