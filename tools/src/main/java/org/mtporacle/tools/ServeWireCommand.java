package org.mtporacle.tools;

import org.mtporacle.api.MtpBackend;
import org.mtporacle.api.MtpBackends;
import org.mtporacle.conformance.BackendSelection;
import org.mtporacle.io.ModelLoader;
import org.mtporacle.io.TargetLoader;
import org.mtporacle.wire.WireServer;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.PrintStream;
import java.util.concurrent.Callable;

/** {@code mtp serve-wire}: an in-process backend behind {@code mtp-oracle-wire/1} on stdin/stdout. */
@Command(name = "serve-wire", mixinStandardHelpOptions = true,
        description = {"Serve an in-process backend over the wire protocol (conformance/WIRE.md) on stdin/stdout.",
                "Run by a runner, not by hand: `mtp conform --backend exec:'./mtp serve-wire --backend reference'`. "
                        + "Standard output carries only frames; logs go to standard error."})
final class ServeWireCommand implements Callable<Integer> {
    @picocli.CommandLine.Mixin
    Mixins.Engine engine;

    @picocli.CommandLine.Spec
    picocli.CommandLine.Model.CommandSpec spec;

    @Option(names = "--backend", paramLabel = "NAME", defaultValue = "reference",
            description = "The backend to serve (default: ${DEFAULT-VALUE}).")
    String backend;

    @Override
    public Integer call() throws Exception {
        Mixins.Usage.require(spec, !MtpBackends.isFactoryName(backend), "--backend " + backend + ": an engine over "
                + "the wire already; serve an in-process backend (known: " + String.join(", ",
                MtpBackends.all().stream().map(MtpBackend::name).toList()) + ")");
        MtpBackend b = Mixins.Usage.lookup(spec, () -> BackendSelection.byName(backend));
        PrintStream frames = new PrintStream(new FileOutputStream(FileDescriptor.out), false);
        System.setOut(System.err); // anything else printed goes to the log, never between frames
        new WireServer(b, ModelLoader::load, TargetLoader::load, System.err).serve(System.in, frames);
        return MtpCommand.EXIT_OK;
    }
}
