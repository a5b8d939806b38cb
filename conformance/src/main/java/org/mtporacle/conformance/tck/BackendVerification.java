package org.mtporacle.conformance.tck;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.ExtendWith;
import org.mtporacle.api.Availability;
import org.mtporacle.api.BackendProfile;
import org.mtporacle.api.DraftModel;
import org.mtporacle.api.DraftRows;
import org.mtporacle.api.DraftSampling;
import org.mtporacle.api.HiddenTap;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.LoadedTarget;
import org.mtporacle.api.MtpBackend;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.RowCheckpoint;
import org.mtporacle.api.Tolerance;
import org.mtporacle.api.UntrustedText;
import org.mtporacle.conformance.Campaign;
import org.mtporacle.conformance.FixtureRecipe;
import org.mtporacle.conformance.chain.Action;
import org.mtporacle.conformance.chain.BadCall;
import org.mtporacle.conformance.chain.ChainData;
import org.mtporacle.conformance.chain.ChainGenerator;
import org.mtporacle.conformance.chain.ContextSource;
import org.mtporacle.conformance.chain.GroupShape;
import org.mtporacle.conformance.compare.Divergence;
import org.mtporacle.conformance.compare.Judge;
import org.mtporacle.conformance.lockstep.ChainOutcome;
import org.mtporacle.conformance.lockstep.Lockstep;
import org.mtporacle.conformance.lockstep.TargetTaps;
import org.mtporacle.reference.ReferenceBackend;
import org.mtporacle.reference.ReferenceDraftModel;
import org.mtporacle.reference.target.SpeculativeDecoding;
import org.mtporacle.reference.targetmodel.ReferenceTarget;
import org.mtporacle.reference.targetmodel.SpeculativeLoop;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

