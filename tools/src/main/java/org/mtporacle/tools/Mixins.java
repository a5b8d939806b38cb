package org.mtporacle.tools;

import org.mtporacle.api.MtpBackend;
import org.mtporacle.api.MtpException;
import org.mtporacle.conformance.BackendSelection;
import org.mtporacle.conformance.chain.ContextSource;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

import java.util.LinkedHashMap;
import java.util.Map;

/** The options several commands share, declared once and mixed in with {@code @Mixin}. */
final class Mixins {
    private Mixins() {
    }

    /** {@code --quiet}: conform, fixture, convert, golden record, golden verify, bench. */
    static final class Quiet {
        @Option(names = "--quiet", description = "No progress bar (and no per-step listing).")
        boolean quiet;

        ProgressLine progress() {
            return new ProgressLine(quiet);
        }
    }

    /** {@code --json}: conform, conform merge, inspect, bench, checkpoint. */
    static final class Json {
        @Option(names = "--json", description = "Print JSON on standard output instead of text.")
        boolean json;
    }

    /**
     * {@code --backend NAME} and {@code --option KEY=VALUE}: golden verify, replay, bench, checkpoint. An unknown name
     * is a usage error (exit 2); a known but unavailable backend is bad input (exit 3).
     */
    static final class Backend {
        @Spec(Spec.Target.MIXEE)
        CommandSpec mixee;

        @Option(names = "--backend", paramLabel = "NAME", description = "Backend to run (see `mtp backends`).")
        String name;

        @Option(names = "--option", paramLabel = "KEY=VALUE", description = "Backend load option (repeatable), "
                + "e.g. precision=f32.")
        Map<String, String> options = new LinkedHashMap<>();

        boolean given() {
            return name != null;
        }

        /** The backend called {@link #name} (or {@code fallback} when none was given), checked to be available. */
        MtpBackend resolve(String fallback) {
            String n = name != null ? name : fallback;
            MtpBackend b = Usage.lookup(mixee, () -> BackendSelection.byName(n));
            BackendSelection.requireAvailable(b);
            return b;
        }
    }

    /**
     * {@code --plugin JAR} and {@code --timeout SECONDS}: the commands that start a backend (conform, tck, replay,
     * golden verify, bench, checkpoint, backends, serve-wire). The plug-ins are loaded by {@link MtpCommand} before
     * the command runs; the timeout applies to {@code exec:} engines.
     */
    static final class Engine {
        @Spec(Spec.Target.MIXEE)
        CommandSpec mixee;

        @Option(names = "--plugin", paramLabel = "JAR", description = "A jar or class folder with more backends, "
                + "listed in its META-INF/services (docs/cli.md); repeatable. " + Plugins.ENV + " adds more, "
                + "separated like a class path.")
        java.util.List<java.nio.file.Path> plugins = new java.util.ArrayList<>();

        @Option(names = "--timeout", paramLabel = "SECONDS",
                description = "Per-call timeout of exec: engines, in seconds (default: 60).")
        void timeout(double seconds) {
            MtpCommand.setTimeout(mixee.commandLine(), seconds);
        }
    }

    /**
     * {@code --contexts synthetic|target} and {@code --tap pre|post}: conform, tck, golden record. Where the hiddens fed
     * to prefill and commit come from (spec §13.4); an unknown value, or a tap with synthetic contexts, is exit 2.
     */
    static final class Contexts {
        @Spec(Spec.Target.MIXEE)
        CommandSpec mixee;

        @Option(names = "--contexts", paramLabel = "synthetic|target", defaultValue = "synthetic",
                description = "Where the hiddens fed to prefill and commit come from: seeded synthetic ones, or the "
                        + "taps of the fixture's reference target on the same tokens (a fixture with a target: "
                        + "tiny-target, small-target, tiny-moe-target and their -q4; spec §13.4) "
                        + "(default: ${DEFAULT-VALUE}).")
        String contexts;

        @Option(names = "--tap", paramLabel = "pre|post",
                description = "With --contexts target (or conform --loop): the target hidden that feeds the drafter, "
                        + "before or after the final norm (default: post).")
        String tap;

        ContextSource source() {
            return Usage.lookup(mixee, () -> ContextSource.of(contexts, tap));
        }
    }

    /** {@code --quantize BITS} and {@code --group-size G}: fixture, convert. Checked here, so a bad value is exit 2. */
    static final class Quantize {
        @Spec(Spec.Target.MIXEE)
        CommandSpec mixee;

        @Option(names = "--quantize", paramLabel = "BITS", defaultValue = "0",
                description = "MLX affine quantization bits: 2, 3, 4, 5, 6 or 8 (default: dense).")
        int bits;

        @Option(names = "--group-size", paramLabel = "G", defaultValue = "64",
                description = "Quantization group size: 32, 64 or 128 (default: ${DEFAULT-VALUE}).")
        int groupSize;

        /** The group size to pass on: 0 when dense. */
        int group() {
            Usage.require(mixee, java.util.Set.of(0, 2, 3, 4, 5, 6, 8).contains(bits), "--quantize " + bits
                    + ": expected 2, 3, 4, 5, 6 or 8");
            Usage.require(mixee, java.util.Set.of(32, 64, 128).contains(groupSize), "--group-size " + groupSize
                    + ": expected 32, 64 or 128");
            return bits == 0 ? 0 : groupSize;
        }
    }

    /** Turns library argument errors about option values into usage errors (exit 2). */
    static final class Usage {
        private Usage() {
        }

        static <T> T lookup(CommandSpec spec, java.util.function.Supplier<T> call) {
            try {
                return call.get();
            } catch (MtpException e) {
                if (e.kind() == MtpException.Kind.INVALID_ARGUMENT) {
                    throw new ParameterException(spec.commandLine(), e.getMessage());
                }
                throw e;
            } catch (IllegalArgumentException e) {
                throw new ParameterException(spec.commandLine(), e.getMessage());
            }
        }

        static ParameterException error(CommandSpec spec, String message) {
            return new ParameterException(spec.commandLine(), message);
        }

        static void require(CommandSpec spec, boolean ok, String message) {
            if (!ok) {
                throw error(spec, message);
            }
        }

        /** A command that only groups subcommands: called alone it is a usage error. */
        static int missingSubcommand(CommandSpec spec) {
            throw error(spec, "a subcommand is required: one of "
                    + String.join(", ", spec.subcommands().keySet().stream().filter(k -> !k.equals("help")).toList()));
        }
    }
}
