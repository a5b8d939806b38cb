package org.mtporacle.conformance.lockstep;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.mtporacle.api.DraftModel;
import org.mtporacle.api.DraftRows;
import org.mtporacle.api.DraftSampling;
import org.mtporacle.api.HiddenTap;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.RowCheckpoint;
import org.mtporacle.api.TargetModel;
import org.mtporacle.api.TargetOutput;
import org.mtporacle.api.TargetRows;
import org.mtporacle.api.Tolerance;
import org.mtporacle.conformance.Campaign;
import org.mtporacle.conformance.FixtureRecipe;
import org.mtporacle.conformance.chain.Action;
import org.mtporacle.conformance.chain.ChainData;
import org.mtporacle.conformance.chain.ChainGenerator;
import org.mtporacle.conformance.chain.GroupShape;
import org.mtporacle.conformance.chain.ContextSource;
import org.mtporacle.conformance.mutants.Mutation;
import org.mtporacle.conformance.mutants.SimpleBackend;
import org.mtporacle.conformance.trace.ChainTrace;
import org.mtporacle.conformance.trace.TraceFiles;
import org.mtporacle.reference.ReferenceBackend;
import org.mtporacle.reference.ReferenceDraftModel;
import org.mtporacle.reference.kernels.KernelMode;
import org.mtporacle.reference.target.ReferenceTarget;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Lockstep on real taps (spec §13.4): with {@link TargetTaps} the contexts both sides receive are the fixture's
 * reference target's taps of the chain's own tokens, and everything the kit does on synthetic contexts still holds.
 */
class TargetContextsTest {
    private static final Path CACHE = Path.of("target", "fixture-cache");
    private static MtpModel drafter;
    private static TargetModel targetModel;
    private static ReferenceTarget target;
    private static MtpModel moeDrafter;
    private static ReferenceTarget moeTarget;

    @BeforeAll
    static void load() {
        FixtureRecipe fx = FixtureRecipe.named("tiny-target");
        drafter = fx.load(CACHE);
        targetModel = fx.loadTarget(CACHE);
        target = TargetTaps.reference(targetModel, KernelMode.VECTOR, 2);
        FixtureRecipe moe = FixtureRecipe.named("tiny-moe-target");
        moeDrafter = moe.load(CACHE);
        moeTarget = TargetTaps.reference(moe.loadTarget(CACHE), KernelMode.VECTOR, 2);
    }

    @AfterAll
    static void close() {
        target.close();
        moeTarget.close();
    }

    private static Campaign.Settings settings(int chains, Path traces) {
        return new Campaign.Settings("tiny-target", "subject", Map.of(), Tolerance.F32, chains, 11, 0, 1,
                ChainGenerator.Limits.defaults(), traces, 400);
    }

    @ParameterizedTest(name = "tap {0}")
    @EnumSource(HiddenTap.class)
    void theReferenceFollowsItselfExactlyOnTargetContexts(HiddenTap tap) {
        try (ReferenceDraftModel oracle = ReferenceBackend.load(drafter, KernelMode.VECTOR, 1);
             ReferenceDraftModel subject = ReferenceBackend.load(drafter, KernelMode.VECTOR, 2)) {
            Campaign.Settings s = new Campaign.Settings("tiny-target", "reference", Map.of(), Tolerance.EXACT, 40, 42,
                    0, 1, ChainGenerator.Limits.defaults(), null, 200);
            Campaign.Result r = Campaign.run(s, oracle, subject, new TargetTaps(target, tap), (d, t, p) -> { });
            assertThat(r.failures()).as("failures: %s", r.failures()).isEmpty();
            assertThat(r.stats().comparedTokens()).isGreaterThan(150);
            assertThat(r.stats().comparedCheckpoints()).isGreaterThan(150);
            assertThat(r.stats().badCalls()).isGreaterThan(10);
        }
    }

    @ParameterizedTest(name = "MoE {0}")
    @org.junit.jupiter.params.provider.ValueSource(booleans = {false, true})
    void theCorrectSecondImplementationPassesOnTargetContexts(boolean onMoe) {
        MtpModel model = onMoe ? moeDrafter : drafter;
        try (ReferenceDraftModel oracle = ReferenceBackend.load(model, KernelMode.VECTOR, 1);
             SimpleBackend simple = new SimpleBackend(model, Mutation.NONE)) {
            Campaign.Result r = Campaign.run(settings(50, null), oracle, simple,
                    new TargetTaps(onMoe ? moeTarget : target, HiddenTap.POST_NORM), (d, t, p) -> { });
            assertThat(r.failures()).as("%s", r.failures()).isEmpty();
        }
    }

