package org.mtporacle.tools;

import java.io.PrintStream;
import java.util.Locale;

/**
 * A one-line progress bar on standard error, redrawn in place to fit the terminal's width, with the rate and an ETA;
 * drawn only when standard error is a terminal (so {@code 2>log} and CI logs get no {@code \r} frames) and
 * {@code --quiet} is not given. Lines for standard output go through {@link #println} so they never mix with a frame.
 */
final class ProgressLine {
    private final PrintStream out = System.err;
    private final boolean enabled;
    private long lastDraw;
    private int lastLength;
    private String task = "";
    private long taskStart;

    ProgressLine(boolean quiet) {
        this.enabled = !quiet && Terminal.stderrIsTerminal();
    }

    /** Redraws at most ten times a second (and always at 100 %); the ETA counts from the label's first update. */
    synchronized void update(String label, long done, long total, String extra) {
        if (!enabled) {
            return;
        }
        long now = System.nanoTime();
        if (!label.equals(task) || done == 0) {
            task = label;
            taskStart = now;
        }
        if (done < total && now - lastDraw < 100_000_000L) {
            return;
        }
        lastDraw = now;
        draw(frame(label, done, total, now - taskStart, extra, Terminal.columns()));
    }

    /**
     * One frame, at most {@code columns − 1} characters: {@code label [####....] done/total rate ETA extra}. The bar
     * shrinks first (down to 10 cells); narrower, the extra, then the rate and ETA are dropped and the label cut.
     */
    static String frame(String label, long done, long total, long elapsedNanos, String extra, int columns) {
        int width = Math.max(1, columns - 1);
        double seconds = elapsedNanos / 1e9;
        String counts = done + "/" + total;
        String timing = "";
        if (done > 0 && seconds > 0) {
            double rate = done / seconds;
            timing = done >= total ? String.format(Locale.ROOT, " %s", clock(seconds))
                    : String.format(Locale.ROOT, " %.1f/s ETA %s", rate, clock((total - done) / rate));
        }
        String tail = " " + counts + timing + (extra.isEmpty() ? "" : " " + extra);
        int bar = Math.min(30, width - label.length() - tail.length() - 3);
        if (bar < 10) { // narrow: drop the extra, then the timing, then shorten the bar and the label
            tail = " " + counts + timing;
            if (width - tail.length() - 3 < 10 + 4) {
                tail = " " + counts;
            }
            int room = width - tail.length() - 3;
            bar = Math.max(0, Math.min(10, room));
            label = cut(label, Math.max(0, room - bar));
        }
        int filled = total <= 0 ? bar : (int) Math.min(bar, bar * done / total);
        String line = label + (bar > 0 ? " [" + "#".repeat(filled) + ".".repeat(bar - filled) + "]" : "") + tail;
        return line.length() > width ? line.substring(0, width) : line;
    }

    private static String cut(String s, int n) {
        return s.length() <= n ? s : n <= 1 ? s.substring(0, n) : s.substring(0, n - 1) + "…";
    }

    static String clock(double seconds) {
        long s = Math.round(seconds);
        return s >= 3600 ? String.format(Locale.ROOT, "%d:%02d:%02d", s / 3600, s / 60 % 60, s % 60)
                : String.format(Locale.ROOT, "%d:%02d", s / 60, s % 60);
    }

    /** Shows {@code message} in place of the previous status (terminal only), cut to the width. */
    synchronized void status(String message) {
        if (!enabled) {
            return;
        }
        int width = Math.max(1, Terminal.columns() - 1);
        draw(cut(message, width));
    }

    private void draw(String line) {
        out.print("\r" + line + " ".repeat(Math.max(0, lastLength - line.length())));
        lastLength = line.length();
        out.flush();
    }

    /** Ends the line so later output starts on a fresh one. */
    synchronized void finish() {
        if (enabled && lastLength > 0) {
            out.print("\r" + " ".repeat(lastLength) + "\r");
            out.flush();
            lastLength = 0;
        }
    }

    /** Prints a line on standard output as work finishes, clearing the bar first (it comes back on the next update). */
    synchronized void println(String line) {
        finish();
        System.out.print(line.endsWith("\n") ? line : line + "\n");
        System.out.flush();
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
                status(String.format(Locale.ROOT, "%s ... %s", label, clock((System.nanoTime() - start) / 1e9)));
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
    synchronized void note(String message) {
        finish();
        out.println(message);
    }
}
