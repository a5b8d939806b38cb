package org.mtporacle.conformance;

import org.mtporacle.api.Availability;
import org.mtporacle.api.BackendProfile;
import org.mtporacle.api.DraftModel;
import org.mtporacle.api.MtpBackend;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.Tolerance;
import org.mtporacle.conformance.chain.Action;
import org.mtporacle.conformance.chain.ChainGenerator;
import org.mtporacle.conformance.chain.ContextSource;
import org.mtporacle.conformance.lockstep.ChainOutcome;
import org.mtporacle.conformance.lockstep.TargetTaps;
import org.mtporacle.conformance.report.ConformReport;
import org.mtporacle.conformance.report.ReportFiles;
import org.mtporacle.reference.ReferenceBackend;
import org.mtporacle.reference.ReferenceDraftModel;
import org.mtporacle.reference.target.ReferenceTarget;

import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/**
 * {@code mtp conform} as a library call: every requested backend profile against the reference on every requested
 * fixture, one {@link Campaign} each, collected into a {@link ConformReport}. Unavailable backends become entries
 * with their reason; they fail the run ({@link ConformReport#verdict()}) only when asked for by name.
 */
public final class Conform {

    /**
     * The run's choices. {@code requested} are the backend names the user gave (empty: every backend found), the
     * profiles they select are {@code choices} ({@link BackendSelection#select}); the shard is index K−1 of N;
     * {@code contexts} is where every chain's prefill and commit hiddens come from (target contexts need every fixture
     * to have a target, {@link #checkContexts}).
     */
    public record Options(List<BackendSelection.Choice> choices, List<String> requested, List<FixtureRecipe> fixtures,
                          int chains, long seed, int shardIndex, int shardCount, Path reportDir, Path fixtureCache,
                          ChainGenerator.Limits limits, ContextSource contexts) {
        public Options {
            choices = List.copyOf(choices);
            requested = List.copyOf(requested);
            fixtures = List.copyOf(fixtures);
            contexts = contexts == null ? ContextSource.SYNTHETIC : contexts;
        }

        /** A run on synthetic contexts. */
        public Options(List<BackendSelection.Choice> choices, List<String> requested, List<FixtureRecipe> fixtures,
                       int chains, long seed, int shardIndex, int shardCount, Path reportDir, Path fixtureCache,
                       ChainGenerator.Limits limits) {
            this(choices, requested, fixtures, chains, seed, shardIndex, shardCount, reportDir, fixtureCache, limits,
                    ContextSource.SYNTHETIC);
        }
    }

    /** Progress of the whole run, for a progress bar. */
    public interface Listener {
        void entryStarted(String profile, String fixture);

        void chainDone(long done, long total, boolean passed);

        void entryDone(ConformReport.Entry entry);

        /**
         * True once the run should stop (a Ctrl-C): the running campaign ends after its current chain, its entry is
         * reported with the chains it ran, and the entries not started are listed as unfinished.
         */
        default boolean stopRequested() {
            return false;
        }
    }

    /** Where the hiddens fed to prefill and commit come from by default, as the report says it. */
    public static final String CONTEXTS = ContextSource.SYNTHETIC.describe();

    private Conform() {
    }

    /**
     * Checks that {@code contexts} can be had on every fixture: target contexts need a fixture with a target.
     *
     * @throws MtpException INVALID_ARGUMENT naming the first fixture without one and those that have one
     */
    public static void checkContexts(List<FixtureRecipe> fixtures, ContextSource contexts) {
        if (contexts instanceof ContextSource.Target) {
            for (FixtureRecipe fx : fixtures) {
                if (!fx.hasTarget()) {
                    throw MtpException.invalidArgument("--contexts target: fixture " + fx.name() + " has no target "
                            + "(fixtures with one: " + String.join(", ", FixtureRecipe.withTarget()) + ")");
                }
            }
        }
    }

