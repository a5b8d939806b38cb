package org.mtporacle.wire;

import org.mtporacle.api.MtpException;

import java.util.ArrayList;
import java.util.List;

/**
 * Splits the text after {@code exec:} into a program and its arguments (WIRE.md §1), without a shell: words are
 * separated by whitespace; single quotes group literally; double quotes group, with backslash escaping {@code "} and
 * {@code \}; outside quotes a backslash escapes the next character.
 */
final class CommandWords {
    private CommandWords() {
    }

    /** @throws MtpException INVALID_ARGUMENT for an empty command or an unclosed quote */
    static List<String> split(String text) {
        List<String> words = new ArrayList<>();
        StringBuilder w = new StringBuilder();
        boolean inWord = false;
        char quote = 0;
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (quote == '\'') {
                if (c == '\'') {
                    quote = 0;
                } else {
                    w.append(c);
                }
            } else if (quote == '"') {
                if (c == '"') {
                    quote = 0;
                } else if (c == '\\' && i + 1 < text.length() && (text.charAt(i + 1) == '"'
                        || text.charAt(i + 1) == '\\')) {
                    w.append(text.charAt(++i));
                } else {
                    w.append(c);
                }
            } else if (Character.isWhitespace(c)) {
                if (inWord) {
                    words.add(w.toString());
                    w.setLength(0);
                    inWord = false;
                }
            } else {
                inWord = true;
                if (c == '\'' || c == '"') {
                    quote = c;
                } else if (c == '\\' && i + 1 < text.length()) {
                    w.append(text.charAt(++i));
                } else {
                    w.append(c);
                }
            }
        }
        if (quote != 0) {
            throw MtpException.invalidArgument("exec: unclosed " + quote + " quote in '" + text + "'");
        }
        if (inWord) {
            words.add(w.toString());
        }
        if (words.isEmpty()) {
            throw MtpException.invalidArgument("exec: no command after 'exec:' (expected exec:'COMMAND ARGS', "
                    + "WIRE.md §1)");
        }
        return words;
    }
}
