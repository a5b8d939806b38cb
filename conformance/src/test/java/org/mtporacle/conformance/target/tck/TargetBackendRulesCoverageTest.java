package org.mtporacle.conformance.target.tck;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.lang.reflect.Method;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Every subsection of spec §13 has a target TCK check, every check follows {@code TYPE_sSECTION_description}, every
 * cited section exists as a heading, and the verification class implements each rule as a test.
 */
class TargetBackendRulesCoverageTest {
    private static final Pattern NAME = Pattern.compile(
            "^(required|optional|stochastic|untested)_s(\\d+(?:_\\d+)*)_\\w+$");

    @Test
    void everySubsectionOf13HasACheckAndEveryCitedSectionExists() throws IOException {
        String spec = Files.readString(Path.of("spec", "mtp-behavior.md"));
        Matcher h = Pattern.compile("(?m)^### (13\\.\\d+) ").matcher(spec);
        Set<String> subsections = new HashSet<>();
        while (h.find()) {
            subsections.add(h.group(1).replace('.', '_'));
        }
        assertThat(subsections).contains("13_1", "13_2", "13_3", "13_4");
        Set<String> covered = new HashSet<>();
        for (Method m : TargetBackendRules.class.getDeclaredMethods()) {
            Matcher n = NAME.matcher(m.getName());
            assertThat(n.matches()).as("check name %s follows TYPE_sSECTION_description", m.getName()).isTrue();
            String section = n.group(2);
            covered.add(section);
            assertThat(Pattern.compile("(?m)^#+ " + Pattern.quote(section.replace('_', '.')) + "[. ]").matcher(spec)
                    .find()).as("%s cites §%s, which the spec has", m.getName(), section.replace('_', '.')).isTrue();
        }
        assertThat(covered).containsAll(subsections);
    }

    @Test
    void theVerificationClassRunsEveryRuleAsATest() throws NoSuchMethodException {
        for (Method m : TargetBackendRules.class.getDeclaredMethods()) {
            Method impl = TargetBackendVerification.class.getMethod(m.getName());
            assertThat(impl.isAnnotationPresent(Test.class)).as("%s is a @Test", m.getName()).isTrue();
            assertThat(impl.isAnnotationPresent(org.junit.jupiter.api.DisplayName.class)).as("%s has a display name",
                    m.getName()).isTrue();
        }
    }
}
