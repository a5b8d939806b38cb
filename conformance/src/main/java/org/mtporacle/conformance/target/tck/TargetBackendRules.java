package org.mtporacle.conformance.target.tck;

/**
 * Every check of the target TCK, once, with the rule it verifies (sections of {@code conformance/spec/mtp-behavior.md}
 * §13), when it is skipped, and what to inspect when it fails. Prefixes as in the drafter's {@code BackendRules}:
 * {@code required_} (MUST), {@code optional_} (needs a capability), {@code stochastic_} (random chains: a pass is
 * evidence, not proof), {@code untested_} (cannot be checked through the contract; reported as skipped).
 *
 * <p>Lockstep checks drive the backend's target rows and the reference's through the same actions and demand the same
 * greedy tokens (tie-aware), logits and taps, every row's state after every change (in the layout the backend
 * declares through {@code TargetStateExport}, else through capture) and the same errors; the reference satisfies
 * each invariant exactly, so passing transfers it. Self checks compare the backend with itself.
 */
public interface TargetBackendRules {

    /**
     * §13.3 (all of it, lockstep): random chains of append, prefill (some past a 64-token chunk), verify of width 1–7
     * with greedy-true or random drafts, commit with none/full/random/matched acceptance, filterRows, capture and bad
     * calls; then, on the default fixture, a quarter as many on its wide-gain twin {@code tiny-wide-target} (norm gains
     * spread as real checkpoints', where bf16 shows a q/k norm applied after RoPE). On failure: the shrunk chain and
     * its trace file (format {@code mtp-oracle-target-chain} v1).
     */
    void stochastic_s13_3_randomChainsFollowTheReference();

    /**
     * §13.3: every {@code TargetBadCall} in every state where it applies is refused with its kind and leaves the rows
     * unchanged (a round stays open and commits). On failure: the call, the state and what happened instead.
     */
    void required_s13_3_badCallCatalogue();

    /**
     * §13.3 (lockstep): rounds whose rows accept different counts (0 … W−1) keep exactly {@code accepted + 1} tokens:
     * conv windows, recurrent states and KV alike. On failure: which tensor of which row left the reference, and P.
     */
    void required_s13_3_commitKeepsAcceptedPlusOneTokens();

    /**
     * §13.3 (self): verify then commit(a) leaves every row as a prefill of the {@code a + 1} kept tokens would: the
     * rejected drafts leave no trace. On failure: the row, its accepted count and the tensor that differs.
     */
    void required_s13_3_rollbackEqualsNeverFeedingTheRejected();

    /**
     * §13.3 (lockstep): zero-draft rounds ({@code verify([t])} then {@code commit(0)}) after rounds with drafts are
     * plain decoding steps. On failure: look for per-position state slots a width-1 verify does not refresh.
     */
    void required_s13_3_zeroDraftRoundEqualsAPlainStep();

    /**
     * §13.3 (self): one prefill of {@link TargetBackendVerification#splitPrefillLength()} tokens equals the same
     * tokens split at 1, 63, 64, 65 and the last position, within tolerance (a chunked form's boundaries). On failure:
     * the split and the tensor.
     */
    void required_s13_3_splitPrefillEqualsOnePrefill();

    /** §13.3 (self): capture → restore → capture is byte-identical, and the restored row continues alike. */
    void required_s13_3_captureRestoreRoundTripIsByteIdentical();

    /** §13.3 (self): after {@code filterRows(keep)} row {@code i} captures exactly as old row {@code keep[i]}. */
    void required_s13_3_filterRowsPermutesRows();

    /**
     * §13.2 (lockstep): after a prefill and a commit, every row's conv windows and recurrent states equal the
     * reference's once read in the layout the backend declares (orientation {@code [Hv,Dk,Dv]} or {@code [Hv,Dv,Dk]},
     * K−1 or K conv columns: the last K−1 compared). On failure: a transposed or mis-declared state.
     */
    void required_s13_2_stateMatchesTheReferenceInTheDeclaredLayout();

    /**
     * §13.1 (lockstep): prefill and verify logits (greedy tokens tie-aware, NMSE per row) and both hidden taps, pre-
     * and post-norm, match the reference's. On failure: the call, row, position or tap.
     */
    void required_s13_1_logitsAndTapsMatchTheReference();

    /**
     * §13.4 (self): the backend's speculative loop (its {@code speculativeEngine}) emits plain decoding's tokens on its
     * own target, both taps, both drafter KV policies, zero-draft rounds and restores included.
     */
    void required_s13_4_speculativeEqualsPlain();

    /**
     * §13.4 (lockstep): under the declared tap and drafter KV policy the loop emits the reference loop's tokens,
     * accepts the same counts, and leaves every request's target and drafter state equal after every round. On
     * failure: keep and rebuild mixed up, or the wrong tap fed to the drafter.
     */
    void required_s13_4_loopFollowsTheReferenceUnderTheDeclaredPolicy();

    /**
     * §13.5 (loop chains, lockstep): the backend's target and drafter together, as an engine runs them (prefills
     * feeding the drafter its own target's tap, rounds of depth 0–4, verifies, both commits with rows accepting
     * different counts, joins, leaves, restores of both states, bad calls to either group refused with the
     * catalogue's kind and nothing changed), match the reference's after every action, on both taps and under both
     * drafter KV policies (keep; rebuild: the accepted drafts re-run with the verify's taps). Skipped without {@link
     * TargetBackendVerification#createDrafter}. On failure: the group (target or drafter), the tap and policy, the
     * shrunk chain and its trace (format {@code mtp-oracle-loop-chain} v2); a failure here that target and drafter
     * chains do not show is in how the two groups meet.
     */
    void stochastic_s13_5_loopChainsFollowTheReference();

    /**
     * §12 with §13.3 (lockstep): random chains on the MoE target fixtures
     * ({@link TargetBackendVerification#moeFixtures()}: {@code tiny-moe-target}, and {@code tiny-moe-next-target}, its
     * weights as a Qwen3-Next release with {@code norm_topk_prob} false) whenever the backend loads MoE targets: the
     * fixtures it refuses ({@code INCOMPATIBLE_MODEL} or {@code UNAVAILABLE}, e.g. an engine that wires Qwen3.5's
     * layout only) are left out, and the rule is skipped only when it refuses them all. On failure: the
     * fixture, the shrunk chain and its trace; look at the router's renormalisation, the shared expert's sigmoid gate
     * and which slot's weight scales which expert.
     */
    void optional_s12_moeTargetChainsFollowTheReference();

    /** §13.3: a device failure mid-call poisons the group; it cannot be provoked through the contract; untested. */
    void untested_s13_3_deviceFailurePoisonsTheGroup();
}
