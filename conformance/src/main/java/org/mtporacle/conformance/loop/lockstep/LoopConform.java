package org.mtporacle.conformance.loop.lockstep;

import org.mtporacle.api.Availability;
import org.mtporacle.api.BackendProfile;
import org.mtporacle.api.DraftModel;
import org.mtporacle.api.HiddenTap;
import org.mtporacle.api.LoadedTarget;
import org.mtporacle.api.MtpBackend;
import org.mtporacle.api.MtpException;
import org.mtporacle.conformance.BackendSelection;
import org.mtporacle.conformance.Conform;
import org.mtporacle.conformance.loop.chain.LoopAction;
import org.mtporacle.conformance.loop.chain.LoopChainGenerator;
import org.mtporacle.conformance.report.ConformReport;
import org.mtporacle.conformance.report.ReportFiles;
import org.mtporacle.conformance.target.lockstep.TargetFixture;
import org.mtporacle.reference.ReferenceBackend;
import org.mtporacle.reference.ReferenceDraftModel;
import org.mtporacle.reference.kernels.Kernels;
import org.mtporacle.reference.target.ReferenceTarget;
import org.mtporacle.reference.target.SpeculativeDecoding.KvPolicy;

import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Loop conformance ({@code mtp conform --loop}): every chosen backend profile whose backend runs the hybrid target,
 * its target and its drafter together, on every target fixture, in lockstep with the reference's (spec §13.5):
 * {@code chains} loop chains each, seeded as target chains are; the first failure of an entry is shrunk and written as
 * a replayable {@code mtp-oracle-loop-chain} trace. Every drafter is fed the declared tap and commits by the declared
 * drafter KV policy. The result is an ordinary conformance report: tokens compared are
 * the target's greedy tokens and the drafter's, checkpoints the target states and drafter checkpoints compared.
 */
public final class LoopConform {
    private LoopConform() {
    }

    /** How the report's {@code contexts} field names a loop run under {@code keep} (and how its stats read). */
    public static String contexts(HiddenTap tap) {
        return contexts(tap, KvPolicy.KEEP);
    }

    /** How the report's {@code contexts} field names a loop run (and how its stats read). */
    public static String contexts(HiddenTap tap, KvPolicy policy) {
        return "loop chains (spec §13.5): target and drafter rows as an engine runs them, each drafter fed its own "
                + "target's " + tap.label() + "-norm tap" + (policy == KvPolicy.KEEP ? "" : ", drafter KV "
                + policy.label()) + "; checkpoints = target states + drafter checkpoints, "
                + "kv NMSE = worst state NMSE, hidden NMSE = worst logits/taps/hidden NMSE";
    }

    /**
     * @param choices   backend profiles to run
     * @param requested the names asked for (empty: every backend found)
     * @param fixtures  target presets
     * @param tap       the hidden tap every drafter is fed (spec §13.4)
     * @param policy    the drafter KV policy declared for every backend (spec §13.4)
     * @param reportDir where traces go ({@code traces/}); earlier traces there are removed; null for none
     */
    public record Options(List<BackendSelection.Choice> choices, List<String> requested, List<String> fixtures,
                          int chains, long seed, int maxActions, HiddenTap tap, KvPolicy policy, Path reportDir,
                          Path fixtureCache) {
    }

    /** Runs every choice on every fixture; {@code listener} hears of every entry and chain. */
    public static ConformReport run(Options o, Conform.Listener listener) {
        if (o.reportDir() != null) {
            ReportFiles.clearTraces(o.reportDir());
        }
        List<ConformReport.Entry> entries = new ArrayList<>();
        for (String name : o.fixtures()) {
            TargetFixture fx = TargetFixture.load(name, o.fixtureCache());
            Kernels kernels = new Kernels(ReferenceBackend.configuredMode(), Runtime.getRuntime().availableProcessors());
            try (ReferenceTarget target = new ReferenceTarget(fx.target(), kernels);
                 ReferenceDraftModel drafter = new ReferenceDraftModel(fx.drafter(), kernels)) {
                for (BackendSelection.Choice c : o.choices()) {
                    listener.entryStarted(c.label(), name);
                    ConformReport.Entry e = entry(o, fx, target, drafter, c.backend(), c.profile(), listener);
                    entries.add(e);
                    listener.entryDone(e);
                }
            }
        }
        return new ConformReport("mtp-oracle " + version(), Instant.now().toString(), o.seed(), o.chains(),
                List.of("1/1"), contexts(o.tap(), o.policy()), entries, new ConformReport.Plan(1, limits(o).maxActions(),
                o.requested(), o.fixtures()), List.of(), List.of());
    }

