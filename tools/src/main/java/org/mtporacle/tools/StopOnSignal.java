package org.mtporacle.tools;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Ctrl-C (SIGINT, or SIGTERM) during a long run: a shutdown hook asks the run to stop after its current chain and
 * holds the JVM until the run has written the report of what finished (at most {@code grace}), as a time-limited
 * shard does. The process then ends as a signal ends it (exit 130 for SIGINT).
 */
final class StopOnSignal implements AutoCloseable {
    private final AtomicBoolean stop = new AtomicBoolean();
    private final CountDownLatch reported = new CountDownLatch(1);
    private final Thread hook;

    StopOnSignal(String command, Duration grace) {
        hook = new Thread(() -> {
            stop.set(true);
            System.err.println(command + ": stopping after the current chain to write the report of what finished "
                    + "(at most " + grace.toSeconds() + " s)");
            try {
                reported.await(grace.toMillis(), TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, "mtp-stop-on-signal");
        Runtime.getRuntime().addShutdownHook(hook);
    }

    /** True once a signal asked the run to stop. */
    boolean requested() {
        return stop.get();
    }

    /** The report is written (or the run ended): a pending hook lets the JVM end, an unused one is removed. */
    @Override
    public void close() {
        reported.countDown();
        try {
            Runtime.getRuntime().removeShutdownHook(hook);
        } catch (IllegalStateException shuttingDown) {
            // the hook is running: it returns now that the report is written
        }
    }
}