    /**
     * The contexts the backend received are the target's own taps: an independent target group (loaded again, driven
     * through the public row contract) fed the tokens the backend saw gives the same tensors, bit for bit.
     */
    @ParameterizedTest(name = "tap {0}")
    @EnumSource(HiddenTap.class)
    void theBackendReceivesTheTargetsTapsOfTheTokensItSees(HiddenTap tap) {
        List<Action> chain = List.of(new Action.Append(List.of(-1, -1), false), new Action.Prefill(5, 1),
                new Action.Draft(3, 2, false), new Action.Commit(Action.Acceptance.RANDOM, 3),
                new Action.Capture(4), new Action.Prefill(2, 5), new Action.Append(List.of(0), false),
                new Action.Filter(6, true), new Action.Draft(0, 7, false),
                new Action.Commit(Action.Acceptance.NONE, 8), new Action.Prefill(3, 9),
                new Action.Draft(4, 10, false), new Action.Commit(Action.Acceptance.FULL, 11));
        List<Object[]> calls = new ArrayList<>();
        try (ReferenceDraftModel oracle = ReferenceBackend.load(drafter, KernelMode.VECTOR, 1);
             DraftModel recording = new Recording(ReferenceBackend.load(drafter, KernelMode.VECTOR, 1), calls)) {
            ChainOutcome out = new Lockstep(oracle, recording, Tolerance.EXACT, new TargetTaps(target, tap))
                    .run(0, chain);
            assertThat(out.passed()).as("%s", out.divergence()).isTrue();
        }
        assertThat(calls).extracting(c -> c[0]).containsExactly("append", "prefill", "draft", "commit", "prefill",
                "append", "filterRows", "draft", "commit", "prefill", "draft", "commit");
        int capturedRow = ChainData.captureRow(4, new GroupShape(new boolean[] {true, true}, false, 0, 0));
        try (ReferenceTarget independent = new ReferenceTarget(targetModel,
                new org.mtporacle.reference.kernels.Kernels(KernelMode.VECTOR, 1))) {
            TargetRows rows = independent.openRows(List.of());
            List<org.mtporacle.api.TargetCheckpoint> captured = new ArrayList<>();
            int[] pending = null;
            int[][] drafts = null;
            TargetOutput round = null;
            int checked = 0;
            for (Object[] c : calls) {
                switch ((String) c[0]) {
                    case "append" -> {
                        List<org.mtporacle.api.TargetCheckpoint> cps = new ArrayList<>();
                        for (RowCheckpoint cp : castList(c[1])) {
                            cps.add(cp == null ? null : captured.getFirst());
                        }
                        rows.append(cps);
                    }
                    case "filterRows" -> rows.filterRows((int[]) c[1]);
                    case "prefill" -> {
                        TargetOutput o = rows.prefill((HostTensor) c[1]);
                        assertThat(((HostTensor) c[2]).contentEquals(o.taps(tap))).as("prefill %d", checked).isTrue();
                        assertThat(((HostTensor) c[2]).contentEquals(o.taps(other(tap)))).isFalse();
                        checked++;
                    }
                    case "draft" -> {
                        pending = (int[]) c[1];
                        drafts = (int[][]) c[2];
                        int[][] tokens = new int[pending.length][];
                        for (int r = 0; r < pending.length; r++) {
                            tokens[r] = new int[drafts[r].length + 1];
                            tokens[r][0] = pending[r];
                            System.arraycopy(drafts[r], 0, tokens[r], 1, drafts[r].length);
                        }
                        round = rows.verify(HostTensor.ofIntRows(tokens));
                    }
                    case "commit" -> {
                        assertThat(((HostTensor) c[2]).contentEquals(round.taps(tap))).as("commit %d", checked)
                                .isTrue();
                        rows.commit((int[]) c[1]);
                        checked++;
                        if (captured.isEmpty()) { // the chain's Capture follows its first commit
                            captured.add(rows.capture(capturedRow));
                        }
                    }
                    default -> throw new IllegalStateException((String) c[0]);
                }
            }
            rows.close();
            assertThat(checked).isEqualTo(6);
        }
    }

