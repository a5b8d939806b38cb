package org.mtporacle.mlx.handle;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

/**
 * With {@code MTP_MLX_TIMES=1}: how often each native call ran and how long it took, summed over the process and
 * printed to standard error at exit (most time first), to find where a backend's time goes. Off, it costs one
 * branch per call.
 */
final class NativeTimes {
    static final boolean ON = "1".equals(System.getenv("MTP_MLX_TIMES"));
    private static final Map<String, LongAdder[]> TIMES = new ConcurrentHashMap<>();

    static {
        if (ON) {
            Runtime.getRuntime().addShutdownHook(new Thread(() -> System.err.print(table()), "mlx-times"));
        }
    }

    private NativeTimes() {
    }

    /** A start time, or 0 when off. */
    static long start() {
        return ON ? System.nanoTime() : 0;
    }

    /** Adds the time since {@code start} to {@code name}. */
    static void end(String name, long start) {
        if (ON) {
            record(name, System.nanoTime() - start);
        }
    }

    /** Adds one call of {@code nanos} to {@code name}. */
    static void record(String name, long nanos) {
        LongAdder[] a = TIMES.computeIfAbsent(name, k -> new LongAdder[] {new LongAdder(), new LongAdder()});
        a[0].increment();
        a[1].add(nanos);
    }

    /** The table printed at exit: call, count, total ms, µs per call. */
    static String table() {
        List<Map.Entry<String, LongAdder[]>> rows = new ArrayList<>(TIMES.entrySet());
        rows.sort((x, y) -> Long.compare(y.getValue()[1].sum(), x.getValue()[1].sum()));
        StringBuilder sb = new StringBuilder("mlx native calls (MTP_MLX_TIMES=1), most time first:\n");
        sb.append(String.format(Locale.ROOT, "  %-40s %12s %12s %10s%n", "call", "count", "total ms", "us/call"));
        for (Map.Entry<String, LongAdder[]> e : rows) {
            long n = e.getValue()[0].sum();
            long ns = e.getValue()[1].sum();
            sb.append(String.format(Locale.ROOT, "  %-40s %12d %12.1f %10.2f%n", e.getKey(), n, ns / 1e6,
                    n == 0 ? 0 : ns / 1e3 / n));
        }
        return sb.toString();
    }
}