/**
 * The TCK for backend authors: extend this class, implement {@link #createBackend()}, and every check of the row
 * contract runs against your backend, each named after the spec rule it enforces ({@code TYPE_sSECTION_description};
 * see {@link BackendRules} for what each verifies and what to inspect when it fails).
 *
 * <p>Two kinds of evidence: <b>lockstep</b> checks drive a scenario on your backend and on the reference together and
 * demand the same drafts (tie-aware), checkpoints (within {@link #tolerance()}) and errors; the reference satisfies
 * every invariant exactly (its own tests prove it), so passing transfers the invariant. <b>Self</b> checks compare
 * your backend with itself (byte-identical round trips, NMSE-close equivalences). A skip names the hook to override.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@ExtendWith(RuleFailureLine.class) // every failure's first line says what the rule expected
public abstract class BackendVerification implements BackendRules {

    /** The backend under test (a new instance; the TCK loads models into it). */
    protected abstract MtpBackend createBackend();

    /** Options passed to {@link MtpBackend#load}. */
    protected Map<String, String> backendOptions() {
        return Map.of();
    }

    /**
     * How closely the backend must follow the reference: the tolerance of the profile the backend declares for
     * {@link #backendOptions()} ({@link BackendProfile#matching}). Override only to tighten it; a looser profile
     * fails every check.
     */
    protected Tolerance tolerance() {
        return declared();
    }

    /** The tolerance the backend declares for {@link #backendOptions()}. */
    protected final Tolerance declared() {
        return BackendProfile.matching(backend.profiles(), backendOptions()).tolerance();
    }

    /** The dense fixture the checks run on. */
    protected String denseFixture() {
        return "tiny";
    }

    /** The quantized fixture, used when {@link #supportsQuantizedWeights()}. */
    protected String quantizedFixture() {
        return "tiny-q4";
    }

    /**
     * The MoE fixtures the §12 rule runs whenever the backend loads MoE models (a backend refusing them skips the
     * rule): {@code tiny-moe}, and {@code tiny-moe-ties} ({@code norm_topk_prob: false}, exact router ties); with
     * target contexts ({@link #contexts()}), {@code tiny-moe-target}. A fixture already run as the dense or quantized
     * one is not run again.
     */
    protected List<String> moeFixtures() {
        return contexts().tap() == null ? List.of("tiny-moe", "tiny-moe-ties") : List.of("tiny-moe-target");
    }

    /**
     * How many random chains the §12 rule runs per MoE fixture: a quarter of {@link #lockstepChains()}, at least 10
     * (at most {@link #lockstepChains()}); a MoE bug shows on the first MoE forward.
     */
    protected int moeChains() {
        return Math.min(lockstepChains(), Math.max(10, lockstepChains() / 4));
    }

    /** Override to return false when the backend cannot load MLX affine-quantized weights. */
    protected boolean supportsQuantizedWeights() {
        return true;
    }

    /** Override to return false when the backend cannot draw seeded stochastic samples (spec §7). */
    protected boolean supportsSeededSampling() {
        return true;
    }

    /**
     * Where the lockstep checks' prefill and commit contexts come from: seeded synthetic hiddens by default. Return
     * {@code new ContextSource.Target(tap)} to feed them the taps of the fixture's reference target on the chain's own
     * tokens (spec §13.4); {@link #denseFixture()} (and {@link #quantizedFixture()} when quantized weights are
     * supported) must then have a target, e.g. {@code tiny-target} and {@code tiny-target-q4}. The §10.1.10 check then
     * runs the speculative loop on that hybrid target; the checks of the backend on its own keep seeded hiddens.
     */
    protected ContextSource contexts() {
        return ContextSource.SYNTHETIC;
    }

    /** How many random chains the lockstep checks run per fixture. */
    protected int lockstepChains() {
        return 40;
    }

    /**
     * The length of the §10.1.8 prefill; the default crosses the 2048-position chunk boundary (spec §5.4). Lower it
     * only for very slow backends, knowing the boundary is then not exercised.
     */
    protected int prefillSplitLength() {
        return 2050;
    }

    /** How many §11.11 overlap trials to run (two prefills racing on one group each). */
    protected int overlapTrials() {
        return 40;
    }

    /** Where fixtures are cached. */
    protected Path fixtureCache() {
        return FixtureRecipe.defaultCache();
    }

    private MtpBackend backend;
    private final Map<String, MtpModel> models = new HashMap<>();
    private final Map<String, TargetTaps> targets = new HashMap<>();
    private final List<AutoCloseable> open = new ArrayList<>();

    @BeforeAll
    final void checkAvailable() {
        backend = createBackend();
        Availability a = backend.availability();
        if (!a.available()) {
            System.out.println("[tck] " + UntrustedText.clip(backend.name()) + " skipped: " + UntrustedText.line(a.reason()));
        }
        Assumptions.assumeTrue(a.available(), () -> backend.name() + " is unavailable: " + a.reason());
        Tolerance t = tolerance();
        if (!t.atMost(declared())) {
            fail("tolerance() returns " + t.describe() + ", looser than the profile " + backend.name()
                    + " declares for these options, " + declared().describe() + "; the hook may only tighten it");
        }
        System.out.println("[tck] " + UntrustedText.clip(backend.name()) + " " + UntrustedText.clip(
                backendOptions().toString()) + " held to " + UntrustedText.clip(t.describe()));
        ContextSource c = contexts();
        if (c.tap() != null) {
            for (String f : supportsQuantizedWeights() ? List.of(denseFixture(), quantizedFixture())
                    : List.of(denseFixture())) {
                if (!FixtureRecipe.named(f).hasTarget()) {
                    fail("contexts() asks for target contexts, but fixture " + f + " has no target (override "
                            + "denseFixture / quantizedFixture with one of " + FixtureRecipe.withTarget() + ")");
                }
            }
        }
        System.out.println("[tck] contexts of the lockstep checks: " + c.describe());
    }

    /** Closes the models the rule loaded when it ends: an exec: engine is a process per model, not per rule. */
    @AfterEach
    final void closeRuleModels() throws Exception {
        List<AutoCloseable> loaded = new ArrayList<>(open);
        open.clear();
        targets.clear(); // the target taps are among the closed: the next rule loads its own
        for (AutoCloseable c : loaded.reversed()) {
            c.close();
        }
    }

    @AfterAll
    final void closeModels() throws Exception {
        closeRuleModels();
    }

    private MtpModel model(String fixture) {
        return models.computeIfAbsent(fixture, f -> FixtureRecipe.named(f).load(fixtureCache()));
    }

    private DraftModel subject(String fixture) {
        DraftModel d = backend.load(model(fixture), backendOptions());
        open.add(d);
        return d;
    }

    private ReferenceDraftModel oracle(String fixture) {
        ReferenceDraftModel d = ReferenceBackend.load(model(fixture), ReferenceBackend.configuredMode(), 1);
        open.add(d);
        return d;
    }

    /** The fixture's reference target and the tap of {@link #contexts()}, or null for synthetic contexts. */
    private TargetTaps taps(String fixture) {
        HiddenTap tap = contexts().tap();
        if (tap == null) {
            return null;
        }
        return targets.computeIfAbsent(fixture, f -> {
            var t = TargetTaps.reference(FixtureRecipe.named(f).loadTarget(fixtureCache()), // the hybrid target
                    ReferenceBackend.configuredMode(), 1);
            open.add(t);
            return new TargetTaps(t, tap);
        });
    }

    private void lockstep(String fixture, String what, List<Action> chain) {
        ChainOutcome out = new Lockstep(oracle(fixture), subject(fixture), tolerance(), taps(fixture)).run(0, chain);
        if (!out.passed()) {
            fail(what + ": expected the reference's result at action " + out.divergence().actionIndex() + " ("
                    + chain.get(out.divergence().actionIndex()).describe() + "), " + out.divergence().message()
                    + "\n  chain: " + describe(chain));
        }
    }

    private void campaign(String fixture, double stochasticRate) {
        campaign(fixture, lockstepChains(), stochasticRate);
    }

    private void campaign(String fixture, int chains, double stochasticRate) {
        ChainGenerator.Limits l = ChainGenerator.Limits.defaults();
        Campaign.Settings s = new Campaign.Settings(fixture, backend.name(), backendOptions(), tolerance(),
                chains, 20261130, 0, 1, new ChainGenerator.Limits(l.maxActions(), l.maxRows(),
                l.maxDepth(), l.maxPrefill(), l.badRate(), stochasticRate), null, 300);
        Campaign.Result r = Campaign.run(s, oracle(fixture), subject(fixture), taps(fixture), (d, t, p) -> { });
        if (!r.ok()) {
            Campaign.Failure f = r.failures().getFirst();
            fail(r.failures().size() + " of " + r.chainsRun() + " chains diverged from the reference (expected its "
                    + "drafts, checkpoints and errors); first (chain seed " + f.chainSeed() + ", shrunk to "
                    + f.shrunk().size() + " actions): " + f.divergence().message()
                    + "\n  chain: " + describe(f.shrunk()));
        }
    }

    private static String describe(List<Action> chain) {
        return String.join("; ", chain.stream().map(Action::describe).toList());
    }

    // ---- lockstep against the reference ----------------------------------------------------------------------

    @Test
    @DisplayName("§5 random lifecycles follow the reference (dense weights)")
    @Override
    public void stochastic_s5_randomChainsFollowTheReference() {
        campaign(denseFixture(), supportsSeededSampling() ? 0.3 : 0.0);
    }

    @Test
    @DisplayName("§2 random lifecycles follow the reference (quantized weights)")
    @Override
    public void optional_s2_quantizedChainsFollowTheReference() {
        Assumptions.assumeTrue(supportsQuantizedWeights(),
                "not applicable: no quantized weights (override supportsQuantizedWeights)");
        campaign(quantizedFixture(), supportsSeededSampling() ? 0.3 : 0.0);
    }

    @Test
    @DisplayName("§12 random lifecycles follow the reference on the MoE fixtures (when the backend loads MoE)")
    @Override
    public void optional_s12_moeChainsFollowTheReference() {
        List<String> fixtures = moeFixtures().stream()
                .filter(f -> !f.equals(denseFixture()) && !f.equals(quantizedFixture())).toList();
        Assumptions.assumeFalse(fixtures.isEmpty(), "not applicable: the MoE fixtures ran as the dense or quantized "
                + "fixture");
        try {
            subject(fixtures.getFirst()); // closed with the rule's other models
        } catch (MtpException e) {
            Assumptions.assumeTrue(e.kind() != MtpException.Kind.INCOMPATIBLE_MODEL
                    && e.kind() != MtpException.Kind.UNAVAILABLE, () -> "not applicable: the backend does not load "
                    + "MoE models (" + fixtures.getFirst() + ": " + e.getMessage() + ")");
            throw e;
        }
        for (String f : fixtures) {
            try {
                campaign(f, moeChains(), supportsSeededSampling() ? 0.3 : 0.0);
            } catch (AssertionError e) {
                fail(f + ": " + e.getMessage());
            }
        }
    }

    @Test
    @DisplayName("§5.8 commit keeps accepted + 1 rows, for every acceptance pattern")
    @Override
    public void required_s5_8_commitKeepsAcceptedPlusOneRows() {
        lockstep(denseFixture(), "§5.8", List.of(
                new Action.Append(List.of(-1, -1, -1), false), new Action.Prefill(5, 1),
                new Action.Draft(3, 2, false), new Action.Commit(Action.Acceptance.RANDOM, 3),
                new Action.Draft(2, 4, false), new Action.Commit(Action.Acceptance.FULL, 5),
                new Action.Draft(4, 6, false), new Action.Commit(Action.Acceptance.NONE, 7),
                new Action.Draft(0, 8, false), new Action.Commit(Action.Acceptance.NONE, 9)));
    }

    @Test
    @DisplayName("§7 seeded sampling draws what the reference draws")
    @Override
    public void optional_s7_seededSamplingMatchesTheReference() {
        Assumptions.assumeTrue(supportsSeededSampling(),
                "not applicable: no seeded sampling (override supportsSeededSampling)");
        lockstep(denseFixture(), "§7", List.of(
                new Action.Append(List.of(-1, -1), false), new Action.Prefill(4, 11),
                new Action.Draft(5, 12, true), new Action.Commit(Action.Acceptance.RANDOM, 13),
                new Action.Draft(3, 14, true), new Action.Commit(Action.Acceptance.FULL, 15)));
    }

    @Test
    @DisplayName("§10.1.7 restored rows survive reorder, retirement and re-join")
    @Override
    public void required_s10_1_7_restoredRowsSurviveMembershipChanges() {
        lockstep(denseFixture(), "§10.1.7", List.of(
                new Action.Append(List.of(-1, -1), false), new Action.Prefill(6, 21), new Action.Capture(22),
                new Action.Capture(23), new Action.Append(List.of(0, 1), false), new Action.Filter(24, true),
                new Action.Prefill(2, 25), new Action.Draft(3, 26, false),
                new Action.Commit(Action.Acceptance.RANDOM, 27), new Action.Filter(28, false),
                new Action.Append(List.of(1, -1), true), new Action.Prefill(3, 29), new Action.Draft(2, 30, false),
                new Action.Commit(Action.Acceptance.FULL, 31)));
    }

    @Test
    @DisplayName("§10.1.10 speculative output equals the target's own stream, either tap")
    @Override
    public void required_s10_1_10_outputIndependence() {
        if (taps(denseFixture()) != null) {
            outputIndependenceOnTheHybridTarget(taps(denseFixture()).target());
            return;
        }
        MtpModel m = model(denseFixture());
        DraftModel drafter = subject(denseFixture());
        try (ReferenceDraftModel targetKernels = ReferenceBackend.load(m, ReferenceBackend.configuredMode(), 1)) {
            for (ReferenceTarget.Tap tap : ReferenceTarget.Tap.values()) {
                ReferenceTarget target = ReferenceTarget.random(m, 2, 99, tap, targetKernels.kernels());
                List<SpeculativeLoop.Request> reqs = List.of(
                        new SpeculativeLoop.Request(new int[] {1, 2, 3}, org.mtporacle.api.RowSampler.GREEDY, 9, 0),
                        new SpeculativeLoop.Request(new int[] {4}, org.mtporacle.api.RowSampler.GREEDY, 5, 1),
                        new SpeculativeLoop.Request(new int[] {5, 6}, supportsSeededSampling()
                                ? org.mtporacle.api.RowSampler.of(0.8, 20, 0.9, 5) : org.mtporacle.api.RowSampler.GREEDY,
                                7, 2));
                SpeculativeLoop.Result r = new SpeculativeLoop(target, drafter, 3).run(reqs);
                for (int i = 0; i < reqs.size(); i++) {
                    expectPlainStream(tap + " tap, request " + i, SpeculativeLoop.plainDecode(target, reqs.get(i)),
                            r.outputs().get(i));
                }
            }
        }
    }

    /**
     * §10.1.10 on the fixture's hybrid target (spec §13.4): the speculative loop with the backend as the drafter, for
     * both taps and both drafter KV policies, joins, a zero-draft round and a restore, emits plain decoding's tokens.
     */
    private void outputIndependenceOnTheHybridTarget(LoadedTarget target) {
        DraftModel drafter = subject(denseFixture());
        org.mtporacle.api.RowSampler seeded = supportsSeededSampling()
                ? org.mtporacle.api.RowSampler.of(0.8, 20, 0.9, 5) : org.mtporacle.api.RowSampler.GREEDY;
        List<SpeculativeDecoding.Request> reqs = List.of(
                new SpeculativeDecoding.Request(new int[] {1, 2, 3}, org.mtporacle.api.RowSampler.GREEDY, 9, 0),
                new SpeculativeDecoding.Request(new int[] {4}, org.mtporacle.api.RowSampler.GREEDY, 5, 1),
                new SpeculativeDecoding.Request(new int[] {5, 6}, seeded, 7, 2));
        for (HiddenTap tap : HiddenTap.values()) {
            for (SpeculativeDecoding.KvPolicy policy : SpeculativeDecoding.KvPolicy.values()) {
                SpeculativeDecoding.Options o = new SpeculativeDecoding.Options(tap, policy,
                        round -> round == 1 ? 0 : 3, round -> round == 2);
                SpeculativeDecoding.Result r = new SpeculativeDecoding(target, drafter, o).run(reqs, null);
                for (int i = 0; i < reqs.size(); i++) {
                    expectPlainStream(tap.label() + " tap, " + policy.label() + ", request " + i,
                            SpeculativeDecoding.plain(target, reqs.get(i)), r.outputs().get(i));
                }
            }
        }
    }

    /** Fails unless the speculative loop emitted {@code plain}, the target's own stream (spec §10.1.10). */
    private static void expectPlainStream(String what, int[] plain, int[] emitted) {
        if (!Arrays.equals(plain, emitted)) {
            fail(what + ": expected the target's own stream " + Arrays.toString(plain) + ", the speculative loop "
                    + "emitted " + Arrays.toString(emitted));
        }
    }

    // ---- the backend on its own -------------------------------------------------------------------------------

    @Test
    @DisplayName("§11.1 every bad call is refused with the right kind and changes nothing")
    @Override
    public void required_s11_1_badInputCatalogue() {
        MtpModel m = model(denseFixture());
        DraftModel d = subject(denseFixture());
        int checked = 0;
        for (BadCall call : BadCall.values()) {
            for (Setup setup : Setup.values()) {
                try (DraftRows g = d.openRows(List.of())) {
                    GroupShape shape = setup.prepare(g, m);
                    if (!call.appliesTo(shape)) {
                        continue;
                    }
                    List<RowCheckpoint> before = captureAll(g, shape);
                    int rows = g.rowCount();
                    try {
                        call.invoke(g, m, shape, 77);
                        fail(call + " (rule " + call.rule() + ") in state " + setup + ": expected " + call.expectedKind()
                                + ", the call was accepted");
                    } catch (MtpException e) {
                        assertThat(e.kind()).as("%s (spec %s) in state %s: expected %s, the engine failed with %s: %s",
                                call, call.rule(), setup, call.expectedKind(), e.kind(), e.getMessage())
                                .isEqualTo(call.expectedKind());
                        assertThat(e.getMessage()).as("%s: expected a message starting with the call's name and "
                                        + "': ' (e.g. 'prefill: ...'), got %s", call, e.getMessage())
                                .matches("^(append|filterRows|prefill|draft|commit|capture|sampler|sampling): .+");
                    }
                    assertThat(g.rowCount()).as("%s in %s: row count unchanged", call, setup).isEqualTo(rows);
                    List<RowCheckpoint> after = captureAll(g, shape);
                    for (int r = 0; r < before.size(); r++) {
                        assertIdentical(call + " in " + setup + ": row " + r + " after the refused call", after.get(r),
                                before.get(r));
                    }
                    checked++;
                    break;
                }
            }
        }
        System.out.println("[tck] " + UntrustedText.clip(backend.name()) + ": " + checked + " of " + BadCall.values().length
                + " distinct bad calls refused with the right kind, rows unchanged");
        assertThat(checked).as("bad calls exercised (each applies in at least one state)")
                .isEqualTo(BadCall.values().length).isGreaterThanOrEqualTo(40);
    }

    @Test
    @DisplayName("§11.1 a closed group refuses every call with ILLEGAL_STATE, whatever state it was closed in")
    @Override
    public void required_s11_1_closedGroupRefusesEveryCall() {
        MtpModel m = model(denseFixture());
        DraftModel d = subject(denseFixture());
        int h = m.config().hiddenSize();
        RowCheckpoint cp;
        try (DraftRows g = d.openRows(Arrays.asList(null, null))) {
            prefill(g, m, 3, 41);
            cp = g.capture(0);
        }
        int checked = 0;
        for (Setup setup : Setup.values()) {
            DraftRows g = d.openRows(List.of());
            setup.prepare(g, m);
            g.close();
            g.close(); // idempotent
            if (!g.isClosed()) {
                fail(setup + ": expected isClosed() after close(), it is false (spec §11.1)");
            }
            int b = Math.max(1, g.rowCount());
            List<Map.Entry<String, Runnable>> calls = List.of(
                    Map.entry("append", () -> g.append(List.of(cp))),
                    Map.entry("append", () -> g.append(List.of())),
                    Map.entry("filterRows", () -> g.filterRows(new int[0])),
                    Map.entry("prefill", () -> {
                        ChainData.PrefillArgs a = ChainData.prefill(42, b, 2, m.config().vocabSize(), h);
                        g.prefill(a.tokens(), a.context());
                    }),
                    Map.entry("draft", () -> g.draft(new int[b], 1, new long[b], DraftSampling.greedy(b))),
                    Map.entry("commit", () -> g.commit(new int[b], ChainData.hiddens(new SplittableRandom(43), b, 2,
                            h))),
                    Map.entry("capture", () -> g.capture(0)));
            for (Map.Entry<String, Runnable> call : calls) {
                try {
                    call.getValue().run();
                    fail(call.getKey() + " on a group closed in state " + setup + ": expected ILLEGAL_STATE, the call "
                            + "was accepted");
                } catch (MtpException e) {
                    assertThat(e.kind()).as("%s on a group closed in state %s: expected ILLEGAL_STATE, the engine "
                            + "failed with %s: %s", call.getKey(), setup, e.kind(), e.getMessage())
                            .isEqualTo(MtpException.Kind.ILLEGAL_STATE);
                    assertThat(e.getMessage()).as("%s on a closed group: expected a message starting '%s: ' that "
                                    + "says 'closed' (WIRE.md §6), got %s", call.getKey(), call.getKey(), e.getMessage())
                            .startsWith(call.getKey() + ": ").contains("closed");
                }
                checked++;
            }
        }
        assertThat(checked).as("calls checked on closed groups (7 calls × %d states)", Setup.values().length)
                .isEqualTo(Setup.values().length * 7);
    }

    @Test
    @DisplayName("§11.11 a group whose model was closed refuses every call")
    @Override
    public void required_s11_11_closedModelRefusesEveryCall() {
        MtpModel m = model(denseFixture());
        DraftModel d = subject(denseFixture());
        int h = m.config().hiddenSize();
        DraftRows g = d.openRows(Arrays.asList(null, null));
        prefill(g, m, 3, 51);
        RowCheckpoint cp = g.capture(0);
        d.close();
        List<Map.Entry<String, Runnable>> calls = List.of(
                Map.entry("append", () -> g.append(List.of(cp))),
                Map.entry("filterRows", () -> g.filterRows(new int[] {1, 0})),
                Map.entry("prefill", () -> prefill(g, m, 2, 52)),
                Map.entry("draft", () -> g.draft(new int[2], 1, new long[2], DraftSampling.greedy(2))),
                Map.entry("commit", () -> g.commit(new int[2], ChainData.hiddens(new SplittableRandom(53), 2, 2, h))),
                Map.entry("capture", () -> g.capture(0)));
        for (Map.Entry<String, Runnable> call : calls) {
            try {
                call.getValue().run();
                fail(call.getKey() + " on a group whose model was closed: expected ILLEGAL_STATE, the call was accepted");
            } catch (MtpException e) {
                assertThat(e.kind()).as("%s after the model closed: %s", call.getKey(), e.getMessage())
                        .isEqualTo(MtpException.Kind.ILLEGAL_STATE);
                assertThat(e.getMessage()).as("%s message names the call", call.getKey())
                        .startsWith(call.getKey() + ": ");
            } catch (RuntimeException e) {
                fail(call.getKey() + " on a group whose model was closed threw " + e + ", expected ILLEGAL_STATE");
            }
        }
        assertThat(g.rowCount()).as("row count after the refused calls").isEqualTo(2);
        g.close();
        if (!g.isClosed()) {
            fail("expected isClosed() after close() on a group whose model was closed, it is false (spec §11.11)");
        }
    }

    @Test
    @DisplayName("§11.11 overlapping calls from two threads are refused or serialised, never corrupt a group")
    @Override
    public void stochastic_s11_11_overlappingCallsNeverCorrupt() {
        MtpModel m = model(denseFixture());
        DraftModel d = subject(denseFixture());
        int v = m.config().vocabSize();
        int h = m.config().hiddenSize();
        ChainData.PrefillArgs first = ChainData.prefill(71, 2, 3, v, h);
        ChainData.PrefillArgs a = ChainData.prefill(72, 2, 48, v, h);
        ChainData.PrefillArgs b = ChainData.prefill(73, 2, 40, v, h);
        // the states a sequential order can leave: a then b, b then a, a alone, b alone
        Map<String, List<RowCheckpoint>> sequential = new java.util.LinkedHashMap<>();
        for (String order : List.of("ab", "ba", "a", "b")) {
            try (DraftRows g = d.openRows(Arrays.asList(null, null))) {
                g.prefill(first.tokens(), first.context());
                for (char c : order.toCharArray()) {
                    ChainData.PrefillArgs p = c == 'a' ? a : b;
                    g.prefill(p.tokens(), p.context());
                }
                sequential.put(order, List.of(g.capture(0), g.capture(1)));
            }
        }
        int refused = 0;
        for (int trial = 0; trial < overlapTrials(); trial++) {
            try (DraftRows g = d.openRows(Arrays.asList(null, null))) {
                g.prefill(first.tokens(), first.context());
                java.util.concurrent.CyclicBarrier start = new java.util.concurrent.CyclicBarrier(2);
                Throwable[] outcome = new Throwable[2];
                Thread[] threads = new Thread[2];
                for (int t = 0; t < 2; t++) {
                    ChainData.PrefillArgs p = t == 0 ? a : b;
                    int slot = t;
                    threads[t] = new Thread(() -> {
                        try {
                            start.await();
                            g.prefill(p.tokens(), p.context());
                        } catch (Throwable e) {
                            outcome[slot] = e;
                        }
                    });
                    threads[t].start();
                }
                for (Thread t : threads) {
                    try {
                        t.join(60_000);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        fail("interrupted while waiting for trial " + trial);
                    }
                    if (t.isAlive()) {
                        fail("trial " + trial + ": expected an overlapping prefill to return or be refused, it did "
                                + "not return within 60 s (spec §11.11)");
                    }
                }
                for (Throwable e : outcome) {
                    if (e != null) {
                        refused++;
                        if (!(e instanceof MtpException x) || x.kind() != MtpException.Kind.ILLEGAL_STATE) {
                            fail("trial " + trial + ": expected an overlapping call to be refused as ILLEGAL_STATE, "
                                    + "it failed with " + (e instanceof MtpException x ? x.kind() + ": "
                                    + e.getMessage() : e));
                        }
                    }
                }
                if (outcome[0] != null && outcome[1] != null) {
                    fail("trial " + trial + ": expected one overlapping prefill to complete, both were refused ("
                            + outcome[0].getMessage() + "; " + outcome[1].getMessage() + ") (spec §11.11)");
                }
                List<String> orders = outcome[0] != null ? List.of("b") : outcome[1] != null ? List.of("a")
                        : List.of("ab", "ba");
                List<RowCheckpoint> now = List.of(g.capture(0), g.capture(1));
                if (orders.stream().noneMatch(o -> sameRows(sequential.get(o), now))) {
                    for (int r = 0; r < now.size(); r++) {
                        assertIdentical("trial " + trial + ": row " + r + " after overlapping prefills, against the "
                                + "order " + orders.getFirst() + " of " + orders, now.get(r),
                                sequential.get(orders.getFirst()).get(r));
                    }
                    fail("trial " + trial + ": expected the state one of the orders " + orders + " leaves, the group "
                            + "ends in another");
                }
            }
        }
        System.out.println("[tck] " + UntrustedText.clip(backend.name()) + ": " + overlapTrials() + " overlapping prefill pairs, " + refused
                + " calls refused, every group in a sequential state");
    }

    private static boolean sameRows(List<RowCheckpoint> want, List<RowCheckpoint> got) {
        for (int r = 0; r < want.size(); r++) {
            if (!want.get(r).contentEquals(got.get(r))) {
                return false;
            }
        }
        return true;
    }

    @Test
    @DisplayName("§10.1.7 capture → restore → capture is byte-identical")
    @Override
    public void required_s10_1_7_checkpointRoundTripIsByteIdentical() {
        MtpModel m = model(denseFixture());
        DraftModel d = subject(denseFixture());
        try (DraftRows g = d.openRows(Arrays.asList(null, null))) {
            prefill(g, m, 7, 31);
            round(g, m, 3, Action.Acceptance.RANDOM, 32);
            for (int r = 0; r < 2; r++) {
                RowCheckpoint cp = g.capture(r);
                try (DraftRows h = d.openRows(List.of(cp))) {
                    assertIdentical("row " + r + " captured again after restore", h.capture(0), cp);
                }
            }
        }
    }

    @Test
    @DisplayName("§10.1.11 filterRows permutes every per-row quantity")
    @Override
    public void required_s10_1_11_filterRowsPermutesRows() {
        MtpModel m = model(denseFixture());
        DraftModel d = subject(denseFixture());
        try (DraftRows g = d.openRows(Arrays.asList(null, null, null, null))) {
            prefill(g, m, 5, 41);
            round(g, m, 2, Action.Acceptance.RANDOM, 42);
            List<RowCheckpoint> before = captureAll(g, shapeOf(g, true));
            int[] keep = {3, 0, 2};
            g.filterRows(keep);
            for (int i = 0; i < keep.length; i++) {
                assertIdentical("filterRows " + Arrays.toString(keep) + ": new row " + i + " (old row " + keep[i]
                        + ")", g.capture(i), before.get(keep[i]));
            }
        }
    }

    @Test
    @DisplayName("§10.1.1 alignment: P − 1 drafter rows; P grows by accepted + 1")
    @Override
    public void required_s10_1_1_alignment() {
        MtpModel m = model(denseFixture());
        DraftModel d = subject(denseFixture());
        try (DraftRows g = d.openRows(Arrays.asList(null, null))) {
            prefill(g, m, 6, 51);
            for (int r = 0; r < 2; r++) {
                assertThat(g.capture(r).processedTokens()).as("row %d: P after a prefill of 6", r).isEqualTo(6);
                assertThat(g.capture(r).draftOffset()).as("row %d: draftOffset (P − 1) after a prefill of 6", r)
                        .isEqualTo(5);
            }
            int[] accepted = round(g, m, 4, Action.Acceptance.RANDOM, 52);
            for (int r = 0; r < 2; r++) {
                RowCheckpoint cp = g.capture(r);
                assertThat(cp.processedTokens()).as("row %d after accepting %d", r, accepted[r])
                        .isEqualTo(6 + accepted[r] + 1);
                assertThat(cp.keys().dim(2)).as("row %d: KV positions held (P − 1, keys [1, nKV, P−1, D])", r)
                        .isEqualTo(cp.processedTokens() - 1);
            }
        }
    }

    @Test
    @DisplayName("§10.1.3 a batched group equals its rows run one at a time")
    @Override
    public void required_s10_1_3_batchedEqualsOneAtATime() {
        MtpModel m = model(denseFixture());
        DraftModel d = subject(denseFixture());
        int b = 3;
        List<RowCheckpoint> batched;
        try (DraftRows g = d.openRows(Collections.nCopies(b, null))) {
            prefill(g, m, 5, 61);
            batched = captureAll(g, shapeOf(g, true));
        }
        ChainData.PrefillArgs args = ChainData.prefill(61, b, 5, m.config().vocabSize(), m.config().hiddenSize());
        int[] tokens = args.tokens().toIntArray();
        float[] ctx = args.context().toFloatArray();
        int h = m.config().hiddenSize();
        for (int r = 0; r < b; r++) {
            try (DraftRows one = d.openRows(Collections.singletonList(null))) {
                one.prefill(HostTensor.ofInts(Arrays.copyOfRange(tokens, r * 5, r * 5 + 5), 1, 5),
                        HostTensor.ofFloats(Arrays.copyOfRange(ctx, r * 5 * h, (r + 1) * 5 * h), 1, 5, h));
                assertClose("row " + r + " alone vs batched", one.capture(0), batched.get(r));
            }
        }
    }

    @Test
    @DisplayName("§10.1.5 a depth-0 round equals a depth-1 round with 0 accepted")
    @Override
    public void required_s10_1_5_depthZeroEqualsDepthOneWithZeroAccepted() {
        MtpModel m = model(denseFixture());
        DraftModel d = subject(denseFixture());
        int h = m.config().hiddenSize();
        RowCheckpoint start;
        try (DraftRows g = d.openRows(Collections.singletonList(null))) {
            prefill(g, m, 4, 71);
            start = g.capture(0);
        }
        HostTensor ctx = ChainData.hiddens(new SplittableRandom(72), 1, 2, h);
        RowCheckpoint zero;
        RowCheckpoint one;
        try (DraftRows g = d.openRows(List.of(start))) {
            g.draft(new int[] {9}, 0, new long[] {1}, DraftSampling.greedy(1));
            g.commit(new int[] {0}, ctx.reshape(2, h).slice0(0, 1).reshape(1, 1, h));
            zero = g.capture(0);
        }
        try (DraftRows g = d.openRows(List.of(start))) {
            g.draft(new int[] {9}, 1, new long[] {1}, DraftSampling.greedy(1));
            g.commit(new int[] {0}, ctx);
            one = g.capture(0);
        }
        assertClose("depth 0 vs depth 1 with 0 accepted", zero, one);
    }

    @Test
    @DisplayName("§10.1.6 rollback is trace-free: rejected proposals and unused verify taps leave no trace")
    @Override
    public void required_s10_1_6_rollbackIsTraceFree() {
        MtpModel m = model(denseFixture());
        DraftModel d = subject(denseFixture());
        int h = m.config().hiddenSize();
        RowCheckpoint start;
        try (DraftRows g = d.openRows(Collections.singletonList(null))) {
            prefill(g, m, 6, 81);
            start = g.capture(0);
        }
        int depth = 4;
        float[] ctx = ChainData.hiddens(new SplittableRandom(82), 1, depth + 1, h).toFloatArray();
        float[] other = ChainData.hiddens(new SplittableRandom(83), 1, depth + 1, h).toFloatArray();
        // rows other than `accepted` of the verify context must not matter
        System.arraycopy(ctx, 0, other, 0, h);
        RowCheckpoint a;
        RowCheckpoint b;
        RowCheckpoint c;
        try (DraftRows g = d.openRows(List.of(start))) {
            g.draft(new int[] {5}, depth, new long[] {1}, DraftSampling.greedy(1));
            g.commit(new int[] {0}, HostTensor.ofFloats(ctx, 1, depth + 1, h));
            a = g.capture(0);
        }
        try (DraftRows g = d.openRows(List.of(start))) {
            g.draft(new int[] {5}, 2, new long[] {7}, DraftSampling.greedy(1));
            g.commit(new int[] {0}, HostTensor.ofFloats(Arrays.copyOf(other, 3 * h), 1, 3, h));
            b = g.capture(0);
        }
        // … and equal to never having drafted: a prefill of the pending token with the same tap
        try (DraftRows g = d.openRows(List.of(start))) {
            g.prefill(HostTensor.ofInts(new int[] {5}, 1, 1), HostTensor.ofFloats(Arrays.copyOf(ctx, h), 1, 1, h));
            c = g.capture(0);
        }
        assertClose("0 accepted of depth 4 vs 0 accepted of depth 2", a, b);
        assertClose("0 accepted vs a prefill of the pending token", a, c);
    }

    @Test
    @DisplayName("§10.1.8 one prefill equals any split of it, across the 2048 chunk too")
    @Override
    public void required_s10_1_8_prefillSplitAnywhereEqualsOnePrefill() {
        MtpModel m = model(denseFixture());
        DraftModel d = subject(denseFixture());
        int h = m.config().hiddenSize();
        int len = prefillSplitLength();
        ChainData.PrefillArgs args = ChainData.prefill(91, 1, len, m.config().vocabSize(), h);
        RowCheckpoint whole;
        try (DraftRows g = d.openRows(Collections.singletonList(null))) {
            g.prefill(args.tokens(), args.context());
            whole = g.capture(0);
        }
        assertThat(whole.processedTokens()).as("P after one prefill of %d", len).isEqualTo(len);
        for (int cut : new int[] {1, len / 3, Math.min(2048, len - 2), len - 1}) {
            try (DraftRows g = d.openRows(Collections.singletonList(null))) {
                g.prefill(args.tokens().reshape(len).slice0(0, cut).reshape(1, cut),
                        args.context().reshape(len, h).slice0(0, cut).reshape(1, cut, h));
                g.prefill(args.tokens().reshape(len).slice0(cut, len).reshape(1, len - cut),
                        args.context().reshape(len, h).slice0(cut, len).reshape(1, len - cut, h));
                assertClose("split at " + cut, g.capture(0), whole);
            }
        }
    }

    @Test
    @DisplayName("§10.1.9 a failing append leaves membership and contents unchanged")
    @Override
    public void required_s10_1_9_failedAppendIsAtomic() {
        MtpModel m = model(denseFixture());
        DraftModel d = subject(denseFixture());
        try (DraftRows g = d.openRows(Arrays.asList(null, null))) {
            prefill(g, m, 3, 95);
            List<RowCheckpoint> before = captureAll(g, shapeOf(g, true));
            RowCheckpoint good = g.capture(0);
            RowCheckpoint bad = new RowCheckpoint(good.schema(), good.processedTokens(), good.draftOffset() + 1,
                    good.modelIdentity(), good.keys(), good.values(), good.hidden());
            try {
                g.append(Arrays.asList(good, null, bad));
                fail("append with a misaligned checkpoint: expected INCOMPATIBLE_CHECKPOINT, the call was accepted");
            } catch (MtpException e) {
                assertThat(e.kind()).as("append with draftOffset = P: expected INCOMPATIBLE_CHECKPOINT, the engine failed "
                                + "with %s: %s", e.kind(), e.getMessage())
                        .isEqualTo(MtpException.Kind.INCOMPATIBLE_CHECKPOINT);
            }
            assertThat(g.rowCount()).as("row count after the refused append").isEqualTo(2);
            List<RowCheckpoint> after = captureAll(g, shapeOf(g, true));
            for (int r = 0; r < 2; r++) {
                assertIdentical("row " + r + " after the refused append", after.get(r), before.get(r));
            }
        }
    }

    @Test
    @DisplayName("§10.1.2 singleton equivalence (internal to batched caches)")
    @Override
    public void untested_s10_1_2_singletonEquivalence() {
        Assumptions.abort("untested: merging a single-request cache into a batched one is internal to a backend; "
                + "its observable consequence is checked by §10.1.3 and §10.1.7");
    }

    @Test
    @DisplayName("§10.1.4 grouped rows equal the single-request source at B = 1")
    @Override
    public void untested_s10_1_4_groupedEqualsSingleRequestSource() {
        Assumptions.abort("untested: the contract has no single-request source (spec §5.12 is the seed's); "
                + "B = 1 groups are covered by every other check");
    }

    // ---- helpers ----------------------------------------------------------------------------------------------

    /** Group states in which bad calls are tried. */
    private enum Setup {
        EMPTY, PREFILLED, ROUND_OPEN, WITH_COLD_ROW;

        GroupShape prepare(DraftRows g, MtpModel m) {
            if (this == EMPTY) {
                return GroupShape.empty();
            }
            g.append(Arrays.asList(null, null));
            prefill(g, m, 3, 5);
            return switch (this) {
                case PREFILLED -> new GroupShape(new boolean[] {true, true}, false, 0, 0);
                case ROUND_OPEN -> {
                    g.draft(new int[] {1, 2}, 2, new long[] {0, 0}, DraftSampling.greedy(2));
                    yield new GroupShape(new boolean[] {false, false}, true, 2, 0);
                }
                case WITH_COLD_ROW -> {
                    g.append(Collections.singletonList(null));
                    yield new GroupShape(new boolean[] {true, true, false}, false, 0, 0);
                }
                default -> throw new IllegalStateException();
            };
        }
    }

    private static void prefill(DraftRows g, MtpModel m, int len, long seed) {
        ChainData.PrefillArgs a = ChainData.prefill(seed, g.rowCount(), len, m.config().vocabSize(),
                m.config().hiddenSize());
        g.prefill(a.tokens(), a.context());
    }

    private static int[] round(DraftRows g, MtpModel m, int depth, Action.Acceptance acc, long seed) {
        ChainData.DraftArgs da = ChainData.draft(seed, g.rowCount(), m.config().vocabSize(), false);
        g.draft(da.pending(), depth, da.steps(), da.sampling());
        ChainData.CommitArgs ca = ChainData.commit(seed + 1, acc, g.rowCount(), depth, m.config().hiddenSize());
        g.commit(ca.accepted(), ca.context());
        return ca.accepted();
    }

    private static GroupShape shapeOf(DraftRows g, boolean allHidden) {
        boolean[] h = new boolean[g.rowCount()];
        Arrays.fill(h, allHidden);
        return new GroupShape(h, false, 0, 0);
    }

    private static List<RowCheckpoint> captureAll(DraftRows g, GroupShape shape) {
        List<RowCheckpoint> out = new ArrayList<>();
        for (int r = 0; !shape.roundOpen() && r < shape.rows(); r++) {
            out.add(shape.hasHidden(r) ? g.capture(r) : null);
        }
        return out;
    }

    /**
     * Fails unless {@code actual} is byte-identical to {@code expected} (spec §10.1.7), saying what differs through
     * the kit's one comparison (a Judge under the exact profile).
     */
    private static void assertIdentical(String what, RowCheckpoint actual, RowCheckpoint expected) {
        if (expected == null ? actual == null : expected.contentEquals(actual)) {
            return;
        }
        if (expected == null) {
            fail(what + ": a cold row (no checkpoint) was expected, got " + actual);
        }
        Divergence d = new Judge(Tolerance.EXACT, 0, "the expected state").checkpoint(-1, what, expected, actual);
        fail(d != null ? "not byte-identical: " + d.message() + " (" + d.details() + ")"
                : what + ": not byte-identical, though every value compares equal (signed zeros or NaN payloads)");
    }

    /** The backend's checkpoint against its own expected one, through the kit's one comparison (a Judge). */
    private void assertClose(String what, RowCheckpoint actual, RowCheckpoint expected) {
        Divergence d = new Judge(tolerance(), 0, "the expected state").checkpoint(-1, what, expected, actual);
        if (d != null) {
            fail(d.message() + " (" + d.details() + ")");
        }
    }
}
