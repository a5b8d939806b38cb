package org.mtporacle.tools;

import java.io.PrintStream;
import java.util.Locale;

/**
 * A one-line progress bar on standard error, redrawn in place; silent when standard error is not a terminal (pipes,
 * CI logs) or when {@code --quiet} is given.
 */
final class ProgressLine {
    private final PrintStream out = System.err;
    private final boolean enabled;
    private long lastDraw;
    private int lastLength;

    ProgressLine(boolean quiet) {
        this.enabled = !quiet && System.console() != null && System.console().isTerminal();
    }

    /** Redraws at most ten times a second (and always at 100 %). */
    void update(String label, long done, long total, String extra) {
        if (!enabled) {
            return;
        }
        long now = System.nanoTime();
        if (done < total && now - lastDraw < 100_000_000L) {
            return;
        }
        lastDraw = now;
        int width = 30;
        int filled = total == 0 ? width : (int) (width * done / total);
        String line = String.format(Locale.ROOT, "\r%-28s [%s%s] %d/%d %s", label, "#".repeat(filled),
                ".".repeat(width - filled), done, total, extra);
        out.print(line + " ".repeat(Math.max(0, lastLength - line.length())));
        lastLength = line.length();
        out.flush();
    }

    /** Shows {@code message} in place of the previous status (terminal only). */
    void status(String message) {
        if (!enabled) {
            return;
        }
        String line = "\r" + message;
        out.print(line + " ".repeat(Math.max(0, lastLength - line.length())));
        lastLength = line.length();
        out.flush();
    }

    /** Ends the line so later output starts on a fresh one. */
    void finish() {
        if (enabled && lastLength > 0) {
            out.print("\r" + " ".repeat(lastLength) + "\r");
            out.flush();
            lastLength = 0;
        }
    }

    /**
     * Shows {@code label} with the elapsed seconds, redrawn by a daemon thread until the returned handle is closed
     * (for work that reports no progress of its own).
     */
    AutoCloseable ticker(String label) {
        if (!enabled) {
            return () -> { };
        }
        long start = System.nanoTime();
        Thread t = Thread.ofPlatform().daemon().start(() -> {
            while (!Thread.currentThread().isInterrupted()) {
                String line = String.format(Locale.ROOT, "\r%s ... %.1f s", label, (System.nanoTime() - start) / 1e9);
                synchronized (this) {
                    out.print(line);
                    lastLength = line.length();
                    out.flush();
                }
                try {
                    Thread.sleep(200);
                } catch (InterruptedException e) {
                    return;
                }
            }
        });
        return () -> {
            t.interrupt();
            t.join();
            finish();
        };
    }

    /** A note on standard error, always shown (not only on a terminal). */
    void note(String message) {
        finish();
        out.println(message);
    }
}