    private static LoopChainGenerator.Limits limits(Options o) {
        LoopChainGenerator.Limits d = LoopChainGenerator.Limits.defaults();
        return o.maxActions() > 0 ? new LoopChainGenerator.Limits(o.maxActions(), d.maxRows(), d.maxDepth(),
                d.maxPrefill(), d.badRate()) : d;
    }

    private static ConformReport.Entry entry(Options o, TargetFixture fx, ReferenceTarget oracleTarget,
                                             ReferenceDraftModel oracleDrafter, MtpBackend b, BackendProfile p,
                                             Conform.Listener listener) {
        String recipe = "target preset " + fx.name() + ", seed " + TargetFixture.SEED + ", bf16 (hybrid target), "
                + "tap " + o.tap().label() + ", drafter KV " + o.policy().label();
        Availability a = b.availability();
        if (!a.available()) {
            return unavailable(fx, recipe, b, p, a.reason());
        }
        if (!b.supportsTarget()) {
            return unavailable(fx, recipe, b, p, b.name() + " runs the drafter only (no hybrid target)");
        }
        LoadedTarget target = null;
        DraftModel drafter;
        try {
            target = b.loadTarget(fx.target(), p.options());
            drafter = b.load(fx.drafter(), p.options());
        } catch (MtpException e) {
            if (target != null) {
                target.close();
            }
            if (e.kind() == MtpException.Kind.UNAVAILABLE || e.kind() == MtpException.Kind.INCOMPATIBLE_MODEL) {
                return unavailable(fx, recipe, b, p, e.getMessage());
            }
            return new ConformReport.Entry(b.name(), p.label(), p.options(), fx.name(), recipe,
                    fx.target().identity(), p.tolerance(), "", ConformReport.Status.FAILED, "loading the target or "
                    + "the drafter failed: " + e.getMessage(), 0, 0, 0, ConformReport.Stats.none(), List.of());
        }
        long t0 = System.nanoTime();
        try (LoadedTarget t = target; DraftModel d = drafter) {
            LoopLockstep lockstep = new LoopLockstep(oracleTarget, oracleDrafter, t, d, p.tolerance(), o.tap(),
                    o.policy());
            LoopCampaign.Settings s = new LoopCampaign.Settings(fx.name(), b.name(), p.options(), o.chains(),
                    o.seed(), limits(o), o.reportDir() == null ? null : o.reportDir().resolve("traces"), 400);
            LoopCampaign.Result r = LoopCampaign.run(s, lockstep, (passed, done) -> listener.chainDone(done,
                    o.chains(), passed));
            LoopCampaign.Failure f = r.failure();
            List<ConformReport.FailureRecord> failures = new ArrayList<>();
            if (f != null) {
                failures.add(new ConformReport.FailureRecord(f.seed(), f.originalLength(),
                        f.shrunk().stream().map(LoopAction::describe).toList(), f.divergence().actionIndex(),
                        f.divergence().category(), f.divergence().message(), Map.of("group", f.divergence().group(),
                        "kind", f.divergence().kind()), f.trace() == null ? null : f.trace().toString()));
            }
            double seconds = (System.nanoTime() - t0) / 1e9;
            LoopChainOutcome.Stats st = r.stats();
            return new ConformReport.Entry(b.name(), p.label(), p.options(), fx.name(), recipe,
                    fx.target().identity(), p.tolerance(), t.numerics(), f == null ? ConformReport.Status.PASSED
                    : ConformReport.Status.FAILED, "", r.chainsRun(), f == null ? r.chainsRun() : r.chainsRun() - 1,
                    seconds, new ConformReport.Stats(st.comparedTokens(), st.nearTies(), st.comparedStates(),
                    st.maxStateNmse(), st.maxOutputNmse(), st.badCalls(), 0), failures);
        }
    }

    private static ConformReport.Entry unavailable(TargetFixture fx, String recipe, MtpBackend b, BackendProfile p,
                                                   String reason) {
        return new ConformReport.Entry(b.name(), p.label(), p.options(), fx.name(), recipe, fx.target().identity(),
                p.tolerance(), "", ConformReport.Status.UNAVAILABLE, reason, 0, 0, 0, ConformReport.Stats.none(),
                List.of());
    }

    private static String version() {
        String v = LoopConform.class.getPackage().getImplementationVersion();
        return v == null ? "development build" : v;
    }
}
