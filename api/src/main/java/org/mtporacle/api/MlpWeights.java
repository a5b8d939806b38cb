package org.mtporacle.api;

import java.util.List;

/**
 * The MLP of the MTP block's decoder layer (spec §1.4 step 8): a dense SwiGLU MLP, or a routed mixture of SwiGLU
 * experts with a gated shared expert (spec §12). Linears keep their stored format.
 */
public sealed interface MlpWeights {

    /** Bytes of MLP weights one token reads: the dense MLP, or the router, top-k experts and shared expert. */
    long tokenBytes();

    /**
     * A SwiGLU MLP {@code m = (silu(n·W_gateᵀ) ⊙ (n·W_upᵀ)) · W_downᵀ}: the dense MLP, one routed expert, or the
     * shared expert.
     */
    record Dense(LinearWeight gateProj,      // [I, H]
                 LinearWeight upProj,        // [I, H]
                 LinearWeight downProj)      // [H, I]
            implements MlpWeights {
        public Dense {
            if (gateProj == null || upProj == null || downProj == null) {
                throw MtpException.incompatibleModel("mlp: gate_proj, up_proj and down_proj are all required");
            }
        }

        /** I, the MLP width. */
        public int width() {
            return gateProj.outFeatures();
        }

        @Override
        public long tokenBytes() {
            return gateProj.byteSize() + upProj.byteSize() + downProj.byteSize();
        }
    }

    /**
     * A routed MoE MLP with a shared expert (spec §12): {@code p = softmax(n·W_routerᵀ)} in f32, the {@code topK}
     * most probable experts (lower index first on equal probability), their probabilities renormalised to sum 1 when
     * {@code normTopK}, {@code Σ_j w_j·expert_j(n) + σ(n·W_sharedGateᵀ)·shared(n)}.
     *
     * @param router           {@code [E, H]}, {@code mlp.gate}
     * @param experts          {@code E} SwiGLU experts of width {@code moe_intermediate_size}, by index
     * @param sharedExpert     the shared SwiGLU expert of width {@code shared_expert_intermediate_size}
     * @param sharedExpertGate {@code [1, H]}, one gate logit per token
     * @param topK             {@code num_experts_per_tok}, {@code 1 ≤ K ≤ E}
     * @param normTopK         {@code norm_topk_prob}: renormalise the chosen probabilities
     */
    record Moe(LinearWeight router, List<Dense> experts, Dense sharedExpert, LinearWeight sharedExpertGate, int topK,
               boolean normTopK) implements MlpWeights {
        public Moe {
            experts = List.copyOf(experts);
            int e = experts.size();
            if (e < 1 || router.outFeatures() != e) {
                throw MtpException.incompatibleModel("mlp: router has " + router.outFeatures() + " outputs for "
                        + e + " experts (spec §12.2)");
            }
            if (topK < 1 || topK > e) {
                throw MtpException.incompatibleModel("mlp: num_experts_per_tok = " + topK + " outside [1, " + e
                        + "], the number of experts (spec §12.2)");
            }
            if (sharedExpertGate.outFeatures() != 1 || sharedExpertGate.inFeatures() != router.inFeatures()) {
                throw MtpException.incompatibleModel("mlp: shared_expert_gate has logical shape ["
                        + sharedExpertGate.outFeatures() + ", " + sharedExpertGate.inFeatures() + "], expected [1, "
                        + router.inFeatures() + "] (spec §12.2)");
            }
        }

        /** E, the number of routed experts. */
        public int numExperts() {
            return experts.size();
        }

        /** The routed experts' width (every expert has the same shape; the loader checks it). */
        public int expertWidth() {
            return experts.getFirst().width();
        }

        /** Router, the largest {@code topK} experts' bytes (an upper bound on one token's), shared expert and gate. */
        @Override
        public long tokenBytes() {
            return router.byteSize() + topK * experts.getFirst().tokenBytes() + sharedExpert.tokenBytes()
                    + sharedExpertGate.byteSize();
        }

        /** Bytes of every routed expert together. */
        public long allExpertBytes() {
            long sum = 0;
            for (Dense d : experts) {
                sum += d.tokenBytes();
            }
            return sum;
        }
    }
}
