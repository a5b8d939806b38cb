package org.mtporacle.conformance.target.tck;

import org.mtporacle.api.LoadedTarget;
import org.mtporacle.api.TargetModel;
import org.mtporacle.conformance.target.lockstep.TargetTolerance;
import org.mtporacle.reference.kernels.KernelMode;
import org.mtporacle.reference.kernels.Kernels;
import org.mtporacle.reference.target.ReferenceTarget;

import java.nio.file.Path;

/** The reference target (scalar kernels, chunked prefill) passes the target TCK against the reference under f32. */
class ReferenceTargetVerificationTest extends TargetBackendVerification {
    @Override
    protected LoadedTarget createTarget(TargetModel model) {
        return new ReferenceTarget(model, new Kernels(KernelMode.SCALAR, 1), ReferenceTarget.PrefillForm.CHUNKED);
    }

    @Override
    protected TargetTolerance tolerance() {
        return TargetTolerance.F32;
    }

    @Override
    protected int lockstepChains() {
        return 15;
    }

    @Override
    protected Path fixtureCache() {
        return Path.of("target", "fixture-cache");
    }
}
