package org.mtporacle.conformance.target.tck;

import org.mtporacle.api.DraftModel;
import org.mtporacle.api.LoadedTarget;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.TargetModel;
import org.mtporacle.conformance.target.lockstep.TargetTolerance;
import org.mtporacle.reference.ReferenceDraftModel;
import org.mtporacle.reference.kernels.KernelMode;
import org.mtporacle.reference.kernels.Kernels;
import org.mtporacle.reference.target.ReferenceTarget;

import java.nio.file.Path;

/**
 * The reference target (scalar kernels, chunked prefill), with the reference drafter on scalar kernels for §13.5's loop
 * chains, passes the target TCK against the reference under f32.
 */
class ReferenceTargetVerificationTest extends TargetBackendVerification {
    @Override
    protected LoadedTarget createTarget(TargetModel model) {
        return new ReferenceTarget(model, new Kernels(KernelMode.SCALAR, 1), ReferenceTarget.PrefillForm.CHUNKED);
    }

    @Override
    protected DraftModel createDrafter(MtpModel model) {
        return new ReferenceDraftModel(model, new Kernels(KernelMode.SCALAR, 1));
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
