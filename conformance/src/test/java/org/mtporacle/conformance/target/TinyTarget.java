package org.mtporacle.conformance.target;

import org.mtporacle.conformance.target.lockstep.TargetFixture;
import org.mtporacle.reference.kernels.KernelMode;
import org.mtporacle.reference.kernels.Kernels;
import org.mtporacle.reference.target.ReferenceTarget;

import java.nio.file.Path;

/** The {@code tiny-target} fixture the kit's own target tests run on (written once per JVM, cached on disk). */
public final class TinyTarget {
    private static TargetFixture fixture;

    private TinyTarget() {
    }

    public static synchronized TargetFixture fixture() {
        if (fixture == null) {
            fixture = TargetFixture.load("tiny-target", Path.of("target", "fixture-cache"));
        }
        return fixture;
    }

    /** A fresh reference target on the fixture (vector kernels, one thread). */
    public static ReferenceTarget reference() {
        return new ReferenceTarget(fixture().target(), new Kernels(KernelMode.VECTOR, 1));
    }
}