    /**
     * Runs every choice on every fixture. The traces of an earlier run in {@code reportDir} are removed first, so the
     * folder only ever holds this run's. After every entry the report there is rewritten with what has finished and
     * what has not ({@link ConformReport#unfinished()}), so a run stopped early keeps its finished entries; the
     * caller writes the finished report at the end.
     */
    public static ConformReport run(Options o, Listener listener) {
        checkContexts(o.fixtures(), o.contexts());
        if (o.reportDir() != null) {
            ReportFiles.clearTraces(o.reportDir());
        }
        String shard = (o.shardIndex() + 1) + "/" + o.shardCount();
        List<String> unfinished = new ArrayList<>();
        for (FixtureRecipe fx : o.fixtures()) {
            for (BackendSelection.Choice c : o.choices()) {
                unfinished.add(shard + ": " + c.label() + " @ " + fx.name());
            }
        }
        List<ConformReport.Entry> entries = new ArrayList<>();
        for (FixtureRecipe fx : o.fixtures()) {
            if (listener.stopRequested()) {
                break;
            }
            MtpModel model = fx.load(o.fixtureCache());
            int threads = Runtime.getRuntime().availableProcessors();
            try (ReferenceDraftModel oracle = ReferenceBackend.load(model, ReferenceBackend.configuredMode(), threads);
                 ReferenceTarget target = o.contexts().tap() == null ? null
                         : TargetTaps.reference(fx.loadTarget(o.fixtureCache()), ReferenceBackend.configuredMode(),
                         threads)) {
                TargetTaps taps = target == null ? null : new TargetTaps(target, o.contexts().tap());
                for (BackendSelection.Choice c : o.choices()) {
                    if (listener.stopRequested()) {
                        break;
                    }
                    listener.entryStarted(c.label(), fx.name());
                    ConformReport.Entry e = entry(o, fx, model, oracle, taps, c.backend(), c.profile(), listener);
                    entries.add(e);
                    if (!listener.stopRequested() || e.chainsRun() == plannedChains(o)
                            || e.status() == ConformReport.Status.UNAVAILABLE) {
                        unfinished.remove(shard + ": " + c.label() + " @ " + fx.name());
                    } else {
                        String key = shard + ": " + c.label() + " @ " + fx.name();
                        unfinished.set(unfinished.indexOf(key), key + " (stopped after " + e.chainsRun() + " of "
                                + plannedChains(o) + " chains)");
                    }
                    if (o.reportDir() != null && !unfinished.isEmpty()) {
                        ReportFiles.write(report(o, shard, entries, unfinished), o.reportDir());
                    }
                    listener.entryDone(e);
                }
            }
        }
        return report(o, shard, entries, listener.stopRequested() ? unfinished : List.of());
    }

    /** The chains of this shard of one entry. */
    private static long plannedChains(Options o) {
        return (long) o.chains() * (o.shardIndex() + 1) / o.shardCount() - (long) o.chains() * o.shardIndex()
                / o.shardCount();
    }

    private static ConformReport report(Options o, String shard, List<ConformReport.Entry> entries,
                                        List<String> unfinished) {
        return new ConformReport("mtp-oracle " + version(), Instant.now().toString(), o.seed(), o.chains(),
                List.of(shard), o.contexts().describe(), entries,
                new ConformReport.Plan(o.shardCount(), o.limits().maxActions(), o.requested(),
                        o.fixtures().stream().map(FixtureRecipe::name).toList()), List.of(), unfinished);
    }

