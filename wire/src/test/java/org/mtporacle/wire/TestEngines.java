package org.mtporacle.wire;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** Command lines that start a test engine: a main class of this test class path in a fresh JVM. */
final class TestEngines {
    private TestEngines() {
    }

    /** {@code 'java' '--add-modules' … '-cp' CLASSPATH 'MAIN' 'ARGS'…}, each word single-quoted (WIRE.md §1). */
    static String javaCommand(Class<?> main, String... args) {
        List<String> words = new ArrayList<>();
        words.add(ProcessHandle.current().info().command().orElse(Path.of(System.getProperty("java.home"), "bin",
                "java").toString()));
        words.add("--add-modules");
        words.add("jdk.incubator.vector");
        words.add("-XX:+UseSerialGC");
        words.add("-Xss4m");
        words.add("-cp");
        words.add(System.getProperty("java.class.path"));
        words.add(main.getName());
        words.addAll(List.of(args));
        StringBuilder b = new StringBuilder();
        for (String w : words) {
            b.append(b.isEmpty() ? "" : " ").append('\'').append(w.replace("'", "'\"'\"'")).append('\'');
        }
        return b.toString();
    }

    static Path fixtureCache() {
        return Path.of("target", "fixture-cache");
    }
}
