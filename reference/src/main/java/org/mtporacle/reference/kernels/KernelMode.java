package org.mtporacle.reference.kernels;

/** Which implementation of every kernel a {@link Kernels} instance runs: the scalar definition or the Vector API. */
public enum KernelMode {
    /** Plain loops in the spec's order: the definition, used to cross-check the vector path. */
    SCALAR,
    /** {@code jdk.incubator.vector} kernels with a fixed lane layout and reduction order. */
    VECTOR
}
