"""The sparse MoE MLP of a Qwen3.5-MoE / Qwen3-Next MTP layer (spec §12.3), per row, in float64 except the router.

The router follows §12.3 steps 1-4 in float32 by default: the float64 logits rounded to f32, `m = max`, the
differences in f32, each exponential in float64 rounded to f32 once, their sum in f32 in expert order, one f32
division per probability; top-k by descending probability with the lower expert index first on equal f32 values;
the chosen probabilities renormalised by their f32 sum in slot order when `norm_topk_prob`. `router="float64"` keeps
all of it in float64 (what the external transformers reference computed, with its float32 casts removed). Experts,
the shared expert and the mix are float64."""

import numpy as np


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def swiglu(n, gate, up, down):
    """(silu(n·gateᵀ) ⊙ (n·upᵀ)) · downᵀ and its activation, for one row n [H]."""
    g = gate @ n
    act = g * sigmoid(g) * (up @ n)
    return down @ act, act


def softmax_f32(logits):
    """§12.3 step 2: float32 probabilities over all E experts from float64 logits [E]."""
    l32 = np.asarray(logits).astype(np.float32)
    z = np.exp((l32 - l32.max()).astype(np.float64)).astype(np.float32)
    s = np.add.accumulate(z, dtype=np.float32)[-1]      # sequential, in expert order
    return z / s


def softmax_f64(logits):
    z = np.exp(logits - logits.max())
    return z / z.sum()


def top_k(p, k):
    """§12.3 step 3: the k experts of largest p, descending; equal values rank the lower index first."""
    return np.argsort(-p, kind="stable")[:k]


class MoeMlp:
    def __init__(self, cfg, weights, router="float32"):
        if router not in ("float32", "float64"):
            raise ValueError("router precision %r, expected float32 or float64" % (router,))
        self.w = weights
        self.k = cfg.top_k
        self.norm_topk_prob = cfg.norm_topk_prob
        self.router = router

    def forward_row(self, n):
        """One row n [H] -> (moe_out [H], the intermediates under the external reference's names, spec §12.5)."""
        w = self.w
        logits = w.router @ n                                           # 1. [E]
        if self.router == "float32":
            p = softmax_f32(logits)                                     # 2.
            chosen = top_k(p, self.k)                                   # 3.
            top = p[chosen]
            weights = top / np.add.accumulate(top, dtype=np.float32)[-1] if self.norm_topk_prob else top   # 4.
        else:
            p = softmax_f64(logits)
            chosen = top_k(p, self.k)
            top = p[chosen]
            weights = top / top.sum() if self.norm_topk_prob else top
        expert_out = np.zeros((self.k, n.shape[0]))
        routed = np.zeros(n.shape[0])
        for j, e in enumerate(chosen):                                  # 5-6. slots in order
            expert_out[j] = swiglu(n, w.gate[e], w.up[e], w.down[e])[0]
            routed = routed + float(weights[j]) * expert_out[j]
        shared_out, shared_act = swiglu(n, w.shared_gate, w.shared_up, w.shared_down)   # 7.
        gate_logit = w.shared_gate_w @ n                                # [1]
        g = sigmoid(gate_logit)
        out = routed + g[0] * shared_out                                # 8.
        trace = {"router_logits": logits, "router_probs": p.astype(np.float64), "topk_indices": chosen,
                 "topk_weights": np.asarray(weights, dtype=np.float64), "expert_out": expert_out,
                 "routed_out": routed, "shared_act": shared_act, "shared_out": shared_out,
                 "shared_gate_logit": gate_logit, "shared_gate": g, "moe_out": out}
        return out, trace
