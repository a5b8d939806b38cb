package org.mtporacle.tools;

import org.mtporacle.api.MtpException;
import org.mtporacle.io.IoErrors;
import picocli.CommandLine;
import picocli.CommandLine.Command;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The {@code mtp} command: a thin shell over the library; each subcommand parses, calls and prints. The exit code
 * follows one rule for every command (docs/cli.md, "Exit codes"), applied here and nowhere else: a usage error
 * (picocli's, or a command's {@link CommandLine.ParameterException} for a bad option value) is 2, an
 * {@link MtpException} or file-system error is 3 with one line, anything else is 4 with the stack trace.
 */
@Command(name = "mtp", mixinStandardHelpOptions = true, versionProvider = MtpCommand.Version.class,
        description = "MTP Oracle: reference interpreter and conformance kit for Qwen3.5 MTP drafting.",
        subcommands = {
                ConformCommand.class,
                ReplayCommand.class,
                FixtureCommand.class,
                InspectCommand.class,
                GoldenCommand.class,
                ConvertCommand.class,
                CheckpointCommand.class,
                BenchCommand.class,
                BackendsCommand.class,
                ServeWireCommand.class,
                TckCommand.class,
                SpecCommand.class,
                CompletionCommand.class,
                CommandLine.HelpCommand.class
        })
public final class MtpCommand implements Runnable {

    /** Exit codes, documented in docs/cli.md. */
    public static final int EXIT_OK = 0;
    public static final int EXIT_FAILED = 1;
    public static final int EXIT_USAGE = 2;
    public static final int EXIT_ERROR = 3;
    public static final int EXIT_INTERNAL = 4;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    /**
     * {@code --timeout} and {@code --plugin} before the subcommand ({@code mtp --plugin x.jar conform}) still work,
     * but are not listed: the commands that start a backend list them ({@link Mixins.Engine}).
     */
    @CommandLine.Option(names = "--timeout", paramLabel = "SECONDS", hidden = true)
    void timeout(double seconds) {
        setTimeout(spec.commandLine(), seconds);
    }

    @CommandLine.Option(names = "--plugin", paramLabel = "JAR", hidden = true)
    List<Path> plugins = new ArrayList<>();

    /** Sets the per-call timeout of exec: engines, or fails as a usage error naming the option. */
    static void setTimeout(CommandLine line, double seconds) {
        if (!(seconds > 0) || seconds > 86_400) {
            throw new CommandLine.ParameterException(line, "--timeout " + seconds
                    + ": expected seconds in (0, 86400]");
        }
        System.setProperty(org.mtporacle.wire.ExecBackend.TIMEOUT_PROPERTY, Double.toString(seconds));
    }

    /** Every {@code --plugin} given, before the subcommand or after it, in order. */
    static List<Path> plugins(CommandLine.ParseResult parseResult) {
        List<Path> all = new ArrayList<>();
        for (CommandLine c : parseResult.asCommandLineList()) {
            CommandLine.Model.OptionSpec o = c.getParseResult().matchedOption("--plugin");
            if (o != null) {
                all.addAll(o.<List<Path>>getValue());
            }
        }
        return all;
    }

    @Override
    public void run() {
        Mixins.Usage.missingSubcommand(spec);
    }

    public static void main(String[] args) {
        Terminal.restoreStderr(System.getenv("MTP_STDERR_FD"));
        System.exit(commandLine().execute(args));
    }

    /** The configured command line: the one place exceptions become exit codes and messages. */
    public static CommandLine commandLine() {
        MtpCommand root = new MtpCommand();
        CommandLine cl = new CommandLine(root);
        cl.getSubcommands().get("fixture").getCommandSpec().usageMessage().footer(FixtureCommand.footer());
        cl.setParameterExceptionHandler(MtpCommand::usageError);
        cl.setExecutionStrategy(parseResult -> {
            try {
                return Plugins.run(Plugins.paths(plugins(parseResult), System.getenv(Plugins.ENV)),
                        () -> new CommandLine.RunLast().execute(parseResult));
            } catch (MtpException e) {
                CommandLine sub = parseResult.asCommandLineList().getLast();
                sub.getErr().println(sub.getCommandSpec().qualifiedName() + ": " + withoutStutter(
                        sub.getCommandName(), e.getMessage()));
                return EXIT_ERROR;
            }
        });
        cl.setExecutionExceptionHandler((ex, line, parseResult) -> {
            String who = line.getCommandSpec().qualifiedName();
            String message = message(ex);
            if (message == null) {
                line.getErr().println(who + ": internal error, please report it with the command line and this "
                        + "trace:");
                ex.printStackTrace(line.getErr());
                return EXIT_INTERNAL;
            }
            line.getErr().println(who + ": " + withoutStutter(line.getCommandName(), message));
            return EXIT_ERROR;
        });
        return cl;
    }

    /** Picocli's rule: a usage error is exit 2. One line naming what was wrong, a suggestion, where help is. */
    private static int usageError(CommandLine.ParameterException ex, String[] args) {
        CommandLine line = ex.getCommandLine();
        PrintWriter err = line.getErr();
        String who = line.getCommandSpec().qualifiedName();
        err.println(who + ": " + withoutStutter(line.getCommandName(), ex.getMessage()));
        CommandLine.UnmatchedArgumentException.printSuggestions(ex, err);
        err.println("see '" + who + " --help' for the usage");
        err.flush();
        return EXIT_USAGE;
    }

    /**
     * The one-line message for bad input (exit 3), or null for a bug: an {@link MtpException} as it is; a file-system
     * error as "PATH: what" (never a raw exception name).
     */
    static String message(Throwable ex) {
        for (Throwable t = ex; t != null; t = t.getCause()) {
            if (t instanceof MtpException m) {
                return m.getMessage();
            }
        }
        for (Throwable t = ex; t != null; t = t.getCause()) {
            if (t instanceof IOException io) {
                String context = ex instanceof UncheckedIOException u && u.getMessage() != null
                        && !u.getMessage().equals(io.toString()) ? u.getMessage() + ": " : "";
                return context + IoErrors.describe(io);
            }
        }
        return null;
    }

    /** "convert: convert: x" → "x" after the prefix "mtp convert: ". */
    static String withoutStutter(String command, String message) {
        String m = message == null ? "" : message;
        String p = command + ": ";
        return m.startsWith(p) ? m.substring(p.length()) : m;
    }

    /** {@code mtp --version}: the version and commit the build baked into {@code version.properties}. */
    static final class Version implements CommandLine.IVersionProvider {
        @Override
        public String[] getVersion() {
            java.util.Properties p = new java.util.Properties();
            try (var in = MtpCommand.class.getResourceAsStream("version.properties")) {
                if (in != null) {
                    p.load(in);
                }
            } catch (IOException e) {
                // reported as unknown below
            }
            return new String[] {"mtp " + p.getProperty("version", "development build") + " (commit "
                    + p.getProperty("commit", "unknown") + ", Java " + Runtime.version() + ")"};
        }
    }
}
