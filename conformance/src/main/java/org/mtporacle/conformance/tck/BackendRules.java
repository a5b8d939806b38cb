package org.mtporacle.conformance.tck;

/**
 * Every check of the TCK, once, with the rule it verifies (sections of {@code conformance/spec/mtp-behavior.md}),
 * when it is skipped, and what to inspect when it fails. Prefixes: {@code required_} (MUST), {@code optional_}
 * (needs a capability; skipped with the hook to override), {@code stochastic_} (random chains: a pass is evidence,
 * not proof), {@code untested_} (cannot be checked through the contract; reported as skipped with the reason).
 */
public interface BackendRules {

    /**
     * §5 (all of it, lockstep): random chains of append/filter/prefill/draft/commit/capture and bad calls, on the dense
     * fixture. On failure: the message names the shrunk chain; replay it with {@code mtp replay}.
     */
    void stochastic_s5_randomChainsFollowTheReference();

    /** §2 (lockstep): the same on the 4-bit fixture. Skipped unless {@code supportsQuantizedWeights()}. */
    void optional_s2_quantizedChainsFollowTheReference();

    /**
     * §12 (lockstep): the same on the MoE fixtures ({@code moeFixtures()}: {@code tiny-moe}, and
     * {@code tiny-moe-ties} with {@code norm_topk_prob: false} and an exact router tie on every token), whenever the
     * backend loads MoE models. Skipped, saying so, when it refuses the first of them as INCOMPATIBLE_MODEL or
     * UNAVAILABLE. On failure: as §5; a router set that differs only by an exact tie fails under {@code exact}.
     */
    void optional_s12_moeChainsFollowTheReference();

    /** §5.8 (lockstep): rounds with random, full, no acceptance and depth 0 keep {@code accepted + 1} rows. */
    void required_s5_8_commitKeepsAcceptedPlusOneRows();

    /** §7 (lockstep): seeded stochastic drafts. Skipped unless {@code supportsSeededSampling()}. */
    void optional_s7_seededSamplingMatchesTheReference();

    /** §10.1.7 (lockstep): checkpoints re-appended, reordered, retired, cross-fed from the reference. */
    void required_s10_1_7_restoredRowsSurviveMembershipChanges();

    /** §10.1.10: a speculative loop with the reference target emits exactly the target's stream, both taps. */
    void required_s10_1_10_outputIndependence();

    /** §11.1: every {@code BadCall} in a state where it applies: the expected kind, message names the call, rows
     * unchanged. On failure: the call, the state and the message. */
    void required_s11_1_badInputCatalogue();

    /**
     * §11.1: a group closed in any state (empty, prefilled, round open, with a cold row) refuses append, filterRows,
     * prefill, draft, commit and capture with ILLEGAL_STATE naming the call; close is idempotent. On failure: the
     * call and the state.
     */
    void required_s11_1_closedGroupRefusesEveryCall();

    /**
     * §11.11: a group whose model was closed refuses append, filterRows, prefill, draft, commit and capture with
     * ILLEGAL_STATE naming the call; close still works. On failure: the call and what it did instead.
     */
    void required_s11_11_closedModelRefusesEveryCall();

    /**
     * §11.11 (random timing): two threads prefill one group at once, many times; each call either completes or is
     * refused with ILLEGAL_STATE, and the group ends as some sequential order of the calls that completed leaves it.
     * On failure: the trial, the outcomes and which row differs.
     */
    void stochastic_s11_11_overlappingCallsNeverCorrupt();

    /** §10.1.7: capture → restore → capture is byte-identical. */
    void required_s10_1_7_checkpointRoundTripIsByteIdentical();

    /** §10.1.11: after {@code filterRows(keep)} row {@code i} captures exactly as old row {@code keep[i]}. */
    void required_s10_1_11_filterRowsPermutesRows();

    /** §10.1.1: {@code P − 1} drafter rows after prefill; {@code P} grows by {@code accepted + 1} per round. */
    void required_s10_1_1_alignment();

    /** §10.1.3: each row of a batched prefill equals the row prefilled alone (NMSE within tolerance). */
    void required_s10_1_3_batchedEqualsOneAtATime();

    /** §10.1.5: depth 0 then commit equals depth 1 with 0 accepted. */
    void required_s10_1_5_depthZeroEqualsDepthOneWithZeroAccepted();

    /** §10.1.6: state after commit(0) is independent of depth, rejected proposals, unused taps; equals a prefill. */
    void required_s10_1_6_rollbackIsTraceFree();

    /** §10.1.8: one prefill of {@code prefillSplitLength()} (2050) positions equals splits at 1, a third, 2048 and
     * the last position. */
    void required_s10_1_8_prefillSplitAnywhereEqualsOnePrefill();

    /** §10.1.9: an append whose last checkpoint is misaligned adds nothing and changes nothing. */
    void required_s10_1_9_failedAppendIsAtomic();

    /** §10.1.2: internal to batched caches; untested. */
    void untested_s10_1_2_singletonEquivalence();

    /** §10.1.4: the contract has no single-request source; untested. */
    void untested_s10_1_4_groupedEqualsSingleRequestSource();
}