    /**
     * Every drafter mutant the kit catches on synthetic contexts it catches on target contexts (tiny-moe-target for
     * MoE); ignoring {@code norm_topk_prob} shows only on a fixture with the flag false, which no target fixture has.
     */
    @ParameterizedTest(name = "{0}")
    @EnumSource(value = Mutation.class, names = {"NONE", "APPEND_AFTER_CLOSE", "MODEL_CLOSE_IGNORED",
            "MOE_NORM_TOPK_FLAG_IGNORED"}, mode = EnumSource.Mode.EXCLUDE)
    void aDrafterMutantIsStillCaughtAndItsTraceReplaysOnTheSameTaps(Mutation mutation) throws Exception {
        Path traces = Files.createTempDirectory("target-context-traces");
        MtpModel model = mutation.isMoe() ? moeDrafter : drafter;
        ReferenceTarget t = mutation.isMoe() ? moeTarget : target;
        try (ReferenceDraftModel oracle = ReferenceBackend.load(model, KernelMode.VECTOR, 1);
             SimpleBackend mutant = new SimpleBackend(model, mutation)) {
            Campaign.Settings s = new Campaign.Settings(mutation.isMoe() ? "tiny-moe-target" : "tiny-target",
                    "mutant", Map.of(), Tolerance.F32, 300, 11, 0, 1, ChainGenerator.Limits.defaults(), traces, 400);
            Lockstep lockstep = new Lockstep(oracle, mutant, s.tolerance(), new TargetTaps(t, HiddenTap.PRE_NORM));
            ChainGenerator gen = new ChainGenerator(s.limits());
            Campaign.Failure failure = null;
            for (long i = 0; i < s.chains() && failure == null; i++) {
                long seed = Campaign.chainSeed(s.seed(), i);
                ChainOutcome out = lockstep.run(seed, gen.generate(seed));
                if (!out.passed()) {
                    failure = Campaign.shrinkAndRecord(s, lockstep, oracle, out);
                }
            }
            assertThat(failure).as("%s must be caught on target contexts", mutation).isNotNull();
            assertThat(failure.shrunk().size()).isLessThanOrEqualTo(10);

            ChainTrace trace = TraceFiles.read(failure.trace());
            assertThat(trace.format()).isEqualTo(ChainTrace.FORMAT);
            assertThat(trace.contexts()).isEqualTo(new ContextSource.Target(HiddenTap.PRE_NORM));
            assertThat(Files.readString(failure.trace())).contains("\"contexts\" : \"target\"")
                    .contains("\"tap\" : \"pre\"");
            // a replay builds its own target from the trace's fixture and tap, as mtp replay does
            try (ReferenceTarget again = TargetTaps.reference(FixtureRecipe.named(trace.fixture()).loadTarget(CACHE),
                    KernelMode.VECTOR, 1)) {
                ChainOutcome replay = new Lockstep(oracle, mutant, trace.tolerance(),
                        new TargetTaps(again, trace.contexts().tap())).run(trace.seed(), trace.actions());
                assertThat(replay.passed()).as("the trace replays to a failure").isFalse();
                assertThat(replay.divergence().category()).isEqualTo(failure.divergence().category());
                assertThat(replay.divergence().message()).isEqualTo(failure.divergence().message());
            }
        }
    }

    @Test
    void aTargetThatDoesNotFitTheDrafterIsRefusedNamingBoth() {
        MtpModel tiny = FixtureRecipe.named("small").load(CACHE);
        try (ReferenceDraftModel oracle = ReferenceBackend.load(tiny, KernelMode.VECTOR, 1)) {
            org.assertj.core.api.Assertions.assertThatThrownBy(() -> new Lockstep(oracle, oracle, Tolerance.EXACT,
                    new TargetTaps(target, HiddenTap.POST_NORM))).hasMessageContaining("hidden 64")
                    .hasMessageContaining("hidden 256");
        }
    }

    private static HiddenTap other(HiddenTap t) {
        return t == HiddenTap.PRE_NORM ? HiddenTap.POST_NORM : HiddenTap.PRE_NORM;
    }

    @SuppressWarnings("unchecked")
    private static List<RowCheckpoint> castList(Object o) {
        return (List<RowCheckpoint>) o;
    }

    /** A backend that records every call's arguments (and a draft's result) and delegates to the reference. */
    private record Recording(DraftModel inner, List<Object[]> calls) implements DraftModel {
        @Override
        public MtpModel model() {
            return inner.model();
        }

        @Override
        public String numerics() {
            return "recording " + inner.numerics();
        }

        @Override
        public DraftRows openRows(List<RowCheckpoint> checkpoints) {
            DraftRows rows = inner.openRows(checkpoints);
            return new DraftRows() {
                @Override
                public int rowCount() {
                    return rows.rowCount();
                }

                @Override
                public void append(List<RowCheckpoint> cps) {
                    rows.append(cps);
                    calls.add(new Object[] {"append", new ArrayList<>(cps)});
                }

                @Override
                public void filterRows(int[] keep) {
                    rows.filterRows(keep);
                    calls.add(new Object[] {"filterRows", keep.clone()});
                }

                @Override
                public void prefill(HostTensor tokens, HostTensor context) {
                    rows.prefill(tokens, context);
                    calls.add(new Object[] {"prefill", tokens, context});
                }

                @Override
                public int[][] draft(int[] pending, int depth, long[] steps, DraftSampling sampling) {
                    int[][] out = rows.draft(pending, depth, steps, sampling);
                    calls.add(new Object[] {"draft", pending.clone(), out});
                    return out;
                }

                @Override
                public void commit(int[] accepted, HostTensor context) {
                    rows.commit(accepted, context);
                    calls.add(new Object[] {"commit", accepted.clone(), context});
                }

                @Override
                public RowCheckpoint capture(int row) {
                    return rows.capture(row); // the harness captures after every change: not recorded
                }

                @Override
                public boolean isClosed() {
                    return rows.isClosed();
                }

                @Override
                public void close() {
                    rows.close();
                }
            };
        }

        @Override
        public void close() {
            inner.close();
        }
    }
}
