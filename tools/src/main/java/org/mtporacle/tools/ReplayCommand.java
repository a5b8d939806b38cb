package org.mtporacle.tools;

import org.mtporacle.api.DraftModel;
import org.mtporacle.api.MtpBackend;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.Tolerance;
import org.mtporacle.conformance.BackendSelection;
import org.mtporacle.conformance.FixtureRecipe;
import org.mtporacle.conformance.lockstep.ChainOutcome;
import org.mtporacle.conformance.lockstep.Lockstep;
import org.mtporacle.conformance.lockstep.TargetTaps;
import org.mtporacle.conformance.trace.ChainTrace;
import org.mtporacle.conformance.trace.TraceFiles;
import org.mtporacle.reference.ReferenceBackend;
import org.mtporacle.reference.ReferenceDraftModel;
import org.mtporacle.reference.target.ReferenceTarget;
import picocli.CommandLine.Command;
import org.mtporacle.api.UntrustedText;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Parameters;

import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.Callable;

/** {@code mtp replay TRACE}: re-runs a chain trace exactly, in lockstep with the reference. */
@Command(name = "replay", mixinStandardHelpOptions = true,
        description = {"Re-run a chain trace written by `mtp conform` exactly, without the generator.",
                "Exit 0 when the chain now passes, 1 when it still diverges. The backend comes from the command line "
                        + "(--backend NAME), never from the trace, unless --trace-backend says to run the trace's "
                        + "(printed first). --option replaces the trace's backend options."})
final class ReplayCommand implements Callable<Integer> {
    @picocli.CommandLine.Mixin
    Mixins.Engine engine;

    @Parameters(paramLabel = "TRACE", description = "A chain trace (JSON).")
    Path trace;

    @Mixin
    Mixins.Backend backend;

    @Option(names = "--trace-backend", description = "Run the backend the trace names (an exec: engine starts its "
            + "command); the name is printed before anything runs. Only for a trace you trust.")
    boolean traceBackend;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() {
        if (!java.nio.file.Files.isRegularFile(trace)) {
            throw MtpException.invalidArgument("trace " + trace + ": no such file");
        }
        ChainTrace t = TraceFiles.read(trace);
        MtpBackend b;
        if (backend.given()) {
            b = backend.resolve(null);
        } else if (traceBackend) {
            System.out.println("replay: running the trace's backend " + UntrustedText.quote(t.backend())
                    + " (--trace-backend)");
            System.out.flush();
            b = BackendSelection.byName(t.backend()); // an unknown name is bad input (exit 3)
            BackendSelection.requireAvailable(b);
        } else {
            // a trace is a file from anyone (a bug report's attachment): it never chooses what runs
            throw Mixins.Usage.error(spec, "replay: the trace names backend " + UntrustedText.quote(t.backend())
                    + ", but a trace never chooses what runs — name it with --backend NAME, or pass --trace-backend "
                    + "to run the trace's own (for a trace you trust)");
        }
        Map<String, String> options = backend.options.isEmpty() ? t.backendOptions() : backend.options;
        FixtureRecipe fx = FixtureRecipe.named(t.fixture());
        MtpModel model = fx.load(FixtureRecipe.defaultCache());
        if (!t.modelIdentity().isEmpty() && !t.modelIdentity().equals(model.identity())) {
            System.err.println("warning: fixture " + UntrustedText.clip(t.fixture()) + " now has identity "
                    + model.identity() + ", the trace was recorded on " + UntrustedText.digestPrefix(t.modelIdentity()));
        }
        if (t.contexts().tap() != null && !fx.hasTarget()) {
            throw MtpException.malformedFile("trace " + trace + ": contexts 'target', but fixture " + fx.name()
                    + " has no target");
        }
        Tolerance tol = t.tolerance();
        System.out.printf("replaying %s: %d actions (shrunk from %d), backend %s %s, fixture %s, tolerance %s%n"
                        + "contexts: %s%n", UntrustedText.path(trace), t.actions().size(), t.originalLength(),
                UntrustedText.clip(b.name()), UntrustedText.clip(options.toString()), UntrustedText.clip(t.fixture()),
                UntrustedText.clip(tol.describe()), UntrustedText.clip(t.contexts().describe()));
        try (ReferenceDraftModel oracle = ReferenceBackend.load(model, ReferenceBackend.configuredMode(), 1);
             ReferenceTarget target = t.contexts().tap() == null ? null
                     : TargetTaps.reference(fx.loadTarget(FixtureRecipe.defaultCache()),
                     ReferenceBackend.configuredMode(), 1);
             DraftModel subject = b.load(model, options)) {
            ChainOutcome out = new Lockstep(oracle, subject, tol, target == null ? null
                    : new TargetTaps(target, t.contexts().tap())).run(t.seed(), t.actions());
            for (int i = 0; i < t.actions().size(); i++) {
                String mark = i < out.executed() - (out.passed() ? 0 : 1) ? "ok  " : i == out.executed() - 1
                        && !out.passed() ? "FAIL" : "    ";
                System.out.printf("  %3d %s %s%n", i, mark, t.actions().get(i).describe());
            }
            if (out.passed()) {
                System.out.println("passed: the chain no longer diverges");
                return MtpCommand.EXIT_OK;
            }
            System.out.println("diverged at action " + out.divergence().actionIndex() + " ("
                    + out.divergence().kind() + "): " + UntrustedText.line(out.divergence().message()));
            out.divergence().details().forEach((k, v) -> System.out.println("    " + UntrustedText.line(k) + " = "
                    + UntrustedText.clip(String.valueOf(v))));
            return MtpCommand.EXIT_FAILED;
        }
    }
}
