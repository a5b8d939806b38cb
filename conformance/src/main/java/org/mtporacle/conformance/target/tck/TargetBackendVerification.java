package org.mtporacle.conformance.target.tck;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.ExtendWith;
import org.mtporacle.api.DraftModel;
import org.mtporacle.api.HiddenTap;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.LoadedTarget;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.TargetCheckpoint;
import org.mtporacle.api.TargetModel;
import org.mtporacle.api.TargetOutput;
import org.mtporacle.api.TargetRows;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.Tolerance;
import org.mtporacle.conformance.loop.chain.LoopAction;
import org.mtporacle.conformance.loop.chain.LoopChainGenerator;
import org.mtporacle.conformance.loop.lockstep.LoopCampaign;
import org.mtporacle.conformance.loop.lockstep.LoopLockstep;
import org.mtporacle.conformance.target.chain.TargetAction;
import org.mtporacle.conformance.target.chain.TargetAction.Acceptance;
import org.mtporacle.conformance.target.chain.TargetBadCall;
import org.mtporacle.conformance.target.chain.TargetChainGenerator;
import org.mtporacle.conformance.target.chain.TargetShape;
import org.mtporacle.conformance.target.lockstep.SpeculativeLoopCheck;
import org.mtporacle.conformance.target.lockstep.TargetCampaign;
import org.mtporacle.conformance.target.lockstep.TargetChainOutcome;
import org.mtporacle.conformance.target.lockstep.TargetDivergence;
import org.mtporacle.conformance.target.lockstep.TargetFixture;
import org.mtporacle.conformance.target.lockstep.TargetJudge;
import org.mtporacle.conformance.target.lockstep.TargetLockstep;
import org.mtporacle.conformance.target.lockstep.TargetTolerance;
import org.mtporacle.reference.ReferenceDraftModel;
import org.mtporacle.reference.kernels.KernelMode;
import org.mtporacle.reference.kernels.Kernels;
import org.mtporacle.reference.target.ReferenceTarget;
import org.mtporacle.reference.target.SpeculativeDecoding;
import org.mtporacle.reference.target.SpeculativeDecoding.KvPolicy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

