package org.mtporacle.conformance.tck;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.lang.reflect.Method;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashSet;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/** Every §10.1 invariant has a check or an untested entry, and every cited section exists in the spec. */
class BackendRulesCoverageTest {
    private static final Pattern NAME = Pattern.compile("^(required|optional|stochastic|untested)_s(\\d+(?:_\\d+)*)_\\w+$");

    @Test
    void everyInvariantOfSection10_1IsCoveredOrMarkedUntested() throws IOException {
        String spec = Files.readString(Path.of("spec", "mtp-behavior.md"));
        int start = spec.indexOf("### 10.1");
        int end = spec.indexOf("### 10.2");
        Matcher items = Pattern.compile("(?m)^(\\d+)\\. \\*\\*").matcher(spec.substring(start, end));
        Set<String> invariants = new HashSet<>();
        while (items.find()) {
            invariants.add("10_1_" + items.group(1));
        }
        assertThat(invariants).hasSize(11);
        Set<String> covered = new HashSet<>();
        for (Method m : BackendRules.class.getDeclaredMethods()) {
            Matcher n = NAME.matcher(m.getName());
            assertThat(n.matches()).as("check name %s follows TYPE_sSECTION_description", m.getName()).isTrue();
            covered.add(n.group(2));
        }
        assertThat(covered).containsAll(invariants);
    }

    @Test
    void everyCitedSectionExistsInTheSpec() throws IOException {
        String spec = Files.readString(Path.of("spec", "mtp-behavior.md"));
        for (Method m : BackendRules.class.getDeclaredMethods()) {
            Matcher n = NAME.matcher(m.getName());
            assertThat(n.matches()).isTrue();
            String[] parts = n.group(2).split("_");
            assertThat(cited(spec, parts)).as("%s cites §%s, which the spec has", m.getName(),
                    String.join(".", parts)).isTrue();
        }
    }

    /** §a.b… exists as a heading, or as list item {@code last.} inside the heading of the section before it. */
    private static boolean cited(String spec, String[] parts) {
        String full = String.join(".", parts);
        if (Pattern.compile("(?m)^#+ " + Pattern.quote(full) + "[. ]").matcher(spec).find()) {
            return true;
        }
        if (parts.length < 2) {
            return false;
        }
        String parent = String.join(".", Arrays.copyOf(parts, parts.length - 1));
        Matcher h = Pattern.compile("(?m)^#+ " + Pattern.quote(parent) + "[. ]").matcher(spec);
        if (!h.find()) {
            return false;
        }
        Matcher next = Pattern.compile("(?m)^#+ ").matcher(spec);
        int end = next.find(h.end()) ? next.start() : spec.length();
        return Pattern.compile("(?m)^" + parts[parts.length - 1] + "\\. ").matcher(spec.substring(h.end(), end)).find();
    }
}
