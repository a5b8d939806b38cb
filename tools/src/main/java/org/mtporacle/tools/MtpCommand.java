package org.mtporacle.tools;

import org.mtporacle.api.MtpException;
import picocli.CommandLine;
import picocli.CommandLine.Command;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** The {@code mtp} command: a thin shell over the library; each subcommand parses, calls and prints. */
@Command(name = "mtp", mixinStandardHelpOptions = true, versionProvider = MtpCommand.Version.class,
        description = "MTP Oracle: reference interpreter and conformance kit for Qwen3.5 MTP drafting.",
        subcommands = {
                ConformCommand.class,
                ReplayCommand.class,
                FixtureCommand.class,
                InspectCommand.class,
                GoldenCommand.class,
                ConvertCommand.class,
                BenchCommand.class,
                BackendsCommand.class,
                CommandLine.HelpCommand.class
        })
public final class MtpCommand implements Runnable {

    /** Exit codes, documented in README.md. */
    public static final int EXIT_OK = 0;
    public static final int EXIT_FAILED = 1;
    public static final int EXIT_USAGE = 2;
    public static final int EXIT_ERROR = 3;
    public static final int EXIT_INTERNAL = 4;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @CommandLine.Option(names = "--plugin", paramLabel = "JAR", scope = CommandLine.ScopeType.INHERIT,
            description = "A jar or class folder with more backends (listed in " + Plugins.SERVICES
                    + "); repeatable. " + Plugins.ENV + " adds more, separated like a class path.")
    List<Path> plugins = new ArrayList<>();

    @Override
    public void run() {
        spec.commandLine().usage(System.out);
    }

    public static void main(String[] args) {
        System.exit(commandLine().execute(args));
    }

    /** The configured command line: usage errors exit 2, {@link MtpException}s print one line and exit 3. */
    public static CommandLine commandLine() {
        MtpCommand root = new MtpCommand();
        CommandLine cl = new CommandLine(root);
        cl.setExecutionStrategy(parseResult -> {
            try {
                return Plugins.run(Plugins.paths(root.plugins, System.getenv(Plugins.ENV)),
                        () -> new CommandLine.RunLast().execute(parseResult));
            } catch (MtpException e) {
                CommandLine sub = parseResult.asCommandLineList().getLast();
                sub.getErr().println("mtp " + sub.getCommandName() + ": " + e.getMessage());
                return EXIT_ERROR;
            }
        });
        cl.setExecutionExceptionHandler((ex, line, parseResult) -> {
            Throwable t = ex;
            while (t.getCause() != null && !(t instanceof MtpException)) {
                t = t.getCause();
            }
            if (t instanceof MtpException m) {
                line.getErr().println("mtp " + line.getCommandName() + ": " + m.getMessage());
                return EXIT_ERROR;
            }
            if (ex instanceof java.io.UncheckedIOException io) {
                line.getErr().println("mtp " + line.getCommandName() + ": " + io.getMessage() + " ("
                        + io.getCause().getMessage() + ")");
                return EXIT_ERROR;
            }
            line.getErr().println("mtp " + line.getCommandName() + ": internal error, please report it with the "
                    + "command line and this trace:");
            ex.printStackTrace(line.getErr());
            return EXIT_INTERNAL;
        });
        cl.setExitCodeExceptionMapper(ex -> EXIT_USAGE);
        return cl;
    }

    static final class Version implements CommandLine.IVersionProvider {
        @Override
        public String[] getVersion() {
            String v = MtpCommand.class.getPackage().getImplementationVersion();
            return new String[] {"mtp " + (v == null ? "development build" : v)};
        }
    }
}
