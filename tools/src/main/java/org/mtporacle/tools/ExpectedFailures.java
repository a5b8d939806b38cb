package org.mtporacle.tools;

import org.mtporacle.api.MtpException;
import org.mtporacle.api.UntrustedText;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * {@code --expected-failures FILE}: the known failures of a backend, one name a line ({@code #} starts a comment; a
 * TCK rule's name, or a conform entry's {@code PROFILE @ FIXTURE}). A listed failure is expected; a failure not
 * listed is new and a listed name that passed is an unexpected pass: either fails the run, so the list shrinks as
 * bugs are fixed (pytest's strict xfail, Protocol Buffers' conformance failure lists).
 */
final class ExpectedFailures {
    private final Path file;
    private final Map<String, Integer> names; // name → line number

    private ExpectedFailures(Path file, Map<String, Integer> names) {
        this.file = file;
        this.names = names;
    }

    /** The outcome of a run held against the list. */
    record Judgement(List<String> expected, List<String> newFailures, List<String> unexpectedPasses) {
        boolean ok() {
            return newFailures.isEmpty() && unexpectedPasses.isEmpty();
        }

        /** One line per finding, for the console. */
        List<String> lines(Path file) {
            List<String> out = new ArrayList<>();
            out.add("expected failures (" + file + "): " + expected.size() + " failed as listed, "
                    + newFailures.size() + " new, " + unexpectedPasses.size() + " unexpectedly passed");
            newFailures.forEach(n -> out.add("  new failure (not in the list): " + UntrustedText.clip(n)));
            unexpectedPasses.forEach(n -> out.add("  unexpected pass (fixed? remove it from the list): "
                    + UntrustedText.clip(n)));
            return out;
        }
    }

    /**
     * Reads {@code file}.
     *
     * @throws UncheckedIOException when it cannot be read (exit 3 naming it)
     */
    static ExpectedFailures read(Path file) {
        List<String> lines;
        try {
            lines = Files.readAllLines(file);
        } catch (IOException e) {
            throw new UncheckedIOException("--expected-failures " + file, e);
        }
        Map<String, Integer> names = new LinkedHashMap<>();
        for (int i = 0; i < lines.size(); i++) {
            String l = lines.get(i);
            int hash = l.indexOf('#');
            String name = (hash < 0 ? l : l.substring(0, hash)).strip();
            if (!name.isEmpty()) {
                names.putIfAbsent(name, i + 1);
            }
        }
        return new ExpectedFailures(file, names);
    }

    Path file() {
        return file;
    }

    /**
     * Checks that every listed name is one the run knows, so a stale or misspelt entry cannot hide a failure.
     *
     * @throws MtpException INVALID_ARGUMENT naming the file, line and name, with some known names
     */
    void requireKnown(Collection<String> known, String what) {
        for (Map.Entry<String, Integer> e : names.entrySet()) {
            if (!known.contains(e.getKey())) {
                throw MtpException.invalidArgument("--expected-failures " + file + ":" + e.getValue() + ": no "
                        + what + " named '" + UntrustedText.clip(e.getKey()) + "' in this run (known: "
                        + UntrustedText.clip(String.join(", ", known)) + ")");
            }
        }
    }

    /** Holds {@code failed} and {@code passed} (names) against the list; names neither (skipped) are not judged. */
    Judgement judge(Collection<String> failed, Collection<String> passed) {
        List<String> expected = new ArrayList<>();
        List<String> fresh = new ArrayList<>();
        for (String f : failed) {
            (names.containsKey(f) ? expected : fresh).add(f);
        }
        List<String> unexpected = passed.stream().filter(names::containsKey).toList();
        return new Judgement(expected, fresh, unexpected);
    }
}
