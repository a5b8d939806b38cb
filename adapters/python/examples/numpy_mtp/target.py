"""The hybrid target (spec §13) in numpy float64, written from the spec: Gated DeltaNet layers in the recurrent form
(§13.2), gated full attention (§13.1, §1.5), dense or MoE MLPs (§12), the final norm and the logits head, and target
rows with verify and rollback (§13.3). Each row is unpadded and owns its state; a verify keeps the GDN state and conv
window after every verified token, and a commit keeps the ones after `accepted + 1` tokens (the KV cache is cut to
the same length). Checkpoints are schema qwen-target-v1, F32, in the reference's orientation (WIRE.md §5.3)."""

import hashlib
import math
import os

import numpy as np

from mtp_wire import errors as E
from mtp_wire.target import TARGET_SCHEMA, TargetCheckpoint, target_checkpoint_digest
from mtp_wire.tensor import Tensor

from .modelfiles import Config, MoeWeights, is_moe, load_store, read_json, to_f32, to_f64
from .moe import MoeMlp

MAX_WIDTH = 65               # the pending token and 64 drafts (api TargetContract.MAX_WIDTH)
MAX_POSITIONS = 1 << 20      # api RowContract.MAX_POSITIONS
MAX_ELEMENTS = 1 << 30       # api RowContract.MAX_ELEMENTS
PREFILL_CHUNK = 2048         # a prefill's forward-size bound counts at most this many positions (the Java chunk)


