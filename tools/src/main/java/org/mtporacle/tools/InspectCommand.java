package org.mtporacle.tools;

import org.mtporacle.api.MtpException;
import org.mtporacle.io.ModelInspector;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;

/** {@code mtp inspect PATH}: what a model directory or safetensors file holds. */
@Command(name = "inspect", mixinStandardHelpOptions = true,
        description = {"Show what a model directory or .safetensors file holds: layout, dtypes, shapes, parameter "
                + "counts, quantization, norm convention and warnings.",
                "A malformed file exits 3 with one line naming the file and what is wrong."})
final class InspectCommand implements Callable<Integer> {
    @Parameters(paramLabel = "PATH", description = "A model directory or a .safetensors file.")
    Path path;

    @Option(names = "--json", description = "Print JSON instead of text.")
    boolean json;

    @Override
    public Integer call() {
        if (!Files.exists(path)) {
            throw MtpException.invalidArgument(path + " does not exist");
        }
        ModelInspector.Report r = ModelInspector.inspect(path);
        System.out.print(json ? r.toJson() + "\n" : r.toText());
        return MtpCommand.EXIT_OK;
    }
}
