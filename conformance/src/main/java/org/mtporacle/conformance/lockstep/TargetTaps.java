package org.mtporacle.conformance.lockstep;

import org.mtporacle.api.HiddenTap;
import org.mtporacle.api.LoadedTarget;
import org.mtporacle.api.MtpConfig;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.TargetModel;
import org.mtporacle.conformance.chain.ContextSource;
import org.mtporacle.reference.kernels.KernelMode;
import org.mtporacle.reference.kernels.Kernels;
import org.mtporacle.reference.target.ReferenceTarget;

import java.util.Objects;

/**
 * The reference target whose hidden taps are a lockstep run's contexts, and which tap (spec §13.4). The harness keeps
 * one group of its rows beside the reference drafter's rows ({@link TargetMirror}); both sides of the run receive the
 * same contexts, so the comparison is unchanged.
 *
 * @param target a target whose hidden size and vocabulary are the drafter's ({@link #checkFits})
 * @param tap    the hidden that feeds the drafter
 */
public record TargetTaps(LoadedTarget target, HiddenTap tap) {
    public TargetTaps {
        Objects.requireNonNull(target, "target");
        Objects.requireNonNull(tap, "tap");
    }

    /** The declared source these taps are, for reports and traces. */
    public ContextSource source() {
        return new ContextSource.Target(tap);
    }

    /**
     * The reference target of {@code model} on {@code mode}'s kernels: give it the reference drafter's mode, so the
     * contexts are as reproducible as the oracle (bit for bit on one CPU and any thread count; the scalar kernels, the
     * defining accumulation order, on any CPU, as goldens need).
     */
    public static ReferenceTarget reference(TargetModel model, KernelMode mode, int threads) {
        return new ReferenceTarget(model, new Kernels(mode, threads));
    }

    /**
     * Checks that the target's taps and tokens fit {@code drafter}: the same hidden size and vocabulary.
     *
     * @throws MtpException INCOMPATIBLE_MODEL naming both values otherwise
     */
    public void checkFits(MtpModel drafter) {
        MtpConfig t = target.model().config().shape();
        MtpConfig d = drafter.config();
        if (t.hiddenSize() != d.hiddenSize() || t.vocabSize() != d.vocabSize()) {
            throw MtpException.incompatibleModel("contexts: the target " + target.model().source() + " has hidden "
                    + t.hiddenSize() + " and vocabulary " + t.vocabSize() + ", the drafter " + drafter.source()
                    + " hidden " + d.hiddenSize() + " and vocabulary " + d.vocabSize() + "; its taps cannot feed it");
        }
    }
}
