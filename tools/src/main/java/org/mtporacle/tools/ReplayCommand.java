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
import org.mtporacle.conformance.loop.trace.LoopChainTrace;
import org.mtporacle.conformance.loop.trace.LoopTraceFiles;
import org.mtporacle.conformance.trace.ChainTrace;
import org.mtporacle.conformance.trace.TraceFiles;
import org.mtporacle.api.LoadedTarget;
import org.mtporacle.api.TargetModel;
import org.mtporacle.conformance.target.lockstep.TargetChainOutcome;
import org.mtporacle.conformance.target.lockstep.TargetDivergence;
import org.mtporacle.conformance.target.lockstep.TargetLockstep;
import org.mtporacle.conformance.target.lockstep.TargetTolerance;
import org.mtporacle.conformance.target.trace.TargetChainTrace;
import org.mtporacle.conformance.target.trace.TargetTraceFiles;
import org.mtporacle.reference.kernels.Kernels;
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

import org.mtporacle.wire.ExecBackend;

import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.Callable;

/**
 * {@code mtp replay TRACE}: re-runs a chain trace exactly, in lockstep with the reference: a drafter chain trace
 * against the backend's drafter, a target chain trace ({@code mtp-oracle-target-chain}) against its target, a loop
 * chain trace ({@code mtp-oracle-loop-chain}) against both.
 */
