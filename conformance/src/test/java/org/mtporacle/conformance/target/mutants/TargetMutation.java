package org.mtporacle.conformance.target.mutants;

/**
 * The real bugs of speculative rollback of a hybrid target (research/gdn-anchors.md §2), each injected into the
 * otherwise correct {@link SimpleTarget}. {@link #NONE} is the correct implementation.
 */
public enum TargetMutation {
    /** Correct. */
    NONE,
    /** Commit selects the accepted recurrent state but leaves the conv window after the whole verify
     * (llama.cpp#28123, vllm#40738). */
    CONV_NOT_ROLLED_BACK,
    /** Commit rolls the conv window back but keeps the recurrent state after the whole verify (sglang#26351). */
    STATE_NOT_ROLLED_BACK,
    /** A verify of width 1 does not refresh the per-position state slots, so its commit reads the previous verify's
     * slot 0: a zero-draft step on a stale state (vllm#52942/#56531). */
    ZERO_DRAFT_STALE_SLOT,
    /** The state is stored {@code [Hv, Dv, Dk]} but declared (and captured as) {@code [Hv, Dk, Dv]}. */
    TRANSPOSED_STATE,
    /** Value head {@code j} reads key head {@code j % Hk} (tiled) instead of {@code j / r} (grouped), in the
     * recurrent form only (the chunked prefill is right). */
    V_HEADS_TILED,
    /** Replay rollback batches the rows' kept tokens padded to the longest; the pad steps are masked out of the
     * attention but still decay and shift the GDN state of the shorter rows. */
    PADS_DECAY_STATE,
    /** The chunked prefill's chunks overlap by one token at each 64-token boundary (the boundary token is fed twice). */
    CHUNK_BOUNDARY_OFF_BY_ONE,
    /** The pre-norm and post-norm taps are swapped. */
    WRONG_TAP,
    /**
     * The full-attention layers apply the q/k RMSNorm after RoPE instead of before (spec §1.5): the RMS is
     * rotation-invariant, so only the gains landing on rotated dimensions differ, which a narrow gain spread hides.
     */
    QK_NORM_AFTER_ROPE,
    /** Commit takes the state after {@code accepted + 2} tokens (snapshot index {@code accepted + 1}, clamped to the
     * last) instead of after {@code accepted + 1} (index {@code accepted}). */
    SNAPSHOT_OFF_BY_ONE,
    /** A loop-level bug: the engine declares the drafter KV policy {@code keep} and runs {@code rebuild} (or the
     * reverse); the target rows are correct. */
    KEEP_REBUILD_MIXED_UP,
    /**
     * MoE (spec §12.1, §12.3 step 4): the chosen experts' probabilities are renormalised whatever
     * {@code norm_topk_prob} says (an engine written for Qwen3.5-MoE, which always renormalises, serving a Qwen3-Next
     * release that says false); shows only on a fixture with the flag false, {@code tiny-moe-next-target}.
     */
    MOE_NORM_TOPK_FLAG_IGNORED,
    /** MoE (spec §12.3 step 4): the chosen probabilities are never renormalised, although the model says so. */
    MOE_TOPK_NOT_RENORMALISED,
    /** MoE (spec §12.3 step 7): the shared expert is added without its sigmoid {@code shared_expert_gate}. */
    MOE_SHARED_GATE_MISSING,
    /** MoE (spec §12.3 step 6): slot {@code j}'s expert output is weighted by slot {@code K − 1 − j}'s weight. */
    MOE_EXPERT_WEIGHTS_REVERSED;

    /**
     * The fixture the kit checks the mutant on under {@code bf16}: {@code tiny-target}'s wide-gain twin
     * {@code tiny-wide-target} (norm gains {@code 1 + N(0, 0.5²)}) for the dense mutants but the chunk-boundary one
     * (which the narrow fixture shows six times sooner), else {@link #fixture()}.
     */
    public String bf16Fixture() {
        if (this == CHUNK_BOUNDARY_OFF_BY_ONE) {
            return "tiny-target"; // caught there at chain 7 under bf16, on the twin at chain 42 (conformance/SPEC.md)
        }
        return fixture().equals("tiny-target") ? "tiny-wide-target" : fixture();
    }

    /** The target fixture ({@code TargetFixtures} preset) the kit checks the mutant on. */
    public String fixture() {
        return this == MOE_NORM_TOPK_FLAG_IGNORED ? "tiny-moe-next-target"
                : name().startsWith("MOE_") ? "tiny-moe-target" : "tiny-target";
    }

    /** The rollback design the mutant lives in. */
    public SimpleTarget.Rollback rollback() {
        return this == PADS_DECAY_STATE ? SimpleTarget.Rollback.REPLAY : SimpleTarget.Rollback.SNAPSHOTS;
    }
}
