package org.mtporacle.conformance.mutants;

/** One realistic bug injected into an otherwise correct backend ({@link SimpleBackend}). */
public enum Mutation {
    /** None: the correct second implementation. */
    NONE,
    /** RoPE uses position {@code offset + t + 1} (the token's target position) instead of the drafter row index. */
    WRONG_ROPE_POSITION,
    /**
     * The q and k norms are applied after RoPE instead of before (spec §3): the RMS is rotation-invariant, only the
     * gains land on other dimensions, so a narrow gain spread hides it under bf16; the wide-gain fixtures show it.
     */
    QK_NORM_AFTER_ROPE,
    /** Commit keeps {@code accepted} rows instead of {@code accepted + 1}. */
    OFF_BY_ONE_KEPT_COUNT,
    /** Prefill of a restored row skips the bridge row {@code (tokens[0], retained hidden)}. */
    MISSING_BRIDGE_ROW,
    /** The loader adds the norm {@code +1} a second time. */
    NORM_FOLD_APPLIED_TWICE,
    /** The attention output is not multiplied by {@code σ(gate)}. */
    GATE_NOT_APPLIED,
    /** Query head {@code j} reads KV head {@code j mod nKV} instead of {@code j / (nH/nKV)}. */
    WRONG_GQA_HEAD_MAPPING,
    /** filterRows reorders the retained hiddens but not the KV caches. */
    FILTER_REORDERS_HIDDEN_NOT_KV,
    /** Commit keeps the hidden of verify position 0 instead of position {@code accepted}. */
    STALE_HIDDEN_AFTER_COMMIT,
    /** Full acceptance does not build the last proposal's row. */
    EXTRA_ROW_MISSING_ON_FULL_ACCEPTANCE,
    /** Draft position {@code t} samples at step {@code steps[b] + t + 1}. */
    SAMPLER_STEP_OFF_BY_ONE,
    /** capture reports {@code draftOffset = P} instead of {@code P − 1}. */
    CHECKPOINT_OFFSET_OFF_BY_ONE,
    /** append adds the rows before a bad checkpoint, then fails: a half-mutating bad call. */
    BAD_APPEND_HALF_MUTATES,
    /**
     * append forgets to check that the group is closed and adds rows to it. Lockstep chains never close a group, so
     * only the TCK's closed-group check catches it (excluded from {@code MutantsAreCaughtTest}).
     */
    APPEND_AFTER_CLOSE,
    /**
     * The group keeps computing after its model was closed. Lockstep chains never close a model, so only the TCK's
     * closed-model check catches it (excluded from {@code MutantsAreCaughtTest}).
     */
    MODEL_CLOSE_IGNORED,
    /** MoE (spec §12.3 step 4): the chosen experts' probabilities are used as weights without renormalising. */
    MOE_TOPK_NOT_RENORMALISED,
    /** MoE (spec §12.3 step 7): the shared expert is added without its sigmoid {@code shared_expert_gate}. */
    MOE_SHARED_GATE_MISSING,
    /** MoE: the router picks expert {@code e} but expert {@code (e + 1) mod E}'s weights run. */
    MOE_EXPERTS_OFF_BY_ONE,
    /**
     * MoE (spec §12.1, §12.3 step 4): the chosen probabilities are renormalised whatever {@code norm_topk_prob} says
     * (transformers' Qwen3.5-MoE router does so); seen only on a fixture with the flag false ({@code tiny-moe-ties}).
     */
    MOE_NORM_TOPK_FLAG_IGNORED,
    /** MoE (spec §12.3 step 6): slot {@code j}'s expert output is weighted by slot {@code K − 1 − j}'s weight. */
    MOE_EXPERT_WEIGHTS_REVERSED,
    /**
     * MoE (spec §12.3 step 2): the router softmax runs in bf16 (every step rounded to bf16). A bug under the f32
     * profile; under bf16 it is what a bf16 backend computes, so only the f32 check expects it caught.
     */
    MOE_ROUTER_SOFTMAX_BF16;

    /** True for the mutations of the MoE MLP, which the kit checks on a MoE fixture. */
    public boolean isMoe() {
        return name().startsWith("MOE_");
    }

    /** The fixture that shows the mutation: {@code tiny}, {@code tiny-moe}, or {@code tiny-moe-ties} for the flag. */
    public String fixture() {
        return this == MOE_NORM_TOPK_FLAG_IGNORED ? "tiny-moe-ties" : isMoe() ? "tiny-moe" : "tiny";
    }
}
