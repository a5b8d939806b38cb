package org.mtporacle.api;

/**
 * A {@link DraftModel} that can measure its own device's memory bandwidth, so a benchmark can state a draft round as a
 * multiple of the time its weight bytes take to stream on that device, measured in the same run.
 */
public interface DeviceBandwidth {

    /**
     * Streams a device buffer of {@code bytes} through one elementwise copy {@code rounds} times and returns the
     * median rate in bytes per second, counting the bytes read and the bytes written (as copy bandwidth is quoted).
     *
     * @throws MtpException INVALID_ARGUMENT for {@code bytes < 1 MiB} or {@code rounds < 1}
     */
    double copyBytesPerSecond(long bytes, int rounds);

    /** The device the figure is for, in words ({@code "mlx gpu"}). */
    String device();
}