@Command(name = "replay", mixinStandardHelpOptions = true,
        description = {"Re-run a chain trace written by `mtp conform` exactly, without the generator: a drafter "
                + "chain against the backend's drafter, a target chain (format mtp-oracle-target-chain) against its "
                + "target, a loop chain (format mtp-oracle-loop-chain) against its target and drafter together.",
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

    /**
     * The trace's own {@code exec:} command started in the folder it was recorded in, so that its relative paths
     * resolve the same from any folder; any other backend as it is.
     */
    static MtpBackend inRecordedDirectory(MtpBackend b, ChainTrace t) {
        if (t.workingDirectory() == null || !b.name().equals(t.backend()) || !(b instanceof ExecBackend)) {
            return b;
        }
        System.out.println("replay: starting the engine in " + UntrustedText.quote(t.workingDirectory())
                + ", where the trace was recorded");
        return new ExecBackend(t.backend().substring("exec:".length()), ExecBackend.configuredTimeout(),
                Path.of(t.workingDirectory()));
    }

    @Override
    public Integer call() {
        if (!java.nio.file.Files.isRegularFile(trace)) {
            throw MtpException.invalidArgument("trace " + trace + ": no such file");
        }
        if (TargetTraceFiles.isTargetTrace(trace)) {
            return replayTarget(TargetTraceFiles.read(trace));
        }
        if (LoopTraceFiles.isLoopTrace(trace)) {
            LoopChainTrace t = LoopTraceFiles.read(trace);
            MtpBackend b = subjectBackend(t.backend());
            return LoopReplay.run(trace, t, b, options(b, t.backend(), t.backendOptions()));
        }
        ChainTrace t = TraceFiles.read(trace);
        MtpBackend b = inRecordedDirectory(subjectBackend(t.backend()), t);
        Map<String, String> options = options(b, t.backend(), t.backendOptions());
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
                UntrustedText.clip(b.name()), UntrustedText.clip(new java.util.TreeMap<>(options).toString()),
                UntrustedText.clip(t.fixture()),
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

    /**
     * The options to load {@code b} with: {@code --option}'s when given; else the trace's, which were its backend's,
     * only when {@code b} is that backend (another refuses them or reads them differently: a note says they were left).
     */
    private Map<String, String> options(MtpBackend b, String traceBackendName, Map<String, String> traceOptions) {
        if (!backend.options.isEmpty()) {
            return backend.options;
        }
        if (b.name().equals(traceBackendName) || traceOptions.isEmpty()) {
            return traceOptions;
        }
        System.out.println("replay: the trace's options " + UntrustedText.clip(new java.util.TreeMap<>(traceOptions)
                .toString()) + " were for backend " + UntrustedText.quote(traceBackendName) + ", not passed to "
                + UntrustedText.quote(b.name()) + " (--option sets its own)");
        return Map.of();
    }

    /** The backend to run: {@code --backend}, or the trace's with {@code --trace-backend}; else a usage error. */
    private MtpBackend subjectBackend(String traceBackendName) {
        if (backend.given()) {
            return backend.resolve(null);
        }
        if (traceBackend) {
            System.out.println("replay: running the trace's backend " + UntrustedText.quote(traceBackendName)
                    + " (--trace-backend)");
            System.out.flush();
            MtpBackend b = BackendSelection.byName(traceBackendName); // an unknown name is bad input (exit 3)
            BackendSelection.requireAvailable(b);
            return b;
        }
        // a trace is a file from anyone (a bug report's attachment): it never chooses what runs
        throw Mixins.Usage.error(spec, "replay: the trace names backend " + UntrustedText.quote(traceBackendName)
                + ", but a trace never chooses what runs — name it with --backend NAME, or pass --trace-backend "
                + "to run the trace's own (for a trace you trust)");
    }

    /**
     * A target chain trace ({@code mtp-oracle-target-chain}): the backend's target ({@link MtpBackend#loadTarget}) in
     * lockstep with the reference target on the trace's fixture, under the trace's profile read for the target,
     * loaded with the trace's backend options unless {@code --option} replaces them.
     */
    private int replayTarget(TargetChainTrace t) {
        MtpBackend b = subjectBackend(t.backend());
        if (!b.supportsTarget()) {
            throw new MtpException(MtpException.Kind.UNAVAILABLE, "replay: " + trace + " is a target trace, but "
                    + "backend " + UntrustedText.quote(b.name()) + " runs the drafter only (no hybrid target)");
        }
        Map<String, String> options = options(b, t.backend(), t.backendOptions());
        FixtureRecipe fx = FixtureRecipe.named(t.fixture());
        TargetModel model = fx.loadTarget(FixtureRecipe.defaultCache());
        if (!t.modelIdentity().isEmpty() && !t.modelIdentity().equals(model.identity())) {
            System.err.println("warning: fixture " + UntrustedText.clip(t.fixture()) + "'s target now has identity "
                    + model.identity() + ", the trace was recorded on "
                    + UntrustedText.digestPrefix(t.modelIdentity()));
        }
        TargetTolerance tol = TargetTolerance.named(t.tolerance());
        System.out.printf("replaying target trace %s: %d actions, backend %s %s, fixture %s, tolerance %s%n",
                UntrustedText.path(trace), t.actions().size(), UntrustedText.clip(b.name()),
                UntrustedText.clip(new java.util.TreeMap<>(options).toString()), UntrustedText.clip(t.fixture()),
                UntrustedText.clip(tol.describe()));
        try (ReferenceTarget oracle = new ReferenceTarget(model, new Kernels(ReferenceBackend.configuredMode(), 1));
             LoadedTarget subject = b.loadTarget(model, options)) {
            TargetChainOutcome out = new TargetLockstep(oracle, subject, tol).run(t.seed(), t.actions());
            for (int i = 0; i < t.actions().size(); i++) {
                String mark = i < out.executed() - (out.passed() ? 0 : 1) ? "ok  " : i == out.executed() - 1
                        && !out.passed() ? "FAIL" : "    ";
                System.out.printf("  %3d %s %s%n", i, mark, t.actions().get(i).describe());
            }
            if (out.passed()) {
                System.out.println("passed: the chain no longer diverges");
                return MtpCommand.EXIT_OK;
            }
            TargetDivergence d = out.divergence();
            System.out.println("diverged at action " + d.actionIndex() + " (" + d.kind() + (d.row() < 0 ? ""
                    : ", row " + d.row()) + (d.position() < 0 ? "" : ", position " + d.position()) + "): "
                    + UntrustedText.line(d.message()));
            return MtpCommand.EXIT_FAILED;
        }
    }
}
