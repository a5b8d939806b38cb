package org.mtporacle.api;

/**
 * A {@link DraftModel} that can measure its own device, so a benchmark can state a draft round as a multiple of what
 * the device needs for it, measured in the same run: the time its weight bytes take to stream, and the fixed cost of
 * the operations the round issues.
 */
public interface DeviceProbe {

    /**
     * Streams a device buffer of {@code bytes} through one elementwise copy {@code rounds} times and returns the
     * median rate in bytes per second, counting the bytes read and the bytes written (as copy bandwidth is quoted).
     *
     * @throws MtpException INVALID_ARGUMENT for {@code bytes} outside [1 MiB, 8 GiB] or {@code rounds < 1}
     */
    double copyBytesPerSecond(long bytes, int rounds);

    /**
     * The seconds one tiny operation costs inside a long chain of dependent ones (median of {@code rounds} chains):
     * the fixed cost each operation of a round pays however little data it touches (a kernel launch, graph work).
     */
    double operationSeconds(int rounds);

    /** Operations issued on this model's device since it was loaded (graph nodes, views included). */
    long operations();

    /**
     * Nanoseconds this model's device has spent evaluating since it was loaded (running graphs and waiting for
     * results), or −1 when it does not count them. The rest of a call's time is the host's: checks, graph building,
     * uploads, thread hand-offs.
     */
    default long evaluationNanos() {
        return -1;
    }

    /**
     * Nanoseconds this model's own worker thread (where it has one that runs every call) has spent running calls
     * since it was loaded, or −1 when it has none. A call's time beyond it is the hand-off to that thread and back.
     */
    default long workerNanos() {
        return -1;
    }

    /** The device the figures are for, in words ({@code "mlx gpu"}). */
    String device();
}
