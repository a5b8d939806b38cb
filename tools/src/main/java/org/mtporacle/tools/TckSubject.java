package org.mtporacle.tools;

import org.mtporacle.api.BackendProfile;
import org.mtporacle.api.MtpBackend;
import org.mtporacle.api.Tolerance;
import org.mtporacle.conformance.FixtureRecipe;
import org.mtporacle.conformance.chain.ContextSource;
import org.mtporacle.conformance.tck.BackendVerification;
import org.mtporacle.wire.ExecBackend;

import java.nio.file.Path;
import java.util.Map;

/**
 * {@link BackendVerification} for the backend {@code mtp tck --backend NAME} names: the JUnit Platform runs this class
 * in the tool's own JVM, so every rule runs with its own name, for in-process and {@code exec:} backends alike.
 * Configured through {@link #configure} before the launch (one run at a time).
 */
class TckSubject extends BackendVerification {
    private static MtpBackend backend;
    private static BackendProfile profile;
    private static int chains;
    private static int prefillSplit;
    private static FixtureRecipe dense;
    private static FixtureRecipe quantized;
    private static ContextSource contexts;
    private static boolean failFast;
    private static String firstFailure;

    static synchronized void configure(MtpBackend b, BackendProfile p, int lockstepChains, int prefillSplitLength,
                                       FixtureRecipe denseFixture, FixtureRecipe quantizedFixture,
                                       ContextSource contextSource) {
        backend = b;
        profile = p;
        chains = lockstepChains;
        prefillSplit = prefillSplitLength;
        dense = denseFixture;
        quantized = quantizedFixture;
        contexts = contextSource;
    }

    /** {@code --fail-fast}: after the first failing rule, every later one is skipped, naming it. */
    static synchronized void stopAfterFailure(boolean on) {
        failFast = on;
        firstFailure = null;
    }

    static synchronized void failed(String rule) {
        if (firstFailure == null) {
            firstFailure = rule;
        }
    }

    @org.junit.jupiter.api.BeforeEach
    void skipAfterAFailureWhenFailingFast() {
        String f;
        synchronized (TckSubject.class) {
            f = failFast ? firstFailure : null;
        }
        if (f != null) {
            org.junit.jupiter.api.Assumptions.abort("not run: --fail-fast stopped after " + f + " failed");
        }
    }

    @Override
    protected ContextSource contexts() {
        return contexts;
    }

    @Override
    protected String denseFixture() {
        return dense.name();
    }

    @Override
    protected String quantizedFixture() {
        return quantized.name();
    }

    @Override
    protected MtpBackend createBackend() {
        return backend;
    }

    @Override
    protected Map<String, String> backendOptions() {
        return profile.options();
    }

    @Override
    protected Tolerance tolerance() {
        return profile.tolerance();
    }

    @Override
    protected boolean supportsSeededSampling() {
        return backend.capabilities().seededSampling();
    }

    @Override
    protected boolean supportsQuantizedWeights() {
        return !(backend instanceof ExecBackend e) || e.loadsAffine(quantized.bits(), quantized.groupSize());
    }

    @Override
    protected int lockstepChains() {
        return chains;
    }

    @Override
    protected int prefillSplitLength() {
        return prefillSplit;
    }

    @Override
    protected Path fixtureCache() {
        return FixtureRecipe.defaultCache();
    }
}
