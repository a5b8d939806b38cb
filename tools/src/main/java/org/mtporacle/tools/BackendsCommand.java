package org.mtporacle.tools;

import org.mtporacle.api.Availability;
import org.mtporacle.api.BackendProfile;
import org.mtporacle.api.MtpBackend;
import org.mtporacle.api.MtpBackends;
import org.mtporacle.api.UntrustedText;
import picocli.CommandLine.Command;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;

/** {@code mtp backends}: every backend on the class path with its availability, profiles and where it came from. */
@Command(name = "backends", mixinStandardHelpOptions = true,
        description = {"List the backends found, whether each can run here and why not, their profiles, and the jar "
                + "each came from.", "More backends come from plug-ins: --plugin JAR or " + Plugins.ENV + "."})
final class BackendsCommand implements Callable<Integer> {
    /** Reasons are wrapped to this width (an MLX reason runs to hundreds of characters). */
    static final int WIDTH = 100;

    @picocli.CommandLine.Mixin
    Mixins.Engine engine;

    @Override
    public Integer call() {
        boolean plugins = false;
        for (MtpBackend b : MtpBackends.all()) {
            Availability a = b.availability();
            String from = source(b.getClass());
            // a plug-in's classes come from the loader Plugins made for its jars, the tool's own from the tool's
            boolean builtIn = b.getClass().getClassLoader() == MtpCommand.class.getClassLoader();
            plugins |= !builtIn;
            System.out.printf("%-10s %s%n", UntrustedText.line(b.name()), a.available() ? "available"
                    : "unavailable");
            List<String> profiles = b.profiles().stream().map(BackendProfile::label).toList();
            System.out.print(wrap("profiles: " + String.join(", ", profiles), "           "));
            System.out.print(wrap("from: " + (builtIn ? "built in" : from), "           "));
            if (!a.reason().isEmpty()) {
                System.out.print(wrap((a.available() ? "" : "why: ") + a.reason(), "           "));
            }
        }
        if (!plugins) {
            System.out.println("\nno plug-ins loaded; add backends with --plugin JAR or " + Plugins.ENV
                    + " (docs/cli.md, \"Plug-in backends\")");
        }
        return MtpCommand.EXIT_OK;
    }

    /** The jar or class folder a class was loaded from, or "unknown". */
    static String source(Class<?> c) {
        try {
            var cs = c.getProtectionDomain().getCodeSource();
            return cs == null || cs.getLocation() == null ? "unknown"
                    : java.nio.file.Path.of(cs.getLocation().toURI()).toString();
        } catch (java.net.URISyntaxException | IllegalArgumentException | SecurityException e) {
            return "unknown";
        }
    }

    /** {@code text} on lines of at most {@link #WIDTH} columns, each after {@code indent}, breaking at spaces. */
    static String wrap(String text, String indent) {
        StringBuilder out = new StringBuilder();
        List<String> lines = new ArrayList<>();
        StringBuilder line = new StringBuilder();
        for (String w : UntrustedText.line(text).split(" ")) {
            if (!line.isEmpty() && indent.length() + (lines.isEmpty() ? 0 : 2) + line.length() + 1 + w.length() > WIDTH) {
                lines.add(line.toString());
                line.setLength(0);
            }
            line.append(line.isEmpty() ? "" : " ").append(w);
        }
        if (!line.isEmpty()) {
            lines.add(line.toString());
        }
        for (int i = 0; i < lines.size(); i++) {
            out.append(indent).append(i == 0 ? "" : "  ").append(lines.get(i)).append('\n');
        }
        return out.toString();
    }
}
