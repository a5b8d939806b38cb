"""The MTP block (spec §1.4, §1.5, §1.6, §1.7, and §12 for a MoE layer) in float64, one row at a time over that
row's own unpadded KV."""

import numpy as np

from .moe import MoeMlp

def rms_norm(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


class RowCache:
    """One row's KV: keys and values [nKV, T, D] float64 (capacity grows; `length` is what is valid)."""

    def __init__(self, nkv, d, keys=None, values=None):
        if keys is None:
            self.k = np.zeros((nkv, 16, d))
            self.v = np.zeros((nkv, 16, d))
            self.length = 0
        else:
            self.k = np.array(keys, dtype=np.float64)
            self.v = np.array(values, dtype=np.float64)
            self.length = self.k.shape[1]

    def append(self, k, v):
        """k, v [nKV, S, D]; returns the visible keys and values [nKV, length, D]."""
        s = k.shape[1]
        need = self.length + s
        if need > self.k.shape[1]:
            cap = max(need, 2 * self.k.shape[1])
            grow = ((0, 0), (0, cap - self.k.shape[1]), (0, 0))
            self.k = np.pad(self.k, grow)
            self.v = np.pad(self.v, grow)
        self.k[:, self.length:need] = k
        self.v[:, self.length:need] = v
        self.length = need
        return self.k[:, :need], self.v[:, :need]

    def keys(self):
        return self.k[:, :self.length]

    def values(self):
        return self.v[:, :self.length]


class Block:
    def __init__(self, cfg, weights, router="float32"):
        self.c = cfg
        self.w = weights.t
        self.embed_rows = weights.embed
        self.head = weights.head
        r = cfg.rotary
        self.inv_freq = cfg.theta ** (-2.0 * np.arange(r // 2) / r) if r else np.zeros(0)
        self.moe = MoeMlp(cfg, weights.moe, router) if weights.moe is not None else None
        # when a list: every MoE forward row appends (KV position, its §12.5 intermediates, mlp_in and h2)
        self.moe_trace = None
        self.last_experts = []   # the last forward's (KV position, chosen experts in slot order), MoE only

    def rope(self, x, positions):
        """§1.5 step 5: rotate_half pairs (f, f + R/2) of the first R dims; x [heads, S, D]."""
        r = self.c.rotary
        if r == 0:
            return x
        ang = positions[:, None] * self.inv_freq[None, :]          # [S, R/2]
        cos, sin = np.cos(ang), np.sin(ang)
        a, b = x[..., :r // 2], x[..., r // 2:r]
        out = x.copy()
        out[..., :r // 2] = a * cos - b * sin
        out[..., r // 2:r] = a * sin + b * cos
        return out

    def forward(self, cache, ids, hin):
        """§1.4 for one row: ids [S] token ids, hin [S, H]; appends S positions to `cache`; returns Y [S, H]."""
        c, w = self.c, self.w
        s = len(ids)
        nh, nkv, d = c.heads, c.kv_heads, c.head_dim
        # 1-3. normalise both inputs, embedding half first, and mix them down to H
        e = rms_norm(self.embed_rows[ids], w["pre_fc_norm_embedding.weight"], c.eps)
        g = rms_norm(hin, w["pre_fc_norm_hidden.weight"], c.eps)
        x = np.concatenate([e, g], axis=-1) @ w["fc"].T               # [S, H], the residual
        a = rms_norm(x, w["layers.0.input_layernorm.weight"], c.eps)
        # §1.5.1-3: query and gate interleaved per head; per-head q/k norms before RoPE; v is not normalised
        qg = (a @ w["layers.0.self_attn.q_proj"].T).reshape(s, nh, 2 * d)
        q, gate = qg[..., :d], qg[..., d:].reshape(s, nh * d)
        k = (a @ w["layers.0.self_attn.k_proj"].T).reshape(s, nkv, d)
        v = (a @ w["layers.0.self_attn.v_proj"].T).reshape(s, nkv, d)
        q = rms_norm(q, w["layers.0.self_attn.q_norm.weight"], c.eps).transpose(1, 0, 2)   # [nH, S, D]
        k = rms_norm(k, w["layers.0.self_attn.k_norm.weight"], c.eps).transpose(1, 0, 2)   # [nKV, S, D]
        v = v.transpose(1, 0, 2)
        # §1.5.5-6: positions continue the row's own cache; append, then attend over everything visible
        start = cache.length
        pos = np.arange(start, start + s, dtype=np.float64)
        q, k = self.rope(q, pos), self.rope(k, pos)
        keys, values = cache.append(k, v)                             # [nKV, T, D]
        t = keys.shape[1]
        # §1.5.7: GQA, query head j uses KV head j // (nH / nKV); causal over the row's positions
        group = nh // nkv
        kh = np.repeat(keys, group, axis=0)
        vh = np.repeat(values, group, axis=0)
        scores = (q @ kh.transpose(0, 2, 1)) * (d ** -0.5)            # [nH, S, T]
        visible = np.arange(t)[None, :] <= (start + np.arange(s))[:, None]
        scores = np.where(visible[None], scores, -np.inf)
        scores -= scores.max(axis=-1, keepdims=True)
        p = np.exp(scores)
        p /= p.sum(axis=-1, keepdims=True)
        # §1.5.8: heads back to [S, nH·D], the sigmoid gate, the output projection
        o = (p @ vh).transpose(1, 0, 2).reshape(s, nh * d)
        r = (o * sigmoid(gate)) @ w["layers.0.self_attn.o_proj"].T
        # 7-10. residual, gated SiLU MLP (or the MoE block of §12.3, row by row), residual, the final norm
        h1 = x + r
        n = rms_norm(h1, w["layers.0.post_attention_layernorm.weight"], c.eps)
        if self.moe is None:
            gp = n @ w["layers.0.mlp.gate_proj"].T
            m = (gp * sigmoid(gp) * (n @ w["layers.0.mlp.up_proj"].T)) @ w["layers.0.mlp.down_proj"].T
        else:
            m = np.empty_like(n)
            self.last_experts = []
            for i in range(s):
                m[i], trace = self.moe.forward_row(n[i])
                self.last_experts.append((start + i, [int(e) for e in trace["topk_indices"]]))
                if self.moe_trace is not None:
                    trace.update(mlp_in=n[i], h2=h1[i] + m[i])
                    self.moe_trace.append((start + i, trace))
        return rms_norm(h1 + m, w["norm.weight"], c.eps)

    def log_probs(self, y):
        """§1.7: logits = y · headᵀ (no further norm), log-softmax over V; y [H] -> [V]."""
        logits = self.head @ y
        m = logits.max()
        return logits - (m + np.log(np.sum(np.exp(logits - m))))
