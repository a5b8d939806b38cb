package org.mtporacle.tools;

import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** The command line that runs this very {@code mtp} in a new JVM, as an {@code exec:} argument (WIRE.md §1). */
final class SelfCommand {
    private SelfCommand() {
    }

    /** {@code 'java' … -jar mtp.jar ARGS} (or the class path when not run from the jar), each word quoted. */
    static String of(String... args) {
        List<String> w = new ArrayList<>();
        w.add(ProcessHandle.current().info().command().orElse(Path.of(System.getProperty("java.home"), "bin", "java")
                .toString()));
        w.addAll(List.of("--add-modules", "jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED",
                "-XX:+UseParallelGC", "-Xss4m"));
        Path where;
        try {
            where = Path.of(MtpCommand.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        } catch (URISyntaxException e) {
            throw new IllegalStateException(e);
        }
        if (Files.isRegularFile(where)) {
            w.add("-jar");
            w.add(where.toString());
        } else {
            w.add("-cp");
            w.add(System.getProperty("java.class.path"));
            w.add(MtpCommand.class.getName());
        }
        w.addAll(List.of(args));
        StringBuilder b = new StringBuilder();
        for (String s : w) {
            b.append(b.isEmpty() ? "" : " ").append('\'').append(s.replace("'", "'\"'\"'")).append('\'');
        }
        return b.toString();
    }
}
