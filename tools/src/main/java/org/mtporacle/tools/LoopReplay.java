package org.mtporacle.tools;

import org.mtporacle.api.DraftModel;
import org.mtporacle.api.HiddenTap;
import org.mtporacle.api.LoadedTarget;
import org.mtporacle.api.MtpBackend;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.TargetModel;
import org.mtporacle.api.Tolerance;
import org.mtporacle.api.UntrustedText;
import org.mtporacle.conformance.FixtureRecipe;
import org.mtporacle.conformance.loop.lockstep.LoopChainOutcome;
import org.mtporacle.conformance.loop.lockstep.LoopDivergence;
import org.mtporacle.conformance.loop.lockstep.LoopLockstep;
import org.mtporacle.conformance.loop.trace.LoopChainTrace;
import org.mtporacle.conformance.target.lockstep.TargetFixture;
import org.mtporacle.reference.ReferenceBackend;
import org.mtporacle.reference.ReferenceDraftModel;
import org.mtporacle.reference.kernels.Kernels;
import org.mtporacle.reference.target.ReferenceTarget;
import org.mtporacle.reference.target.SpeculativeDecoding.KvPolicy;

import java.nio.file.Path;
import java.util.Map;

/**
 * {@code mtp replay} of a loop chain trace ({@code mtp-oracle-loop-chain}): the backend's target and drafter in loop
 * lockstep with the reference's on the trace's fixture, under the trace's profile, tap and drafter KV policy, both
 * loaded with {@code options} (the trace's backend options unless {@code --option} replaced them).
 */
final class LoopReplay {
    private LoopReplay() {
    }

    static int run(Path trace, LoopChainTrace t, MtpBackend b, Map<String, String> options) {
        if (!b.supportsTarget()) {
            throw new MtpException(MtpException.Kind.UNAVAILABLE, "replay: " + trace + " is a loop trace, but "
                    + "backend " + UntrustedText.quote(b.name()) + " runs the drafter only (no hybrid target)");
        }
        if (!FixtureRecipe.TARGETS.contains(t.fixture())) {
            throw MtpException.malformedFile("loop trace " + trace + ": fixture " + UntrustedText.quote(t.fixture())
                    + " is not a target fixture (known: " + String.join(", ", FixtureRecipe.TARGETS) + ")");
        }
        // the fixture as mtp conform --loop and the TCK load it (TargetFixture), so the replay runs the same weights
        TargetFixture fx = TargetFixture.load(t.fixture(), FixtureRecipe.defaultCache());
        TargetModel model = fx.target();
        if (!t.modelIdentity().isEmpty() && !t.modelIdentity().equals(model.identity())) {
            System.err.println("warning: fixture " + UntrustedText.clip(t.fixture()) + "'s target now has identity "
                    + model.identity() + ", the trace was recorded on "
                    + UntrustedText.digestPrefix(t.modelIdentity()));
        }
        Tolerance tol = Tolerance.named(t.tolerance());
        HiddenTap tap = HiddenTap.of(t.tap());
        KvPolicy policy = KvPolicy.of(t.kv());
        System.out.printf("replaying loop trace %s: %d actions, backend %s %s, fixture %s (target %s), tolerance %s, "
                + "tap %s, drafter KV %s%n", UntrustedText.path(trace), t.actions().size(), UntrustedText.clip(b.name()),
                UntrustedText.clip(new java.util.TreeMap<>(options).toString()), UntrustedText.clip(t.fixture()),
                UntrustedText.digestPrefix(model.identity()), tol.name(), tap.label(), policy.label());
        Kernels kernels = new Kernels(ReferenceBackend.configuredMode(), 1);
        try (ReferenceTarget oracleTarget = new ReferenceTarget(model, kernels);
             ReferenceDraftModel oracleDrafter = new ReferenceDraftModel(fx.drafter(), kernels);
             LoadedTarget target = b.loadTarget(model, options);
             DraftModel drafter = b.load(oracleDrafter.model(), options)) {
            LoopChainOutcome out = new LoopLockstep(oracleTarget, oracleDrafter, target, drafter, tol, tap, policy)
                    .run(t.seed(), t.actions());
            for (int i = 0; i < t.actions().size(); i++) {
                String mark = i < out.executed() - (out.passed() ? 0 : 1) ? "ok  " : i == out.executed() - 1
                        && !out.passed() ? "FAIL" : "    ";
                System.out.printf("  %3d %s %s%n", i, mark, t.actions().get(i).describe());
            }
            if (out.passed()) {
                System.out.println("passed: the chain no longer diverges");
                return MtpCommand.EXIT_OK;
            }
            LoopDivergence d = out.divergence();
            System.out.println("diverged at action " + d.actionIndex() + " (" + d.group() + ", " + d.kind()
                    + (d.row() < 0 ? "" : ", row " + d.row()) + (d.position() < 0 ? "" : ", position "
                    + d.position()) + "): " + UntrustedText.line(d.message()));
            return MtpCommand.EXIT_FAILED;
        }
    }
}
