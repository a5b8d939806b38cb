package org.mtporacle.wire;

import org.mtporacle.api.HostTensor;

import java.time.Duration;
import java.util.Arrays;
import java.util.List;

/**
 * The protocol micro-benchmark of {@code mtp bench --wire} (issue targets in parentheses): the round trip of an empty
 * call ({@code ping}, ≤ 100 µs median) and the transfer of a 2048 × 1024 F32 prefill context to the engine, as a
 * {@code ping} carrying it (≥ 1 GB/s). Both time the whole call as the runner sees it: encode, pipe, the engine's
 * decode and its reply.
 *
 * @param pingMedianMicros   median round trip of an empty call
 * @param pingP99Micros      99th percentile of the same
 * @param transferMedianMillis median time of one call carrying the context
 * @param transferBytes      the context's bytes
 */
public record WireBench(double pingMedianMicros, double pingP99Micros, double transferMedianMillis,
                        long transferBytes) {

    /** Bytes per second of the context transfer, in GB/s (10^9). */
    public double transferGigabytesPerSecond() {
        return transferBytes / (transferMedianMillis / 1e3) / 1e9;
    }

    /** Runs the micro-benchmark against the engine {@code commandLine} starts. */
    public static WireBench measure(String commandLine, int pings, int transfers) {
        ExecBackend b = new ExecBackend(commandLine, Duration.ofSeconds(120));
        try (EngineProcess e = b.start()) {
            for (int i = 0; i < Math.max(1000, pings / 2); i++) {
                e.call("ping", WireValues.NODES.objectNode(), List.of());
            }
            double[] t = new double[pings];
            for (int i = 0; i < pings; i++) {
                long s = System.nanoTime();
                e.call("ping", WireValues.NODES.objectNode(), List.of());
                t[i] = (System.nanoTime() - s) / 1e3;
            }
            Arrays.sort(t);
            float[] values = new float[2048 * 1024];
            for (int i = 0; i < values.length; i++) {
                values[i] = (i % 977) * 0.001f;
            }
            HostTensor context = HostTensor.ofFloats(values, 1, 2048, 1024);
            for (int i = 0; i < 5; i++) {
                e.call("ping", WireValues.NODES.objectNode(), List.of(context));
            }
            double[] x = new double[transfers];
            for (int i = 0; i < transfers; i++) {
                long s = System.nanoTime();
                e.call("ping", WireValues.NODES.objectNode(), List.of(context));
                x[i] = (System.nanoTime() - s) / 1e6;
            }
            Arrays.sort(x);
            return new WireBench(t[pings / 2], t[Math.min(pings - 1, (int) (pings * 0.99))], x[transfers / 2],
                    context.byteSize());
        }
    }
}
