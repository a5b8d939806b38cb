package org.mtporacle.conformance.target.lockstep;

import org.mtporacle.api.Availability;
import org.mtporacle.api.BackendProfile;
import org.mtporacle.api.LoadedTarget;
import org.mtporacle.api.MtpBackend;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.Tolerance;
import org.mtporacle.conformance.BackendSelection;
import org.mtporacle.conformance.Conform;
import org.mtporacle.conformance.report.ConformReport;
import org.mtporacle.conformance.report.ReportFiles;
import org.mtporacle.conformance.target.chain.TargetAction;
import org.mtporacle.conformance.target.chain.TargetChainGenerator;
import org.mtporacle.reference.ReferenceBackend;
import org.mtporacle.reference.kernels.Kernels;
import org.mtporacle.reference.target.ReferenceTarget;

import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Target conformance ({@code mtp conform --target}): every chosen backend profile whose backend runs the hybrid target
 * ({@link MtpBackend#supportsTarget()}), on every target fixture, in lockstep with the reference target (spec §13.3):
 * {@code chains} generated target chains each, seeded by the campaign seed, the fixture and the chain's index; the
 * first failure of an entry is shrunk and written as a replayable {@code mtp-oracle-target-chain} trace. The result
 * is an ordinary conformance report: in its entries the {@code comparedCheckpoints} are the row states compared after
 * every change, {@code maxKvNmse} the largest state NMSE and {@code maxHiddenNmse} the largest logits/taps NMSE; the
 * entry's tolerance is the target's reading of the profile ({@link TargetTolerance#asTolerance}), and its stats carry
 * the reference's logit gaps at every greedy position ({@code gaps}) and every compared NMSE by kind ({@code nmse}),
 * the data the bf16 bounds are derived from (conformance/SPEC.md "Deriving the target's bf16 bounds"). With
 * {@code calibrate} the numeric thresholds are off ({@link TargetTolerance#calibration}): every chain runs to its end
 * unless it fails otherwise, and only the distributions are wanted.
 */
public final class TargetConform {
    /** How the report's {@code contexts} field names a target run (and how its stats read). */
    public static final String CONTEXTS = "target rows (spec §13.3): checkpoints = row states compared, "
            + "kv NMSE = state NMSE, hidden NMSE = logits/taps NMSE";

    private TargetConform() {
    }

    /**
     * @param choices   backend profiles to run
     * @param requested the names asked for (empty: every backend found; then an entry that cannot run is listed, not
     *                  failed)
     * @param fixtures  target presets ({@code tiny-target}, {@code small-target}, {@code tiny-moe-target})
     * @param reportDir where traces go ({@code traces/}); earlier traces there are removed; null for none
     * @param shardIndex which of {@code shardCount} disjoint ranges of the chain indices runs (0-based), as
     *                   {@code mtp conform --shard}; {@code mtp conform merge} joins the shards' reports
     * @param calibrate  every numeric threshold off ({@link TargetTolerance#calibration}): chains run to their end and
     *                   only the recorded distributions are wanted
     */
    public record Options(List<BackendSelection.Choice> choices, List<String> requested, List<String> fixtures,
                          int chains, long seed, int maxActions, Path reportDir, Path fixtureCache, int shardIndex,
                          int shardCount, boolean calibrate) {
        public Options {
            if (shardCount < 1 || shardIndex < 0 || shardIndex >= shardCount) {
                throw new IllegalArgumentException("shard " + (shardIndex + 1) + "/" + shardCount + " is not valid");
            }
        }

        /** The whole campaign, one shard, the profiles' thresholds on. */
        public Options(List<BackendSelection.Choice> choices, List<String> requested, List<String> fixtures,
                       int chains, long seed, int maxActions, Path reportDir, Path fixtureCache) {
            this(choices, requested, fixtures, chains, seed, maxActions, reportDir, fixtureCache, 0, 1, false);
        }

        /** The first chain index of this shard. */
        int firstChain() {
            return (int) ((long) chains * shardIndex / shardCount);
        }

        /** One past the last chain index of this shard. */
        int endChain() {
            return (int) ((long) chains * (shardIndex + 1) / shardCount);
        }
    }

    /** Runs every choice on every fixture; {@code listener} hears of every entry and chain. */
    public static ConformReport run(Options o, Conform.Listener listener) {
        if (o.reportDir() != null) {
            ReportFiles.clearTraces(o.reportDir());
        }
        List<ConformReport.Entry> entries = new ArrayList<>();
        for (String name : o.fixtures()) {
            TargetFixture fx = TargetFixture.load(name, o.fixtureCache());
            try (ReferenceTarget oracle = new ReferenceTarget(fx.target(), new Kernels(ReferenceBackend.configuredMode(),
                    Runtime.getRuntime().availableProcessors()))) {
                for (BackendSelection.Choice c : o.choices()) {
                    listener.entryStarted(c.label(), name);
                    ConformReport.Entry e = entry(o, fx, oracle, c.backend(), c.profile(), listener);
                    entries.add(e);
                    listener.entryDone(e);
                }
            }
        }
        TargetChainGenerator.Limits d = TargetChainGenerator.Limits.defaults();
        return new ConformReport("mtp-oracle " + version(), Instant.now().toString(), o.seed(), o.chains(),
                List.of((o.shardIndex() + 1) + "/" + o.shardCount()), CONTEXTS, entries, new ConformReport.Plan(
                o.shardCount(), o.maxActions() > 0 ? o.maxActions()
                : d.maxActions(), o.requested(), o.fixtures()), List.of(), List.of());
    }

    private static ConformReport.Entry entry(Options o, TargetFixture fx, ReferenceTarget oracle, MtpBackend b,
                                             BackendProfile p, Conform.Listener listener) {
        TargetTolerance target = o.calibrate() ? TargetTolerance.calibration()
                : TargetTolerance.of(p.tolerance());
        Tolerance tol = target.asTolerance();
        String recipe = "target preset " + fx.name() + ", seed " + TargetFixture.SEED + ", bf16 (hybrid target)";
        Availability a = b.availability();
        if (!a.available()) {
            return unavailable(fx, recipe, b, p, a.reason());
        }
        if (!b.supportsTarget()) {
            return unavailable(fx, recipe, b, p, b.name() + " runs the drafter only (no hybrid target)");
        }
        LoadedTarget subject;
        try {
            subject = b.loadTarget(fx.target(), p.options());
        } catch (MtpException e) {
            if (e.kind() == MtpException.Kind.UNAVAILABLE || e.kind() == MtpException.Kind.INCOMPATIBLE_MODEL) {
                return unavailable(fx, recipe, b, p, e.getMessage());
            }
            return new ConformReport.Entry(b.name(), p.label(), p.options(), fx.name(), recipe,
                    fx.target().identity(), tol, "", ConformReport.Status.FAILED, "loadTarget failed: "
                    + e.getMessage(), 0, 0, 0, ConformReport.Stats.none(), List.of());
        }
        long t0 = System.nanoTime();
        try (subject) {
            TargetChainGenerator.Limits d = TargetChainGenerator.Limits.defaults();
            TargetChainGenerator.Limits limits = o.maxActions() > 0 ? new TargetChainGenerator.Limits(o.maxActions(),
                    d.maxRows(), d.maxDepth(), d.maxPrefill(), d.longPrefill(), d.badRate()) : d;
            TargetCampaign.Settings s = new TargetCampaign.Settings(fx.name(), b.name(), p.options(), o.chains(),
                    o.seed(), limits, o.reportDir() == null ? null : o.reportDir().resolve("traces"), 400);
            TargetLockstep lockstep = new TargetLockstep(oracle, subject, target);
            TargetChainGenerator gen = new TargetChainGenerator(limits);
            TargetJudge.Counts counts = new TargetJudge.Counts(0, 0, 0, 0, 0);
            org.mtporacle.conformance.compare.RouterTally router = org.mtporacle.conformance.compare.RouterTally.NONE;
            long bad = 0;
            int run = 0;
            TargetCampaign.Failure failure = null;
            int shardChains = o.endChain() - o.firstChain();
            for (int i = o.firstChain(); i < o.endChain() && failure == null; i++) {
                long seed = TargetCampaign.chainSeed(o.seed(), fx.name(), i);
                TargetChainOutcome out = lockstep.run(seed, gen.generate(seed));
                counts = counts.plus(out.counts());
                router = router.plus(out.router());
                bad += out.badCalls();
                run++;
                if (!out.passed()) {
                    failure = TargetCampaign.shrinkAndRecord(s, lockstep, out, i + 1);
                }
                listener.chainDone(run, shardChains, out.passed());
            }
            List<ConformReport.FailureRecord> failures = new ArrayList<>();
            if (failure != null) {
                failures.add(new ConformReport.FailureRecord(failure.seed(), failure.originalLength(),
                        failure.shrunk().stream().map(TargetAction::describe).toList(),
                        failure.divergence().actionIndex(), failure.divergence().category().name(),
                        failure.divergence().message(), Map.of("kind", failure.divergence().kind().name()),
                        failure.trace() == null ? null : failure.trace().toString()));
            }
            double seconds = (System.nanoTime() - t0) / 1e9;
            return new ConformReport.Entry(b.name(), p.label(), p.options(), fx.name(), recipe,
                    fx.target().identity(), tol, subject.numerics(), failure == null ? ConformReport.Status.PASSED
                    : ConformReport.Status.FAILED, "", run, failure == null ? run : run - 1, seconds,
                    new ConformReport.Stats(counts.comparedTokens(), counts.nearTies(), counts.comparedStates(),
                            counts.maxStateNmse(), counts.maxOutputNmse(), bad, 0, List.of(),
                            ConformReport.GapData.of(counts.gaps()), router, nmseData(counts)), failures);
        }
    }

    private static Map<String, ConformReport.NmseData> nmseData(TargetJudge.Counts c) {
        Map<String, ConformReport.NmseData> m = new java.util.LinkedHashMap<>();
        c.nmse().forEach((k, v) -> m.put(k, ConformReport.NmseData.of(v)));
        return m;
    }

    private static ConformReport.Entry unavailable(TargetFixture fx, String recipe, MtpBackend b, BackendProfile p,
                                                   String reason) {
        return new ConformReport.Entry(b.name(), p.label(), p.options(), fx.name(), recipe, fx.target().identity(),
                TargetTolerance.of(p.tolerance()).asTolerance(), "", ConformReport.Status.UNAVAILABLE, reason, 0, 0, 0,
                ConformReport.Stats.none(),
                List.of());
    }

    static String version() {
        String v = TargetConform.class.getPackage().getImplementationVersion();
        return v == null ? "development build" : v;
    }
}