    private static ConformReport.Entry entry(Options o, FixtureRecipe fx, MtpModel model, ReferenceDraftModel oracle,
                                             TargetTaps taps, MtpBackend b, BackendProfile p, Listener listener) {
        Tolerance tol = p.tolerance();
        Availability a = b.availability();
        if (!a.available()) {
            return unavailable(fx, model, b, p, tol, a.reason());
        }
        DraftModel subject;
        try {
            subject = b.load(model, p.options());
        } catch (MtpException e) {
            if (e.kind() == MtpException.Kind.UNAVAILABLE || e.kind() == MtpException.Kind.INCOMPATIBLE_MODEL) {
                return unavailable(fx, model, b, p, tol, e.getMessage());
            }
            if (e.kind() == MtpException.Kind.BACKEND_FAILURE) { // e.g. an exec: engine that fails its handshake
                return new ConformReport.Entry(b.name(), p.label(), p.options(), fx.name(), fx.describe(),
                        model.identity(), tol, "", ConformReport.Status.FAILED, "load failed: " + e.getMessage(),
                        0, 0, 0, new ConformReport.Stats(0, 0, 0, 0, 0, 0, 0), List.of());
            }
            throw e;
        }
        try (subject) {
            Campaign.Settings s = new Campaign.Settings(fx.name(), b.name(), p.options(), tol, o.chains(), o.seed(),
                    o.shardIndex(), o.shardCount(), within(o.limits(), b.capabilities()), o.reportDir() == null ? null
                    : o.reportDir().resolve("traces"), 400);
            Campaign.Result r = Campaign.run(s, oracle, subject, taps, listener::chainDone,
                    () -> b.load(model, p.options()), listener::stopRequested);
            ChainOutcome.Stats st = r.stats();
            List<ConformReport.FailureRecord> failures = new ArrayList<>();
            for (Campaign.Failure f : r.failures()) {
                failures.add(new ConformReport.FailureRecord(f.chainSeed(), f.originalLength(),
                        f.shrunk().stream().map(Action::describe).toList(), f.divergence().actionIndex(),
                        f.divergence().category().name(), f.divergence().message(), f.divergence().details(),
                        f.trace() == null ? null : f.trace().toString()));
            }
            return new ConformReport.Entry(b.name(), p.label(), p.options(), fx.name(), fx.describe(),
                    model.identity(), tol, subject.numerics(), r.ok() ? ConformReport.Status.PASSED
                    : ConformReport.Status.FAILED, "", r.chainsRun(), r.passed(), r.seconds(),
                    new ConformReport.Stats(st.comparedTokens(), st.nearTies(), st.comparedCheckpoints(),
                            st.maxKvNmse(), st.maxHiddenNmse(), st.badCalls(), st.maxNearTieGap(),
                            java.util.Arrays.stream(st.nearTieBins()).boxed().toList(),
                            ConformReport.GapData.of(st.gaps()), st.router()), failures);
        }
    }

    private static ConformReport.Entry unavailable(FixtureRecipe fx, MtpModel model, MtpBackend b, BackendProfile p,
                                                   Tolerance tol, String reason) {
        return new ConformReport.Entry(b.name(), p.label(), p.options(), fx.name(), fx.describe(), model.identity(),
                tol, "", ConformReport.Status.UNAVAILABLE, reason, 0, 0, 0,
                ConformReport.Stats.none(), List.of());
    }

    static String version() {
        String v = Conform.class.getPackage().getImplementationVersion();
        return v == null ? "development build" : v;
    }

    /** {@code l} within what the backend says it can do: greedy drafts only without seeded sampling, fewer rows. */
    public static ChainGenerator.Limits within(ChainGenerator.Limits l, org.mtporacle.api.BackendCapabilities c) {
        return new ChainGenerator.Limits(l.maxActions(), Math.max(1, Math.min(l.maxRows(), c.maxRows())),
                Math.max(0, Math.min(l.maxDepth(), c.maxDepth())), l.maxPrefill(), l.badRate(),
                c.seededSampling() ? l.stochasticRate() : 0);
    }

    /**
     * What the backend's capabilities took out of a campaign of limits {@code l}, for the verdict; null when nothing.
     * A reduced campaign passes on less evidence, and its verdict says so.
     */
    public static String coverage(String backend, ChainGenerator.Limits l, org.mtporacle.api.BackendCapabilities c) {
        ChainGenerator.Limits w = within(l, c);
        List<String> cut = new java.util.ArrayList<>();
        if (w.maxDepth() < l.maxDepth()) {
            cut.add("draft depth ≤ " + w.maxDepth() + " of " + l.maxDepth());
        }
        if (w.maxRows() < l.maxRows()) {
            cut.add("rows ≤ " + w.maxRows() + " of " + l.maxRows());
        }
        if (w.stochasticRate() < l.stochasticRate()) {
            cut.add("greedy drafts only (no seeded sampling)");
        }
        return cut.isEmpty() ? null : "coverage: " + org.mtporacle.api.UntrustedText.clip(backend)
                + " was checked within its claimed capabilities: " + String.join(", ", cut);
    }
}
