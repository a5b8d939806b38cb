package org.mtporacle.tools;

import org.mtporacle.api.BackendProfile;
import org.mtporacle.api.DraftModel;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.LoadedTarget;
import org.mtporacle.api.MtpBackend;
import org.mtporacle.api.TargetModel;
import org.mtporacle.conformance.FixtureRecipe;
import org.mtporacle.conformance.target.lockstep.TargetTolerance;
import org.mtporacle.conformance.target.tck.TargetBackendVerification;

import java.nio.file.Path;

/**
 * {@link TargetBackendVerification} for the backend {@code mtp tck --backend NAME} names when it runs the hybrid target
 * ({@link MtpBackend#supportsTarget()}, for {@code exec:} engines the wire's {@code target} capability): the JUnit
 * Platform runs it beside {@link TckSubject}, so the target rules (spec §13) appear in the same report with their own
 * names. Configured through {@link #configure} before the launch (one run at a time).
 */
class TargetTckSubject extends TargetBackendVerification {
    private static MtpBackend backend;
    private static BackendProfile profile;
    private static int chains;
    private static String fixture;

    static synchronized void configure(MtpBackend b, BackendProfile p, int lockstepChains, String targetFixture) {
        backend = b;
        profile = p;
        chains = lockstepChains;
        fixture = targetFixture;
    }

    /** True when {@code b} runs the target, so that {@code mtp tck} adds these rules. */
    static boolean applies(MtpBackend b) {
        return b.supportsTarget();
    }

    @Override
    protected LoadedTarget createTarget(TargetModel model) {
        return backend.loadTarget(model, profile.options());
    }

    @Override
    protected DraftModel createDrafter(MtpModel model) {
        return backend.load(model, profile.options());
    }

    @Override
    protected TargetTolerance tolerance() {
        return TargetTolerance.of(profile.tolerance());
    }

    @Override
    protected String fixture() {
        return fixture;
    }

    @Override
    protected int lockstepChains() {
        return chains;
    }

    @Override
    protected Path fixtureCache() {
        return FixtureRecipe.defaultCache();
    }
}