/**
 * The target TCK for backend authors: extend this class, implement {@link #createTarget(TargetModel)}, and every
 * check of the target row contract (spec §13) runs against your target, each named after the rule it enforces (see
 * {@link TargetBackendRules}). Declare your state layout by making your rows implement {@code TargetStateExport};
 * without it, states are compared through capture (the reference's layout by contract). A skip names the hook.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@ExtendWith(org.mtporacle.conformance.tck.RuleFailureLine.class) // first lines say what was expected
public abstract class TargetBackendVerification implements TargetBackendRules {

    /** The target under test, loaded from {@code model}. */
    protected abstract LoadedTarget createTarget(TargetModel model);

    /** How closely the target must follow the reference: {@code f32} unless overridden. */
    protected TargetTolerance tolerance() {
        return TargetTolerance.F32;
    }

    /** The hybrid-target fixture the checks run on ({@code TargetFixtures} preset). */
    protected String fixture() {
        return "tiny-target";
    }

    /** How many random chains {@link #stochastic_s13_3_randomChainsFollowTheReference} runs. */
    protected int lockstepChains() {
        return 40;
    }

    /**
     * The MoE target fixtures the §12 rule runs whenever the backend loads MoE targets: {@code tiny-moe-target} and
     * {@code tiny-moe-next-target} (the same weights as a Qwen3-Next release, {@code norm_topk_prob} false); one
     * that is {@link #fixture()} is not run again.
     */
    protected List<String> moeFixtures() {
        return List.of("tiny-moe-target", "tiny-moe-next-target");
    }

    /**
     * How many random chains the §12 rule runs per MoE fixture: a quarter of {@link #lockstepChains()}, at least 10
     * (at most {@link #lockstepChains()}); a MoE bug shows on the first MoE forward.
     */
    protected int moeChains() {
        return Math.min(lockstepChains(), Math.max(10, lockstepChains() / 4));
    }

    /**
     * The wide-gain twins the §13.3 random-chain rule runs after {@link #fixture()}: {@code tiny-wide-target} (the
     * default fixture's weights with norm gains 1 + N(0, 0.5²), as real checkpoints' spread, not 0.1²) when the fixture
     * is the default {@code tiny-target}, else none. Under {@code bf16} a q/k norm applied after RoPE moves the keys
     * of the narrow-gain fixture by a typical NMSE of 1e-4 (conforming bf16 engines reach 2e-4) but of the wide one by
     * 2e-3 or more, over the chain-level bound (conformance/SPEC.md "A chain's typical NMSE").
     */
    protected List<String> wideGainFixtures() {
        return fixture().equals("tiny-target") ? List.of("tiny-wide-target") : List.of();
    }

    /** How many random chains the §13.3 rule runs per wide-gain twin: as many as per MoE fixture. */
    protected int wideGainChains() {
        return moeChains();
    }

    /** The length of the §13.3 split-prefill check: past two 64-token chunk boundaries by default. */
    protected int splitPrefillLength() {
        return 130;
    }

    /**
     * The backend's speculative loop. The default runs the reference loop ({@link SpeculativeDecoding}) over the
     * backend's target and the given drafter; a backend with a loop of its own returns it here.
     */
    protected SpeculativeLoopCheck.Engine speculativeEngine(LoadedTarget target, DraftModel drafter) {
        return SpeculativeLoopCheck.of(target, drafter);
    }

    /**
     * The backend's drafter loaded from {@code model} (the MTP head beside the target), for §13.5's loop chains; null
     * (the default) skips them.
     */
    protected DraftModel createDrafter(MtpModel model) {
        return null;
    }

    /**
     * How many loop chains per tap {@link #stochastic_s13_5_loopChainsFollowTheReference} runs, split between the two
     * drafter KV policies (keep, then rebuild; at least one each).
     */
    protected int loopChains() {
        return Math.max(5, lockstepChains() / 4);
    }

    /** Where fixtures are cached. */
    protected Path fixtureCache() {
        return Path.of(System.getProperty("java.io.tmpdir"), "mtp-oracle-fixtures");
    }

    private TargetFixture fx;
    private ReferenceTarget oracle;
    private ReferenceDraftModel drafter;
    private LoadedTarget subject;

    @BeforeAll
    final void load() {
        fx = TargetFixture.load(fixture(), fixtureCache());
        oracle = new ReferenceTarget(fx.target(), new Kernels(KernelMode.VECTOR, 1));
        drafter = new ReferenceDraftModel(fx.drafter(), new Kernels(KernelMode.VECTOR, 1));
        subject = createTarget(fx.target());
    }

    @AfterAll
    final void close() {
        for (AutoCloseable c : new AutoCloseable[] {subject, drafter, oracle}) {
            try {
                if (c != null) {
                    c.close();
                }
            } catch (Exception e) {
                // closing is best effort here; each component's own tests cover close
            }
        }
    }

    private int vocab() {
        return fx.target().config().shape().vocabSize();
    }

    private TargetLockstep lockstep() {
        return new TargetLockstep(oracle, subject, tolerance());
    }

    /** Runs a fixed chain in lockstep; fails with the divergence and the chain. */
    private void lockstepChain(String rule, List<TargetAction> chain) {
        TargetChainOutcome out = lockstep().run(0, chain);
        if (!out.passed()) {
            fail(rule + ": expected the reference target's results, " + out.divergence() + "\n  chain: "
                    + chain.stream().map(TargetAction::describe).toList());
        }
    }

    private static TargetAction.Append rows(int n) {
        return new TargetAction.Append(Collections.nCopies(n, -1));
    }

    // ---- §13.3 -------------------------------------------------------------------------------------------------

    @Test
    @DisplayName("§13.3 random chains follow the reference")
    @Override
    public void stochastic_s13_3_randomChainsFollowTheReference() {
        Path traces;
        try {
            traces = Files.createTempDirectory("target-tck-traces");
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
        TargetCampaign.Result r = TargetCampaign.run(new TargetCampaign.Settings(fixture(), "tck", lockstepChains(),
                20261201L, TargetChainGenerator.Limits.defaults(), traces, 300), lockstep());
        if (!r.passed()) {
            TargetCampaign.Failure f = r.failure();
            fail("§13.3 lockstep: chain " + f.chainsRun() + " diverged from the reference target (expected its "
                    + "results): " + f.divergence() + "\n  shrunk to "
                    + f.shrunk().size() + " actions: " + f.shrunk().stream().map(TargetAction::describe).toList()
                    + "\n  trace: " + f.trace());
        }
        for (String w : wideGainFixtures()) {
            TargetFixture wide = TargetFixture.load(w, fixtureCache());
            try (LoadedTarget t = createTarget(wide.target());
                 ReferenceTarget reference = new ReferenceTarget(wide.target(), new Kernels(KernelMode.VECTOR, 1))) {
                TargetCampaign.Result x = TargetCampaign.run(new TargetCampaign.Settings(w, "tck", wideGainChains(),
                        20261201L, TargetChainGenerator.Limits.defaults(), traces, 300),
                        new TargetLockstep(reference, t, tolerance()));
                if (!x.passed()) {
                    TargetCampaign.Failure f = x.failure();
                    fail("§13.3 lockstep on the wide-gain twin " + w + ": chain " + f.chainsRun() + " diverged from "
                            + "the reference target (expected its results): " + f.divergence() + "\n  shrunk to "
                            + f.shrunk().size() + " actions: " + f.shrunk().stream().map(TargetAction::describe)
                            .toList() + "\n  trace: " + f.trace());
                }
            }
        }
    }

    @Test
    @DisplayName("§12 random chains follow the reference on the MoE targets (when the backend loads MoE)")
    @Override
    public void optional_s12_moeTargetChainsFollowTheReference() {
        Assumptions.assumeFalse(moeFixtures().isEmpty(), "not applicable: no MoE target fixtures (moeFixtures() is "
                + "empty)");
        List<String> fixtures = moeFixtures().stream().filter(f -> !f.equals(fixture())).toList();
        Assumptions.assumeFalse(fixtures.isEmpty(), "not applicable: the MoE fixture ran as fixture()");
        List<String> refused = new ArrayList<>();
        for (String f : fixtures) {
            TargetFixture moe = TargetFixture.load(f, fixtureCache());
            LoadedTarget target;
            try {
                target = createTarget(moe.target());
            } catch (MtpException e) {
                if (e.kind() != MtpException.Kind.INCOMPATIBLE_MODEL && e.kind() != MtpException.Kind.UNAVAILABLE) {
                    throw e;
                }
                // one refused layout (a Qwen3-Next release) must not hide the chains that ran on another
                refused.add(f + ": " + e.getMessage());
                continue;
            }
            try (LoadedTarget t = target;
                 ReferenceTarget reference = new ReferenceTarget(moe.target(), new Kernels(KernelMode.VECTOR, 1))) {
                Path traces = Files.createTempDirectory("target-tck-moe-traces");
                TargetCampaign.Result r = TargetCampaign.run(new TargetCampaign.Settings(f, "tck", moeChains(),
                        20261201L, TargetChainGenerator.Limits.defaults(), traces, 300),
                        new TargetLockstep(reference, t, tolerance()));
                if (!r.passed()) {
                    TargetCampaign.Failure x = r.failure();
                    fail("§12 on " + f + ": chain " + x.chainsRun() + " diverged: " + x.divergence()
                            + "\n  shrunk to " + x.shrunk().size() + " actions: "
                            + x.shrunk().stream().map(TargetAction::describe).toList() + "\n  trace: " + x.trace());
                }
            } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }
        Assumptions.assumeTrue(refused.size() < fixtures.size(), () -> "not applicable: the backend does not load MoE "
                + "targets (" + String.join("; ", refused) + ")");
    }

    @Test
    @DisplayName("§13.3 bad calls are refused with their kind and change nothing")
    @Override
    public void required_s13_3_badCallCatalogue() {
        List<String> problems = new ArrayList<>();
        for (TargetBadCall call : TargetBadCall.values()) {
            for (int state = 0; state < 4; state++) {
                TargetRows g = subject.openRows(List.of());
                try (g) {
                    TargetShape shape = prepare(g, state);
                    if (!call.appliesTo(shape)) {
                        continue;
                    }
                    List<String> before = digests(g, shape);
                    int[] processed = g.processedTokens();
                    RuntimeException e = null;
                    try {
                        call.invoke(g, fx.target(), shape, 42);
                    } catch (RuntimeException x) {
                        e = x;
                    }
                    String where = call + " (" + call.rule() + ", state " + state + ")";
                    if (!(e instanceof MtpException m)) {
                        problems.add(where + ": " + (e == null ? "succeeded" : "threw " + e) + ", expected "
                                + call.expectedKind());
                        continue;
                    }
                    if (m.kind() != call.expectedKind()) {
                        problems.add(where + ": " + m.kind() + " (" + m.getMessage() + "), expected "
                                + call.expectedKind());
                    } else if (!Arrays.equals(processed, g.processedTokens())
                            || !digests(g, shape).equals(before)) {
                        problems.add(where + ": refused, but the rows changed");
                    } else if (shape.roundOpen()) {
                        g.commit(new int[shape.rows()]);
                    }
                }
            }
        }
        if (!problems.isEmpty()) {
            fail("§13.3 bad calls: " + problems.size() + " not refused as expected; first: " + problems.getFirst()
                    + (problems.size() > 1 ? "\n  all: " + problems : ""));
        }
    }

    /** States 0–3: empty; two warm rows; a warm and a cold row; two warm rows in a round of width 3. */
    private static TargetShape prepare(TargetRows g, int state) {
        if (state == 0) {
            return TargetShape.empty();
        }
        g.append(Arrays.asList(null, null));
        g.prefill(HostTensor.ofIntRows(new int[][] {{1, 2, 3}, {4, 5, 6}}));
        if (state == 2) {
            g.append(Collections.singletonList(null));
            return new TargetShape(new boolean[] {true, true, false}, false, 0, 0);
        }
        if (state == 3) {
            g.verify(HostTensor.ofIntRows(new int[][] {{7, 8, 9}, {10, 11, 12}}));
            return new TargetShape(new boolean[] {true, true}, true, 3, 0);
        }
        return new TargetShape(new boolean[] {true, true}, false, 0, 0);
    }

    private static List<String> digests(TargetRows g, TargetShape shape) {
        List<String> out = new ArrayList<>();
        for (int r = 0; !shape.roundOpen() && r < shape.rows(); r++) {
            out.add(shape.warm(r) ? g.capture(r).contentDigest() : "cold");
        }
        return out;
    }

    @Test
    @DisplayName("§13.3 commit keeps accepted + 1 tokens of every state")
    @Override
    public void required_s13_3_commitKeepsAcceptedPlusOneTokens() {
        for (long seed = 1; seed <= 3; seed++) {
            lockstepChain("§13.3 commit", List.of(rows(4), new TargetAction.Prefill(5, seed),
                    new TargetAction.Verify(3, seed, 50), new TargetAction.Commit(Acceptance.RANDOM, seed),
                    new TargetAction.Verify(4, seed + 10, 100), new TargetAction.Commit(Acceptance.MATCHED, seed),
                    new TargetAction.Verify(5, seed + 20, 50), new TargetAction.Commit(Acceptance.RANDOM, seed + 1),
                    new TargetAction.Verify(2, seed + 30, 0), new TargetAction.Commit(Acceptance.FULL, seed),
                    new TargetAction.Verify(3, seed + 40, 100), new TargetAction.Commit(Acceptance.NONE, seed)));
        }
    }

    @Test
    @DisplayName("§13.3 a rollback equals never feeding the rejected drafts")
    @Override
    public void required_s13_3_rollbackEqualsNeverFeedingTheRejected() {
        int w = 5;
        int[][] prompts = {{3, 1, 4}, {1, 5, 9, 2}, {6, 5}, {3, 5, 8, 9, 7}, {9, 3}};
        SplittableRandom rnd = new SplittableRandom(13);
        int[][] verify = new int[prompts.length][w];
        for (int[] row : verify) {
            for (int i = 0; i < w; i++) {
                row[i] = rnd.nextInt(vocab());
            }
        }
        int[] accepted = {0, 1, 2, 3, 4};
        TargetJudge judge = new TargetJudge(tolerance());
        try (TargetRows g = subject.openRows(List.of())) {
            List<TargetCheckpoint> starts = new ArrayList<>();
            for (int[] p : prompts) {
                starts.add(prefilled(p));
            }
            g.append(starts);
            g.verify(HostTensor.ofIntRows(verify));
            g.commit(accepted);
            for (int r = 0; r < prompts.length; r++) {
                int[] kept = Arrays.copyOf(verify[r], accepted[r] + 1);
                try (TargetRows one = subject.openRows(List.of(starts.get(r)))) {
                    one.prefill(HostTensor.ofInts(kept, 1, kept.length));
                    TargetDivergence d = judge.state(r, "row " + r + " after commit(" + accepted[r] + ") of a verify"
                            + " of " + w, TargetJudge.RowState.of(one.capture(0)),
                            TargetJudge.RowState.of(g.capture(r)));
                    if (d != null) {
                        fail("§13.3 rollback: expected the state of a prefill of the accepted tokens alone, " + d);
                    }
                }
            }
        }
    }

    /** A checkpoint of the subject after prefilling {@code prompt} alone. */
    private TargetCheckpoint prefilled(int[] prompt) {
        try (TargetRows one = subject.openRows(Collections.singletonList(null))) {
            one.prefill(HostTensor.ofInts(prompt, 1, prompt.length));
            return one.capture(0);
        }
    }

    @Test
    @DisplayName("§13.3 a zero-draft round is a plain decoding step")
    @Override
    public void required_s13_3_zeroDraftRoundEqualsAPlainStep() {
        for (long seed = 1; seed <= 3; seed++) {
            lockstepChain("§13.3 zero-draft round", List.of(rows(2), new TargetAction.Prefill(4, seed),
                    new TargetAction.Verify(3, seed, 100), new TargetAction.Commit(Acceptance.RANDOM, seed),
                    new TargetAction.Verify(0, seed + 1, 0), new TargetAction.Commit(Acceptance.NONE, seed),
                    new TargetAction.Verify(0, seed + 2, 0), new TargetAction.Commit(Acceptance.NONE, seed),
                    new TargetAction.Capture(seed), rows(0), new TargetAction.Append(List.of(0)),
                    new TargetAction.Verify(0, seed + 3, 0), new TargetAction.Commit(Acceptance.NONE, seed)));
        }
    }

    @Test
    @DisplayName("§13.3 a prefill split anywhere equals one prefill")
    @Override
    public void required_s13_3_splitPrefillEqualsOnePrefill() {
        int n = splitPrefillLength();
        int[] tokens = new SplittableRandom(5).ints(n, 0, vocab()).toArray();
        TargetJudge judge = new TargetJudge(tolerance());
        TargetCheckpoint whole;
        HostTensor wholeLogits;
        try (TargetRows one = subject.openRows(Collections.singletonList(null))) {
            wholeLogits = one.prefill(HostTensor.ofInts(tokens, 1, n)).logits();
            whole = one.capture(0);
        }
        for (int split : new int[] {1, 63, 64, 65, n - 1}) {
            if (split <= 0 || split >= n) {
                continue;
            }
            try (TargetRows one = subject.openRows(Collections.singletonList(null))) {
                one.prefill(HostTensor.ofInts(Arrays.copyOf(tokens, split), 1, split));
                TargetOutput o = one.prefill(HostTensor.ofInts(Arrays.copyOfRange(tokens, split, n), 1, n - split));
                String what = "§13.3 prefill of " + n + " split at " + split;
                TargetDivergence d = judge.state(0, what, TargetJudge.RowState.of(whole),
                        TargetJudge.RowState.of(one.capture(0)));
                if (d == null) {
                    d = judge.logits(what, wholeLogits, o.logits());
                }
                if (d != null) {
                    fail(what + ": expected the state and logits of one prefill, " + d);
                }
            }
        }
    }

    @Test
    @DisplayName("§13.3 capture → restore → capture is byte-identical")
    @Override
    public void required_s13_3_captureRestoreRoundTripIsByteIdentical() {
        try (TargetRows g = subject.openRows(Collections.singletonList(null))) {
            g.prefill(HostTensor.ofInts(new int[] {5, 6, 7, 8}, 1, 4));
            g.verify(HostTensor.ofInts(new int[] {9, 10, 11}, 1, 3));
            g.commit(new int[] {1});
            TargetCheckpoint a = g.capture(0);
            try (TargetRows h = subject.openRows(List.of(a))) {
                TargetCheckpoint b = h.capture(0);
                if (!b.contentEquals(a)) {
                    fail("§13.3: expected the restored row captured again to be byte-identical to " + a + ", got " + b);
                }
                HostTensor next = HostTensor.ofInts(new int[] {12, 13}, 1, 2);
                float[] x = g.verify(next).logits().toFloatArray();
                float[] y = h.verify(next).logits().toFloatArray();
                if (!Arrays.equals(x, y)) {
                    fail("§13.3: expected the restored row to continue as the original, bit for bit: the logits of "
                            + "the next verify differ");
                }
            }
        }
    }

    @Test
    @DisplayName("§13.3 filterRows permutes rows")
    @Override
    public void required_s13_3_filterRowsPermutesRows() {
        try (TargetRows g = subject.openRows(List.of(prefilled(new int[] {1, 2}), prefilled(new int[] {3, 4, 5}),
                prefilled(new int[] {6})))) {
            List<TargetCheckpoint> before = List.of(g.capture(0), g.capture(1), g.capture(2));
            int[] keep = {2, 0};
            g.filterRows(keep);
            assertThat(g.rowCount()).as("row count after filterRows %s", Arrays.toString(keep)).isEqualTo(2);
            for (int i = 0; i < keep.length; i++) {
                if (!g.capture(i).contentEquals(before.get(keep[i]))) {
                    fail("§13.3 filterRows " + Arrays.toString(keep) + ": expected new row " + i + " to be old row "
                            + keep[i] + " byte for byte, it differs");
                }
            }
        }
    }

    @Test
    @DisplayName("§13.3 a device failure poisons the group (untested)")
    @Override
    public void untested_s13_3_deviceFailurePoisonsTheGroup() {
        Assumptions.abort("untested: a failure inside a device computation cannot be provoked through the contract");
    }

    // ---- §13.2, §13.1 ------------------------------------------------------------------------------------------

    @Test
    @DisplayName("§13.2 states match the reference in the declared layout")
    @Override
    public void required_s13_2_stateMatchesTheReferenceInTheDeclaredLayout() {
        lockstepChain("§13.2 state layout", List.of(rows(2), new TargetAction.Prefill(6, 3),
                new TargetAction.Verify(2, 4, 50), new TargetAction.Commit(Acceptance.RANDOM, 5),
                new TargetAction.Capture(6)));
    }

    @Test
    @DisplayName("§13.1 logits and both taps match the reference")
    @Override
    public void required_s13_1_logitsAndTapsMatchTheReference() {
        lockstepChain("§13.1 logits and taps", List.of(rows(3), new TargetAction.Prefill(9, 7),
                new TargetAction.Verify(4, 8, 50), new TargetAction.Commit(Acceptance.MATCHED, 9),
                new TargetAction.Prefill(3, 10), new TargetAction.Verify(0, 11, 0)));
    }

    // ---- §13.5 -------------------------------------------------------------------------------------------------

    @Test
    @DisplayName("§13.5 loop chains (target and drafter together) follow the reference")
    @Override
    public void stochastic_s13_5_loopChainsFollowTheReference() {
        DraftModel theirs = createDrafter(fx.drafter());
        if (theirs == null) {
            Assumptions.abort("not applicable: no drafter of the backend's own (override createDrafter)");
        }
        try (theirs) {
            for (HiddenTap tap : HiddenTap.values()) {
                for (KvPolicy policy : KvPolicy.values()) {
                    Path traces;
                    try {
                        traces = Files.createTempDirectory("loop-tck-traces");
                    } catch (java.io.IOException e) {
                        throw new java.io.UncheckedIOException(e);
                    }
                    LoopLockstep loop = new LoopLockstep(oracle, drafter, subject, theirs, loopTolerance(), tap,
                            policy);
                    int chains = policy == KvPolicy.KEEP ? (loopChains() + 1) / 2 : loopChains() / 2;
                    LoopCampaign.Result r = LoopCampaign.run(new LoopCampaign.Settings(fixture(), "tck",
                            Math.max(1, chains), 20261202L + tap.ordinal() + 2L * policy.ordinal(),
                            LoopChainGenerator.Limits.defaults(), traces, 300), loop);
                    if (!r.passed()) {
                        LoopCampaign.Failure f = r.failure();
                        fail("§13.5 loop chains (tap " + tap.label() + ", drafter KV " + policy.label() + "): chain "
                                + f.chainsRun() + " diverged: " + f.divergence() + "\n  shrunk to "
                                + f.shrunk().size() + " actions: " + f.shrunk().stream().map(LoopAction::describe)
                                .toList() + "\n  trace: " + f.trace());
                    }
                }
            }
        }
    }

    /** The drafter profile the target's was read from ({@link TargetTolerance#of}): the named one when built in. */
    private Tolerance loopTolerance() {
        TargetTolerance t = tolerance();
        try {
            return Tolerance.named(t.name());
        } catch (MtpException notBuiltIn) {
            return new Tolerance(t.name(), t.tokenGap(), t.stateNmse(), 0);
        }
    }

    // ---- §13.4 -------------------------------------------------------------------------------------------------

    @Test
    @DisplayName("§13.4 speculative == plain on the backend's target")
    @Override
    public void required_s13_4_speculativeEqualsPlain() {
        SpeculativeLoopCheck.Engine engine = speculativeEngine(subject, drafter);
        for (HiddenTap tap : HiddenTap.values()) {
            for (KvPolicy policy : KvPolicy.values()) {
                long seed = 31 + tap.ordinal() * 2L + policy.ordinal();
                TargetDivergence d = SpeculativeLoopCheck.plainOnly(engine, subject,
                        SpeculativeLoopCheck.requests(seed, vocab()), SpeculativeLoopCheck.options(seed, tap, policy));
                if (d != null) {
                    fail("§13.4: expected the tokens of plain decoding, " + d);
                }
            }
        }
    }

    @Test
    @DisplayName("§13.4 the loop follows the reference's under the declared policy")
    @Override
    public void required_s13_4_loopFollowsTheReferenceUnderTheDeclaredPolicy() {
        SpeculativeLoopCheck.Engine engine = speculativeEngine(subject, drafter);
        SpeculativeLoopCheck.Engine reference = SpeculativeLoopCheck.of(oracle, drafter);
        for (HiddenTap tap : HiddenTap.values()) {
            for (KvPolicy policy : KvPolicy.values()) {
                long seed = 41 + tap.ordinal() * 2L + policy.ordinal();
                TargetDivergence d = SpeculativeLoopCheck.check(engine, subject, reference,
                        SpeculativeLoopCheck.requests(seed, vocab()), SpeculativeLoopCheck.options(seed, tap, policy),
                        tolerance());
                if (d != null) {
                    fail("§13.4: expected the reference loop's results under the declared policy, " + d);
                }
            }
        }
    }
}
