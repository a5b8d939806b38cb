package org.mtporacle.conformance.tck;

import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.TestExecutionExceptionHandler;
import org.mtporacle.api.MtpException;
import org.opentest4j.TestAbortedException;

/**
 * Makes the first line of every rule's failure (the line {@code mtp tck} prints) say what the rule expected and what
 * happened instead: an error the engine raised on a call the rule needs is prefixed with the rule and its
 * expectation, instead of being the engine's own text alone; an assertion's message spread over lines (expected on
 * one, actual on the next) is joined into one line; a message that names no expectation is prefixed with the rule.
 * The original failure stays the cause, its full text after the first line. Skips pass through unchanged.
 */
public final class RuleFailureLine implements TestExecutionExceptionHandler {

    /** Longest first line kept; the rest of the text follows on later lines. */
    static final int MAX_FIRST_LINE = 600;

    @Override
    public void handleTestExecutionException(ExtensionContext context, Throwable thrown) throws Throwable {
        if (thrown instanceof TestAbortedException) {
            throw thrown;
        }
        throw rewrite(context.getDisplayName(), thrown);
    }

    /** The failure of the rule titled {@code rule} (its display name) as the TCK reports it. */
    static AssertionError rewrite(String rule, Throwable thrown) {
        String text = thrown.getMessage() == null ? "" : thrown.getMessage();
        if (!(thrown instanceof AssertionError)) {
            String what = thrown instanceof MtpException e ? e.kind() + ": " + oneLine(text)
                    : thrown.getClass().getSimpleName() + ": " + oneLine(text);
            return failure(rule + ": expected a call the rule relies on to succeed, the engine failed with " + what,
                    text, thrown);
        }
        String first = text.lines().findFirst().orElse("");
        if (first.toLowerCase(java.util.Locale.ROOT).contains("expected")) {
            return thrown instanceof AssertionError a ? a : failure(first, text, thrown);
        }
        String joined = oneLine(text);
        if (joined.toLowerCase(java.util.Locale.ROOT).contains("expected")) {
            return failure(joined, text, thrown);
        }
        return failure(rule + ": expected what the rule states; " + joined, text, thrown);
    }

    private static AssertionError failure(String firstLine, String text, Throwable cause) {
        String line = firstLine.length() <= MAX_FIRST_LINE ? firstLine : firstLine.substring(0, MAX_FIRST_LINE) + " …";
        AssertionError e = new AssertionError(text.isEmpty() || text.equals(firstLine) ? line : line + "\n" + text,
                cause);
        e.setStackTrace(cause.getStackTrace());
        return e;
    }

    /** {@code text}'s lines, trimmed and joined by single spaces. */
    static String oneLine(String text) {
        return String.join(" ", text.lines().map(String::strip).filter(s -> !s.isEmpty()).toList());
    }
}
