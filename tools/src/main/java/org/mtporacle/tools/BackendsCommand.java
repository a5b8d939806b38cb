package org.mtporacle.tools;

import org.mtporacle.api.Availability;
import org.mtporacle.api.MtpBackend;
import org.mtporacle.api.MtpBackends;
import org.mtporacle.api.UntrustedText;
import picocli.CommandLine.Command;

import java.util.concurrent.Callable;

/** {@code mtp backends}: every backend on the class path with its availability. */
@Command(name = "backends", mixinStandardHelpOptions = true,
        description = "List the backends found, whether each can run here, and why not.")
final class BackendsCommand implements Callable<Integer> {
    @Override
    public Integer call() {
        for (MtpBackend b : MtpBackends.all()) {
            Availability a = b.availability();
            // a plug-in's text is checked for its name only; its reason is printed escaped, on its line
            System.out.printf("%-10s %-12s %s%n", UntrustedText.line(b.name()), a.available() ? "available"
                    : "unavailable", UntrustedText.line(a.reason()));
        }
        return MtpCommand.EXIT_OK;
    }
}