def rms_norm(x, gain, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * gain


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def silu(z):
    return z * sigmoid(z)


def softplus(z):
    """threshold 20, as torch's: z itself above it."""
    return np.where(z > 20.0, z, np.log1p(np.exp(np.minimum(z, 20.0))))


def l2norm(x):
    return x / np.sqrt(np.sum(x * x, axis=-1, keepdims=True) + 1e-6)


class TargetShape:
    """§13.1: the target's config, read from config.json (`text_config` when nested)."""

    def __init__(self, raw):
        text = raw.get("text_config") if isinstance(raw.get("text_config"), dict) else raw
        self.attn = Config(raw)   # H, nH, nKV, D, R, theta, eps and the MoE keys, as the drafter reads them

        def need(key):
            if key not in text:
                raise E.incompatible_model("loadTarget: config has no '%s' (spec §13.1)" % key)
            return int(text[key])
        self.layers_n = need("num_hidden_layers")
        types = text.get("layer_types")
        if types is None:
            interval = int(text.get("full_attention_interval", 4))
            types = ["full_attention" if (i + 1) % interval == 0 else "linear_attention"
                     for i in range(self.layers_n)]
        if len(types) != self.layers_n or any(t not in ("full_attention", "linear_attention") for t in types):
            raise E.incompatible_model("loadTarget: layer_types %r does not name %d layers of linear_attention or "
                                       "full_attention (spec §13.1)" % (types, self.layers_n))
        self.types = list(types)
        self.hk = need("linear_num_key_heads")
        self.hv = need("linear_num_value_heads")
        self.dk = need("linear_key_head_dim")
        self.dv = need("linear_value_head_dim")
        self.k = need("linear_conv_kernel_dim")
        self.vocab = need("vocab_size")
        moe = text.get("num_experts")
        self.intermediate = int(text.get("moe_intermediate_size" if moe else "intermediate_size") or 0)
        if self.hv % self.hk:
            raise E.incompatible_model("loadTarget: linear_num_value_heads %d is not a multiple of "
                                       "linear_num_key_heads %d (spec §13.1)" % (self.hv, self.hk))
        self.conv_dim = 2 * self.hk * self.dk + self.hv * self.dv
        self.gdn_slots = [i for i, t in enumerate(self.types) if t == "linear_attention"]
        self.full_slots = [i for i, t in enumerate(self.types) if t == "full_attention"]
        tie = raw.get("tie_word_embeddings", text.get("tie_word_embeddings", False))
        self.tie = bool(tie)

    def max_positions(self):
        a = self.attn
        return min(MAX_POSITIONS, MAX_ELEMENTS // (a.kv_heads * a.head_dim))

    def forward_width(self):
        """The widest per-token array of one forward (api TargetContract.forwardSize)."""
        a = self.attn
        return max(2 * a.heads * a.head_dim, self.conv_dim + self.hv * self.dv, self.intermediate, a.hidden)


class HybridTarget:
    """The weights as the maths uses them (float64; zero-centred norm gains 1 + w formed once in float32)."""

    def __init__(self, directory, identity):
        if not isinstance(directory, str) or not os.path.isdir(directory):
            raise E.incompatible_model("loadTarget: %r is not a directory" % (directory,))
        cfg_path = os.path.join(directory, "config.json")
        if not os.path.isfile(cfg_path):
            raise E.incompatible_model("loadTarget: missing config.json in %s (spec §13.1)" % directory)
        raw = read_json(cfg_path)
        if not isinstance(raw, dict):
            raise E.malformed_file("loadTarget: %s is not a JSON object" % cfg_path)
        self.s = s = TargetShape(raw)
        store, _ = load_store(directory)
        prefix = "model.language_model." if any(n.startswith("model.language_model.") for n in store) else "model."
        self.identity = identity if isinstance(identity, str) else _own_identity(directory)

        def t(name):
            entry = store.get(prefix + name)
            if entry is None:
                raise E.incompatible_model("loadTarget: missing tensor '%s%s' in %s (spec §13.1)"
                                           % (prefix, name, directory))
            return entry

        def f64(name):
            return to_f64(t(name), prefix + name)

        def gain(name):   # zero-centred: 1 + w, in float32
            return (to_f32(t(name), prefix + name) + np.float32(1.0)).astype(np.float32).astype(np.float64)

        self.embed = f64("embed_tokens.weight")
        head = store.get("lm_head.weight")
        self.head = to_f64(head, "lm_head.weight") if head is not None and not s.tie else self.embed
        self.final_norm = gain("norm.weight")
        self.layers = []
        a = s.attn
        for i, kind in enumerate(s.types):
            p = "layers.%d." % i
            layer = {"kind": kind, "in_norm": gain(p + "input_layernorm.weight"),
                     "post_norm": gain(p + "post_attention_layernorm.weight")}
            if kind == "linear_attention":
                q = p + "linear_attn."
                if prefix + q + "in_proj_qkvz.weight" in store:      # Qwen3-Next: reorder into the flat layout
                    qkv, z, b, aa = self._next_layout(f64(q + "in_proj_qkvz.weight"), f64(q + "in_proj_ba.weight"))
                else:
                    qkv, z = f64(q + "in_proj_qkv.weight"), f64(q + "in_proj_z.weight")
                    b, aa = f64(q + "in_proj_b.weight"), f64(q + "in_proj_a.weight")
                conv = f64(q + "conv1d.weight")
                layer.update(qkv=qkv, z=z, b=b, a=aa, conv=conv.reshape(s.conv_dim, s.k),
                             a_log=f64(q + "A_log"), dt_bias=f64(q + "dt_bias"), norm=f64(q + "norm.weight"),
                             out=f64(q + "out_proj.weight"))
            else:
                q = p + "self_attn."
                layer.update(q=f64(q + "q_proj.weight"), k=f64(q + "k_proj.weight"), v=f64(q + "v_proj.weight"),
                             o=f64(q + "o_proj.weight"), q_norm=gain(q + "q_norm.weight"),
                             k_norm=gain(q + "k_norm.weight"))
            mlp = {n[len(prefix + p):]: e for n, e in store.items() if n.startswith(prefix + p + "mlp.")}
            renamed = {"layers.0." + n: e for n, e in mlp.items()}
            if is_moe(renamed):
                layer["moe"] = MoeMlp(a, MoeWeights(renamed, a.quant, directory))
            else:
                layer.update(gate=f64(p + "mlp.gate_proj.weight"), up=f64(p + "mlp.up_proj.weight"),
                             down=f64(p + "mlp.down_proj.weight"))
            self.layers.append(layer)
        r = a.rotary
        self.inv_freq = a.theta ** (-2.0 * np.arange(r // 2) / r) if r else np.zeros(0)
        self.last_experts = []   # the last forward's (position, layer, experts), MoE layers only

    def _next_layout(self, qkvz, ba):
        """§13.2.1: Qwen3-Next's per-key-head groups [q_g | k_g | v_g.. | z_g..] and [b_g.. | a_g..], reordered."""
        s = self.s
        r, dk, dv = s.hv // s.hk, s.dk, s.dv
        per = qkvz.reshape(s.hk, 2 * dk + 2 * r * dv, -1)
        q = per[:, :dk].reshape(s.hk * dk, -1)
        k = per[:, dk:2 * dk].reshape(s.hk * dk, -1)
        v = per[:, 2 * dk:2 * dk + r * dv].reshape(s.hv * dv, -1)
        z = per[:, 2 * dk + r * dv:].reshape(s.hv * dv, -1)
        per_ba = ba.reshape(s.hk, 2 * r, -1)
        return (np.concatenate([q, k, v], axis=0), z, per_ba[:, :r].reshape(s.hv, -1),
                per_ba[:, r:].reshape(s.hv, -1))

    def rope(self, x, positions):
        """§1.5: rotate_half pairs (f, f + R/2) of the first R dims; x [heads, S, D]."""
        r = self.s.attn.rotary
        if r == 0:
            return x
        ang = positions[:, None] * self.inv_freq[None, :]
        cos, sin = np.cos(ang), np.sin(ang)
        a, b = x[..., :r // 2], x[..., r // 2:r]
        out = x.copy()
        out[..., :r // 2] = a * cos - b * sin
        out[..., r // 2:r] = a * sin + b * cos
        return out

    # -- one row's forward over S tokens ------------------------------------------------------------------------
    def forward(self, state, ids, keep_every):
        """ids [S] for a row in `state` (RowState, not modified). Returns (pre [S, H], post [S, H], new per-layer
        GDN (windows, states) and K/V): with keep_every the GDN windows and states after every token, else the last.
        `last_experts` then holds its router choices, (position, layer, experts in slot order) per token and MoE
        layer in the order computed (layer by layer, tokens in order; spec §12.3, WIRE.md §5.2)."""
        s, a = self.s, self.s.attn
        x = self.embed[ids]                                              # [S, H]
        n_tok = len(ids)
        gdn_out, kv_out = [], []
        self.last_experts = experts = []
        gi = fi = 0
        for li, layer in enumerate(self.layers):
            h = rms_norm(x, layer["in_norm"], a.eps)
            if layer["kind"] == "linear_attention":
                y, windows, states = self._gdn(layer, h, state.windows[gi], state.states[gi], keep_every)
                gdn_out.append((windows, states))
                gi += 1
            else:
                y, keys, values = self._attention(layer, h, state.keys[fi], state.values[fi], state.processed)
                kv_out.append((keys, values))
                fi += 1
            x = x + y
            n = rms_norm(x, layer["post_norm"], a.eps)
            if "moe" in layer:
                m = np.empty_like(n)
                for i in range(n_tok):
                    m[i], trace = layer["moe"].forward_row(n[i])
                    experts.append((state.processed + i, li, [int(e) for e in trace["topk_indices"]]))
            else:
                g = n @ layer["gate"].T
                m = (silu(g) * (n @ layer["up"].T)) @ layer["down"].T
            x = x + m
        post = rms_norm(x, self.final_norm, a.eps)
        return x, post, gdn_out, kv_out

    def _gdn(self, w, h, window, state, keep_every):
        """§13.2 for S tokens: window [K-1, conv_dim] (oldest first), state [Hv, Dk, Dv]."""
        s = self.s
        n_tok = h.shape[0]
        qkv = h @ w["qkv"].T                                             # [S, conv_dim]
        z = (h @ w["z"].T).reshape(n_tok, s.hv, s.dv)
        beta = sigmoid(h @ w["b"].T)                                     # [S, Hv]
        g = -np.exp(w["a_log"]) * softplus(h @ w["a"].T + w["dt_bias"])
        alpha = np.exp(g)
        u = np.concatenate([window, qkv], axis=0)                        # [K-1+S, conv_dim]
        c = np.zeros_like(qkv)
        for j in range(s.k):                                             # taps ascending; W[:, K-1] on the current
            c = c + w["conv"][:, j] * u[j:j + n_tok]
        c = silu(c)
        kd = s.hk * s.dk
        q = l2norm(c[:, :kd].reshape(n_tok, s.hk, s.dk)) * (s.dk ** -0.5)
        k = l2norm(c[:, kd:2 * kd].reshape(n_tok, s.hk, s.dk))
        v = c[:, 2 * kd:].reshape(n_tok, s.hv, s.dv)
        group = np.arange(s.hv) // (s.hv // s.hk)                        # value head j reads key head j / r
        st = state.copy()
        o = np.empty((n_tok, s.hv, s.dv))
        states = []
        for t in range(n_tok):
            kk, qq = k[t][group], q[t][group]                           # [Hv, Dk]
            st = alpha[t][:, None, None] * st
            m = np.einsum("hij,hi->hj", st, kk)
            st = st + kk[:, :, None] * (beta[t][:, None] * (v[t] - m))[:, None, :]
            o[t] = np.einsum("hij,hi->hj", st, qq)
            if keep_every:
                states.append(st)
        normed = o / np.sqrt(np.mean(o * o, axis=-1, keepdims=True) + s.attn.eps) * w["norm"] * silu(z)
        y = normed.reshape(n_tok, s.hv * s.dv) @ w["out"].T
        km1 = s.k - 1
        if keep_every:
            windows = [u[t + 1:t + 1 + km1].copy() for t in range(n_tok)]
            return y, windows, states
        return y, [u[n_tok:n_tok + km1].copy()], [st]

    def _attention(self, w, h, keys, values, start):
        """§1.5 over the row's cache: keys/values [nKV, P, D]; returns y and the extended caches."""
        a = self.s.attn
        n_tok = h.shape[0]
        nh, nkv, d = a.heads, a.kv_heads, a.head_dim
        qg = (h @ w["q"].T).reshape(n_tok, nh, 2 * d)
        q, gate = qg[..., :d], qg[..., d:].reshape(n_tok, nh * d)
        k = (h @ w["k"].T).reshape(n_tok, nkv, d)
        v = (h @ w["v"].T).reshape(n_tok, nkv, d)
        q = rms_norm(q, w["q_norm"], a.eps).transpose(1, 0, 2)
        k = rms_norm(k, w["k_norm"], a.eps).transpose(1, 0, 2)
        v = v.transpose(1, 0, 2)
        pos = np.arange(start, start + n_tok, dtype=np.float64)
        q, k = self.rope(q, pos), self.rope(k, pos)
        keys = np.concatenate([keys, k], axis=1)
        values = np.concatenate([values, v], axis=1)
        t = keys.shape[1]
        rep = nh // nkv
        kh, vh = np.repeat(keys, rep, axis=0), np.repeat(values, rep, axis=0)
        scores = (q @ kh.transpose(0, 2, 1)) * (d ** -0.5)
        visible = np.arange(t)[None, :] <= (start + np.arange(n_tok))[:, None]
        scores = np.where(visible[None], scores, -np.inf)
        scores -= scores.max(axis=-1, keepdims=True)
        p = np.exp(scores)
        p /= p.sum(axis=-1, keepdims=True)
        o = (p @ vh).transpose(1, 0, 2).reshape(n_tok, nh * d)
        return (o * sigmoid(gate)) @ w["o"].T, keys, values

    def empty_state(self):
        s, a = self.s, self.s.attn
        return RowState(0, [np.zeros((s.k - 1, s.conv_dim)) for _ in s.gdn_slots],
                        [np.zeros((s.hv, s.dk, s.dv)) for _ in s.gdn_slots],
                        [np.zeros((a.kv_heads, 0, a.head_dim)) for _ in s.full_slots],
                        [np.zeros((a.kv_heads, 0, a.head_dim)) for _ in s.full_slots])


class RowState:
    """One row after P tokens: per GDN layer the window [K-1, conv_dim] and state [Hv, Dk, Dv]; per full-attention
    layer K/V [nKV, P, D]. Replaced, never modified in place, so a failed call leaves it as it was. A committed state
    is held at float32 precision (float64 arrays of float32 values): the checkpoint is F32 and must be the row's whole
    state, so that a restored row continues exactly as the original (spec §13.3)."""
    __slots__ = ("processed", "windows", "states", "keys", "values")

    def __init__(self, processed, windows, states, keys, values):
        self.processed = processed
        self.windows = [_f32(x) for x in windows]
        self.states = [_f32(x) for x in states]
        self.keys = [_f32(x) for x in keys]
        self.values = [_f32(x) for x in values]


def _f32(x):
    return x.astype(np.float32).astype(np.float64)


class TargetGroup:
    """Target rows (spec §13.3): checks in the contract's order (WIRE.md §5.2), then compute, then publish. The
    computation and the row state are behind five hooks (`empty_row`, `restored_row`, `run_prefill`, `run_verify`,
    `run_commit`, `export`), so an engine with other arithmetic (transformers_target.py) keeps these checks.
    `run_prefill` and `run_verify` append their router choices, (row, position, layer, experts), to `self.router`
    (WIRE.md §5.2 `experts`); it is cleared before each prefill, verify and commit and when one fails."""

    def __init__(self, target, model_closed=None):
        self.t = target
        self.s = target.s
        self.rows = []
        self.round = None        # during a round: what run_commit needs, one entry per row
        self.width = 0
        self.closed = False
        self.router = []         # (row, position, layer, experts) of the last prefill or verify, MoE layers only

    # -- the arithmetic and the row state (numpy float64, RowState)
    def empty_row(self):
        return self.t.empty_state()

    def restored_row(self, p, conv, states, keys, values):
        """conv [nGDN, conv_dim, K-1], states [nGDN, Hv, Dk, Dv], keys/values [nFull, nKV, P, D] (float64) or None."""
        ng, nf = len(self.s.gdn_slots), len(self.s.full_slots)
        return RowState(p, [conv[i].T.copy() for i in range(ng)], [states[i].copy() for i in range(ng)],
                        [keys[i].copy() for i in range(nf)], [values[i].copy() for i in range(nf)])

    def run_prefill(self, ids):
        """(new rows, per row: logits [1, V], pre [L, H], post [L, H])."""
        new_rows, logits, pre, post = [], [], [], []
        n = ids.shape[1]
        for b, row in enumerate(self.rows):
            x, y, gdn, kv = self.t.forward(row, ids[b], keep_every=False)
            self.router.extend((b, p, layer, e) for p, layer, e in self.t.last_experts)
            new_rows.append(RowState(row.processed + n, [w[-1] for w, _ in gdn], [st[-1] for _, st in gdn],
                                     [k for k, _ in kv], [v for _, v in kv]))
            logits.append(y[-1:] @ self.t.head.T)
            pre.append(x)
            post.append(y)
        return new_rows, logits, pre, post

    def run_verify(self, ids):
        """(the round, per row: logits [W, V], pre [W, H], post [W, H]); the rows stay as they are."""
        round_, logits, pre, post = [], [], [], []
        for b, row in enumerate(self.rows):
            x, y, gdn, kv = self.t.forward(row, ids[b], keep_every=True)
            self.router.extend((b, p, layer, e) for p, layer, e in self.t.last_experts)
            round_.append((row, gdn, kv))
            logits.append(y @ self.t.head.T)
            pre.append(x)
            post.append(y)
        return round_, logits, pre, post

    def run_commit(self, accepted):
        rows = []
        for (row, gdn, kv), a in zip(self.round, accepted):
            p = row.processed + a + 1
            rows.append(RowState(p, [ws[a] for ws, _ in gdn], [sts[a] for _, sts in gdn],
                                 [k[:, :p] for k, _ in kv], [v[:, :p] for _, v in kv]))
        return rows

    def export(self, r):
        """(conv [nGDN, conv_dim, K-1], states, keys [nFull, nKV, P, D], values) as float32 arrays, None if absent."""
        s = self.s

        def stack(arrays):
            return np.stack(arrays).astype(np.float32) if arrays else None
        return (stack([wd.T for wd in r.windows]) if s.gdn_slots else None, stack(r.states) if s.gdn_slots else None,
                stack(r.keys) if s.full_slots else None, stack(r.values) if s.full_slots else None)

    # -- the contract
    def _usable(self, call):
        if self.closed:
            raise E.illegal_state(call + ": the group is closed")

    def _no_round(self, call):
        if self.round is not None:
            raise E.illegal_state(call + ": a verify round is open; commit it first (spec §13.3)")

    def _has_rows(self, call):
        if not self.rows:
            raise E.illegal_state(call + ": the group has no rows")

    def router_choices(self):
        return list(self.router)

    def _routed(self, run, ids):
        """run(ids) with the router choices cleared first and forgotten when it fails."""
        self.router = []
        try:
            return run(ids)
        except BaseException:
            self.router = []
            raise

    def processed_tokens(self):
        extra = self.width if self.round is not None else 0
        return [r.processed + extra for r in self.rows]

    def append(self, checkpoints):
        self._usable("append")
        self._no_round("append")
        if checkpoints is None:
            raise E.invalid_argument("append: checkpoint list is null (use null entries for empty rows)")
        if not isinstance(checkpoints, list):
            raise E.invalid_argument("append: checkpoints is not a list")
        checked = [None if cp is None else self._restore("append", i, cp) for i, cp in enumerate(checkpoints)]
        added = [self.empty_row() if c is None else self.restored_row(*c) for c in checked]
        self.rows = self.rows + added

    def _restore(self, call, i, cp):
        where = "%s: checkpoint[%d]" % (call, i)
        bad = E.incompatible_checkpoint
        s, a = self.s, self.s.attn
        if not isinstance(cp, TargetCheckpoint):
            raise bad("%s is not a target checkpoint object" % where)
        if cp.schema != TARGET_SCHEMA:
            raise bad("%s has schema %r, expected '%s' (spec §13.3)" % (where, cp.schema, TARGET_SCHEMA))
        if cp.model_identity != self.t.identity:
            raise bad("%s belongs to another target" % where)
        p = cp.processed_tokens
        if isinstance(p, bool) or not isinstance(p, int) or p < 1 or p > s.max_positions():
            raise bad("%s has P = %s processed tokens, outside [1, %d] (spec §13.3)" % (where, p, s.max_positions()))
        ng, nf = len(s.gdn_slots), len(s.full_slots)
        conv = _tensor(where, "convWindows", cp.conv_windows, ng, (ng, s.conv_dim, s.k - 1))
        states = _tensor(where, "recurrentStates", cp.recurrent_states, ng, (ng, s.hv, s.dk, s.dv))
        keys = _tensor(where, "keys", cp.keys, nf, (nf, a.kv_heads, p, a.head_dim))
        values = _tensor(where, "values", cp.values, nf, (nf, a.kv_heads, p, a.head_dim))
        if cp.digest is None:
            raise bad("%s carries no content digest (spec §13.3)" % where)
        if cp.digest != target_checkpoint_digest(cp):
            raise bad("%s does not match its content digest (spec §13.3)" % where)
        return p, conv, states, keys, values

    def filter_rows(self, keep):
        self._usable("filterRows")
        self._no_round("filterRows")
        if keep is None:
            raise E.invalid_argument("filterRows: keep is null")
        seen = set()
        for i, r in enumerate(keep):
            if isinstance(r, bool) or not isinstance(r, int) or r < 0 or r >= len(self.rows):
                raise E.invalid_argument("filterRows: keep[%d] = %s outside [0, %d)" % (i, r, len(self.rows)))
            if r in seen:
                raise E.invalid_argument("filterRows: keep[%d] = %d repeats a row" % (i, r))
            seen.add(r)
        self.rows = [self.rows[r] for r in keep]

    def prefill(self, tokens):
        self.router = []
        self._usable("prefill")
        self._no_round("prefill")
        self._has_rows("prefill")
        ids = self._tokens("prefill", tokens)
        n = ids.shape[1]
        self._positions("prefill", n)
        self._forward_size("prefill", min(n, PREFILL_CHUNK))
        new_rows, logits, pre, post = self._routed(self.run_prefill, ids)
        self.rows = new_rows
        return _out(logits), _out(pre), _out(post)

    def verify(self, tokens):
        self.router = []
        self._usable("verify")
        self._no_round("verify")
        self._has_rows("verify")
        ids = self._tokens("verify", tokens)
        w = ids.shape[1]
        if w > MAX_WIDTH:
            raise E.invalid_argument("verify: width W = %d tokens per row, more than the %d a verify may take "
                                     "(spec §13.3)" % (w, MAX_WIDTH))
        for b, row in enumerate(self.rows):
            if row.processed == 0:
                raise E.illegal_state("verify: row %d has processed no token; prefill it first: a verify continues "
                                      "from the pending token (spec §13.3)" % b)
        self._positions("verify", w)
        self._forward_size("verify", w)
        round_, logits, pre, post = self._routed(self.run_verify, ids)
        self.round, self.width = round_, w
        return _out(logits), _out(pre), _out(post)

    def commit(self, accepted):
        self.router = []
        self._usable("commit")
        if self.round is None:
            raise E.illegal_state("commit: no verify round is open (spec §13.3)")
        b, w = len(self.rows), self.width
        if accepted is None:
            raise E.invalid_argument("commit: accepted is null")
        if not isinstance(accepted, list) or len(accepted) != b:
            raise E.invalid_argument("commit: accepted has %s entries, expected %d (one per row)"
                                     % (len(accepted) if isinstance(accepted, list) else "no", b))
        for r, a in enumerate(accepted):
            if isinstance(a, bool) or not isinstance(a, int) or a < 0 or a > w - 1:
                raise E.invalid_argument("commit: accepted[%d] = %s outside [0, %d] (spec §13.3); rows unchanged"
                                         % (r, a, w - 1))
        self.rows = self.run_commit(accepted)
        self.round, self.width = None, 0

    def capture(self, row):
        self._usable("capture")
        self._no_round("capture")
        if isinstance(row, bool) or not isinstance(row, int) or row < 0 or row >= len(self.rows):
            raise E.invalid_argument("capture: row %s outside [0, %d)" % (row, len(self.rows)))
        r = self.rows[row]
        if r.processed == 0:
            raise E.illegal_state("capture: row %d has processed no token yet (spec §13.3)" % row)

        def tensor(a):
            return None if a is None else Tensor.from_numpy(np.ascontiguousarray(a.astype(np.float32)))
        conv, states, keys, values = self.export(r)
        cp = TargetCheckpoint(TARGET_SCHEMA, r.processed, self.t.identity, tensor(conv), tensor(states),
                              tensor(keys), tensor(values))
        cp.digest = target_checkpoint_digest(cp)
        return cp

    def close(self):
        self.closed = True
        self.rows = []
        self.round = None

    # -- argument checks
    def _tokens(self, call, t):
        if t is None:
            raise E.invalid_argument(call + ": tokens is null")
        if not isinstance(t, Tensor):
            raise E.invalid_argument("%s: tokens %s is not a valid tensor" % (call, t.describe()))
        if t.dtype not in ("I32", "I64"):
            raise E.invalid_argument("%s: tokens dtype %s, expected I32 or I64" % (call, t.dtype))
        if t.rank != 2 or t.shape[0] != len(self.rows):
            raise E.invalid_argument("%s: tokens shape %s, expected [%d, L]" % (call, t.describe(), len(self.rows)))
        if t.shape[1] < 1:
            raise E.invalid_argument(call + ": tokens has L = 0 new positions, expected L ≥ 1")
        if t.shape[1] > MAX_POSITIONS:
            raise E.invalid_argument("%s: tokens has L = %d positions, more than %d" % (call, t.shape[1],
                                                                                       MAX_POSITIONS))
        ids = t.array().astype(np.int64)
        bad = np.argwhere((ids < 0) | (ids >= self.s.vocab))
        if len(bad):
            b, p = (int(v) for v in bad[0])
            raise E.invalid_argument("%s: tokens[%d, %d] = %d outside the vocabulary [0, %d)"
                                     % (call, b, p, ids[b, p], self.s.vocab))
        return ids

    def _positions(self, call, added):
        m = self.s.max_positions()
        for b, row in enumerate(self.rows):
            if row.processed + added > m:
                raise E.invalid_argument("%s: row %d would hold %d tokens, more than %d (spec §11.13)"
                                         % (call, b, row.processed + added, m))

    def _forward_size(self, call, positions):
        n = len(self.rows) * positions * self.s.forward_width()
        if n > MAX_ELEMENTS:
            raise E.invalid_argument("%s: one forward needs %d elements in one array, more than %d (spec §11.13)"
                                     % (call, n, MAX_ELEMENTS))


def _tensor(where, name, t, layers, shape):
    bad = E.incompatible_checkpoint
    if layers == 0:
        if t is not None:
            raise bad("%s carries %s but the target has no layer that holds them" % (where, name))
        return None
    if t is None:
        raise bad("%s has no %s tensor" % (where, name))
    if not isinstance(t, Tensor):
        raise bad("%s %s is not a valid tensor" % (where, name))
    if t.dtype != "F32":
        raise bad("%s %s dtype %s, expected F32" % (where, name, t.dtype))
    if tuple(t.shape) != tuple(shape):
        raise bad("%s %s shape %s, expected %s" % (where, name, list(t.shape), list(shape)))
    arr = t.array().astype(np.float64)
    if not np.all(np.isfinite(arr)):
        raise bad("%s %s has a non-finite element" % (where, name))
    return arr


def _out(per_row):
    return Tensor.from_numpy(np.ascontiguousarray(np.stack(per_row).astype(np.float32)))


def _own_identity(path):
    h = hashlib.sha256()
    for f in sorted(os.listdir(path)):
        if f.endswith(".safetensors") or f == "config.json":
            with open(os.path.join(path, f), "rb") as fh:
                h.update(fh.read())
    return h.hexdigest()


__all__ = ["HybridTarget", "TargetGroup", "MAX_WIDTH", "math"]
