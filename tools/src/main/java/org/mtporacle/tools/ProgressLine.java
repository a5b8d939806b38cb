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

    /** Ends the line so later output starts on a fresh one. */
    void finish() {
        if (enabled && lastLength > 0) {
            out.print("\r" + " ".repeat(lastLength) + "\r");
            out.flush();
            lastLength = 0;
        }
    }

    /** A note on standard error, always shown (not only on a terminal). */
    void note(String message) {
        finish();
        out.println(message);
    }
}
