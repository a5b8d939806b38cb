#!/usr/bin/env python3
"""Hugging Face transformers' own hybrid target, `Qwen3_5TextModel` / `Qwen3_5MoeTextModel`, as the target of an
engine over mtp-oracle-wire/1 (WIRE.md §5.2, spec §13), beside transformers_backend.py's drafter.

The target's math is transformers' code, unchanged: the model is built from the release's `text_config`, its weights
loaded with `load_state_dict(strict=True)` from the release's safetensors (`model.language_model.*`), eager attention
and the eager experts loop; a forward is `model(input_ids, position_ids, past_key_values=cache, use_cache=True)` with
one `DynamicCache(config=...)` per row; the pre-norm tap is the input of the model's final norm (a forward hook), the
post-norm tap its `last_hidden_state`, the logits that times the (tied) head. transformers' cache cannot crop a
recurrent state, so a verify runs on a snapshot (`copy.deepcopy`) of the row's cache, and a commit that accepts
fewer than all verified tokens goes back to the row's cache from before the verify and feeds it the kept tokens
again; one that accepts all keeps the verified cache. A checkpoint reads the cache's own tensors (conv states: the
last K−1 of their K columns; recurrent states [Hv, Dk, Dv]; K/V) and a restore writes them into a cache made by a
one-token forward. The argument checks are numpy_mtp/target.py's (TargetGroup), so what is on trial is
transformers' arithmetic and its cache. For a MoE target the engine claims `targetRouterChoices`: a forward hook on
every layer's router (`Qwen3_5MoeTopKRouter`, the sparse MoE block's `gate`) keeps its integer top-k indices, and
prefill and verify replies list them as `experts` (row, position, layer, experts; WIRE.md §5.2), so the kit compares
transformers' expert choices tie-aware and continues the reference on them (spec §12.5).

    python3 transformers_target.py [--device cpu|cuda] [--dtype float32|bfloat16|float64]
    python3 transformers_target.py --smoke DIR [--device cuda]   # one target's forwards vs the numpy target

    mtp tck --backend exec:'python3 adapters/python/examples/transformers_target.py --device cuda'
    mtp conform --target --backend exec:'python3 adapters/python/examples/transformers_target.py --device cuda'

It also serves transformers_backend.py's drafter, so `mtp tck` runs the drafter's rules and the target's on one
engine. Without torch or transformers it still speaks the protocol and reports itself unavailable.
"""

import argparse
import copy
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import transformers_backend as tb  # noqa: E402
import mtp_wire  # noqa: E402
from mtp_wire import errors as E  # noqa: E402
from numpy_mtp.modelfiles import load_store, read_json, to_f32  # noqa: E402
from numpy_mtp.target import TargetGroup, TargetShape  # noqa: E402


def _first(x):
    """A cache field that is a tensor, or a list/tuple/dict holding it (transformers versions differ)."""
    if isinstance(x, dict):
        return next(iter(x.values()))
    if isinstance(x, (list, tuple)):
        return x[0]
    return x


class TorchTarget:
    """transformers' text model for one release directory, on one device, in one dtype."""

    def __init__(self, directory, identity, device, dtype_name):
        torch, _, _, DynamicCache, versions = tb.import_transformers()
        self.torch, self.DynamicCache = torch, DynamicCache
        if not isinstance(directory, str) or not os.path.isdir(directory):
            raise E.incompatible_model("loadTarget: %r is not a directory" % (directory,))
        raw = read_json(os.path.join(directory, "config.json"))
        if not isinstance(raw, dict):
            raise E.malformed_file("loadTarget: config.json is not a JSON object")
        self.s = TargetShape(raw)
        text = dict(raw.get("text_config") if isinstance(raw.get("text_config"), dict) else raw)
        self.moe = bool(text.get("num_experts"))
        if self.moe:
            from transformers.models.qwen3_5_moe import modeling_qwen3_5_moe as mm
            from transformers.models.qwen3_5_moe.configuration_qwen3_5_moe import Qwen3_5MoeTextConfig as TextConfig
            Model = mm.Qwen3_5MoeTextModel
        else:
            from transformers.models.qwen3_5 import modeling_qwen3_5 as mm
            from transformers.models.qwen3_5.configuration_qwen3_5 import Qwen3_5TextConfig as TextConfig
            Model = mm.Qwen3_5TextModel
        self.classes = Model.__name__
        self.versions = versions
        text.pop("model_type", None)
        tcfg = TextConfig(**text)
        tb.set_eager(tcfg, ("_attn_implementation",) + (("_experts_implementation",) if self.moe else ()))
        self.tcfg = tcfg
        self.dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float64": torch.float64}[dtype_name]
        self.device = torch.device(device)
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        store, _ = load_store(directory)
        prefix = "model.language_model." if any(n.startswith("model.language_model.") for n in store) else None
        if prefix is None:
            raise E.incompatible_model("loadTarget: %s has no model.language_model.* tensors; this engine wires "
                                       "Qwen3.5's layout only (a Qwen3-Next release is not wired)" % directory)
        state = {n[len(prefix):]: self._tensor(e) for n, e in store.items() if n.startswith(prefix)}
        model = Model(tcfg)
        missing, unexpected = model.load_state_dict(state, strict=False)
        if missing or unexpected:
            raise E.incompatible_model("loadTarget: transformers' %s does not take these weights: missing %s, "
                                       "unexpected %s" % (self.classes, sorted(missing)[:4], sorted(unexpected)[:4]))
        self.model = model.to(self.dtype).to(self.device).eval()
        head = store.get("lm_head.weight")
        self.head = (self._tensor(head) if head is not None and not self.s.tie
                     else state["embed_tokens.weight"]).to(self.dtype).to(self.device)
        self.pre = None
        self.model.norm.register_forward_hook(lambda mod, args, out: setattr(self, "pre", args[0]))
        self.identity = identity if isinstance(identity, str) else "unknown"
        self.last_experts, self._routed = [], []
        if self.moe:   # every decoder layer's MLP is a Qwen3_5MoeSparseMoeBlock; its `gate` is the top-k router
            for li, layer in enumerate(self.model.layers):
                gate = getattr(getattr(layer, "mlp", None), "gate", None)
                if gate is not None:
                    gate.register_forward_hook(lambda mod, args, out, li=li: self._keep_indices(li, out))

    def _keep_indices(self, layer, out):
        """The router's integer output (its top-k indices [tokens, k], torch.topk's descending order: the slot
        order of spec §12.3) for decoder layer `layer`; a router that returns none leaves nothing."""
        ints = [o for o in (out if isinstance(out, tuple) else (out,))
                if self.torch.is_tensor(o) and not o.is_floating_point()]
        if ints:
            self._routed.append((layer, ints[0].detach().to("cpu").numpy()))

    def _tensor(self, entry):
        return self.torch.from_numpy(np.ascontiguousarray(to_f32(entry, "weight")))   # BF16/F16 widen exactly

    def new_cache(self):
        return self.DynamicCache(config=self.tcfg)

    def forward(self, cache, start, ids):
        """Feeds ids [S] at positions start… to `cache`; (the advanced cache, pre [S, H], post [S, H], logits [S, V]
        as float64 numpy). For a MoE target `last_experts` then holds what transformers' routers chose,
        (position, layer, experts in slot order) per MoE layer and token, in the order computed."""
        torch = self.torch
        x = torch.as_tensor([list(map(int, ids))], dtype=torch.long, device=self.device)
        pos = torch.arange(start, start + len(ids), device=self.device)[None]
        n = len(ids)
        self._routed = []
        with torch.no_grad():
            out = self.model(input_ids=x, position_ids=pos, past_key_values=cache, use_cache=True)
            post = out.last_hidden_state
            logits = post @ self.head.T
        self.last_experts, self._routed = routed_experts(start, n, self._routed), []
        f = lambda t: t[0].detach().to(torch.float64).cpu().numpy()  # noqa: E731
        return (cache if out.past_key_values is None else out.past_key_values), f(self.pre), f(post), f(logits)


class TorchRow:
    __slots__ = ("processed", "cache")

    def __init__(self, processed, cache):
        self.processed = processed
        self.cache = cache


class TorchTargetGroup(TargetGroup):
    """numpy_mtp.target.TargetGroup's checks over transformers' arithmetic and cache (the hooks)."""

    def empty_row(self):
        return TorchRow(0, None)

    def restored_row(self, p, conv, states, keys, values):
        t, s = self.t, self.s
        torch = t.torch
        cache = t.forward(t.new_cache(), 0, [0])[0]   # a one-token forward lays out every layer's tensors
        for slot, li in enumerate(s.gdn_slots):
            lay = t_layer(cache, li)
            cs, rs = _first(lay.conv_states), _first(lay.recurrent_states)
            full = torch.zeros(cs.shape[-2:], dtype=torch.float64)
            full[:, -(s.k - 1):] = torch.from_numpy(conv[slot])
            cs.copy_(full.reshape(cs.shape))
            rs.copy_(torch.from_numpy(states[slot]).reshape(rs.shape))
        for slot, li in enumerate(s.full_slots):
            lay = t_layer(cache, li)
            lay.keys = torch.from_numpy(keys[slot][None]).to(lay.keys.dtype).to(t.device)
            lay.values = torch.from_numpy(values[slot][None]).to(lay.values.dtype).to(t.device)
        return TorchRow(p, cache)

    def run_prefill(self, ids):
        rows, logits, pre, post = [], [], [], []
        for b, row in enumerate(self.rows):
            cache = self.t.new_cache() if row.cache is None else copy.deepcopy(row.cache)
            cache, x, y, lo = self.t.forward(cache, row.processed, ids[b])
            self.router.extend((b, p, layer, e) for p, layer, e in self.t.last_experts)
            rows.append(TorchRow(row.processed + ids.shape[1], cache))
            logits.append(lo[-1:])
            pre.append(x)
            post.append(y)
        return rows, logits, pre, post

    def run_verify(self, ids):
        round_, logits, pre, post = [], [], [], []
        for b, row in enumerate(self.rows):
            snapshot = copy.deepcopy(row.cache)     # the row's own cache stays as it was before the verify
            snapshot, x, y, lo = self.t.forward(snapshot, row.processed, ids[b])
            self.router.extend((b, p, layer, e) for p, layer, e in self.t.last_experts)
            round_.append((row, snapshot, ids[b]))
            logits.append(lo)
            pre.append(x)
            post.append(y)
        return round_, logits, pre, post

    def run_commit(self, accepted):
        rows = []
        for (row, verified, ids), a in zip(self.round, accepted):
            if a + 1 == len(ids):
                rows.append(TorchRow(row.processed + a + 1, verified))
                continue
            cache = copy.deepcopy(row.cache)         # back to before the verify; feed the kept tokens again
            cache = self.t.forward(cache, row.processed, ids[:a + 1])[0]
            rows.append(TorchRow(row.processed + a + 1, cache))
        return rows

    def export(self, r):
        t, s = self.t, self.s
        torch = t.torch
        f = lambda x: x.detach().to(torch.float32).cpu().numpy()  # noqa: E731
        conv = [f(_first(t_layer(r.cache, li).conv_states))[0][:, -(s.k - 1):] for li in s.gdn_slots]
        rec = [f(_first(t_layer(r.cache, li).recurrent_states))[0] for li in s.gdn_slots]
        keys = [f(t_layer(r.cache, li).keys)[0] for li in s.full_slots]
        values = [f(t_layer(r.cache, li).values)[0] for li in s.full_slots]
        return (np.stack(conv) if conv else None, np.stack(rec) if rec else None,
                np.stack(keys) if keys else None, np.stack(values) if values else None)


def routed_experts(start, n, routed):
    """(position, layer, experts) per layer and token, in the order the layers ran, from the routers' (layer,
    indices [n, k]) of one forward of n tokens at positions start…"""
    return [(start + i, layer, [int(e) for e in np.asarray(idx).reshape(n, -1)[i]])
            for layer, idx in routed for i in range(n)]


def t_layer(cache, li):
    return cache.layers[li]


class TransformersTargetEngine(tb.TransformersEngine):
    name = "transformers-qwen3_5-target"
    version = "1.0"

    def hello_result(self):
        r = super().hello_result()
        r["description"] = ("Hugging Face transformers' Qwen3.5 layers as an MTP block, and its Qwen3_5TextModel / "
                            "Qwen3_5MoeTextModel as the hybrid target (rollback by cache snapshots)")
        r["capabilities"]["target"] = True
        r["capabilities"]["targetRouterChoices"] = True   # a MoE target's replies list its routers' experts
        return r

    def load_target(self, directory, layout, identity, options, config):
        if self.unavailable:
            raise E.MtpError(E.UNAVAILABLE, "loadTarget: " + self.unavailable)
        if options:
            raise E.invalid_argument("loadTarget: unknown option(s) %s; this engine takes none (use --device, "
                                     "--dtype)" % ", ".join(sorted(map(str, options))))
        return WireTarget(TorchTarget(directory, identity, self.device, self.dtype_name), self.dtype_name,
                          self.device)


class WireTarget(mtp_wire.TargetModel):
    def __init__(self, target, dtype_name, device):
        self.target = target
        self.numerics = "transformers %s, %s on %s, eager attention, rollback by cache snapshots (%s)" % (
            target.classes, dtype_name, device, target.versions)

    def open_rows(self, checkpoints):
        g = TorchTargetGroup(self.target)
        g.append(checkpoints)
        return g


def smoke(directory, device, dtype_name):
    """Prefill, verify, commit, capture and restore on one target, against numpy_mtp's float64 target."""
    from numpy_mtp.target import HybridTarget
    from mtp_wire.tensor import Tensor
    tt = TorchTarget(directory, "id", device, dtype_name)
    nt = HybridTarget(directory, "id")
    print("transformers target: %s, %s; layers %s" % (tt.classes, tt.versions, tt.s.types), file=sys.stderr)
    rng = np.random.default_rng(7)
    worst = {}

    def nmse(a, b):
        a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
        return float(np.sum((a - b) ** 2) / max(np.sum(b * b), 1e-300))

    def compare(what, x, y):
        worst[what] = max(worst.get(what, 0.0), nmse(x, y))

    gt, gn = TorchTargetGroup(tt), TargetGroup(nt)
    gt.append([None, None])
    gn.append([None, None])
    routed = [0, 0]   # router decisions compared, and those whose expert sets differ from numpy's

    def choices():
        a, b = gt.router_choices(), gn.router_choices()
        if [c[:3] for c in a] != [c[:3] for c in b]:
            raise AssertionError("router choices at different (row, position, layer): %s vs %s" % (a[:3], b[:3]))
        routed[0] += len(a)
        routed[1] += sum(1 for x, y in zip(a, b) if sorted(x[3]) != sorted(y[3]))
    prompt = Tensor.from_numpy(rng.integers(0, tt.s.vocab, (2, 70)).astype(np.int32))
    for a, b in zip(gt.prefill(prompt), gn.prefill(prompt)):
        compare("prefill outputs", a.array(), b.array())
    choices()
    for step in range(6):
        w = 1 + step % 4
        toks = Tensor.from_numpy(rng.integers(0, tt.s.vocab, (2, w)).astype(np.int32))
        for a, b in zip(gt.verify(toks), gn.verify(toks)):
            compare("verify outputs", a.array(), b.array())
        choices()
        acc = [int(rng.integers(0, w)), w - 1]
        gt.commit(acc)
        gn.commit(acc)
        for r in range(2):
            ct, cn = gt.capture(r), gn.capture(r)
            for name in ("conv_windows", "recurrent_states", "keys", "values"):
                compare("state " + name, getattr(ct, name).array(), getattr(cn, name).array())
    cp = gt.capture(0)
    h = TorchTargetGroup(tt)
    h.append([mtp_wire.TargetCheckpoint(cp.schema, cp.processed_tokens, cp.model_identity, cp.conv_windows,
                                        cp.recurrent_states, cp.keys, cp.values, cp.digest)])
    again = h.capture(0)
    print("restore round trip byte-identical: %s" % (again.digest == cp.digest), file=sys.stderr)
    nxt = Tensor.from_numpy(np.array([[5, 6]], dtype=np.int32))
    gt.filter_rows([0])
    compare("restored continues", h.verify(nxt)[0].array(), gt.verify(nxt)[0].array())
    for k, v in sorted(worst.items()):
        print("  %-28s worst NMSE vs numpy f64: %.3g" % (k, v), file=sys.stderr)
    if tt.moe:
        print("  router decisions (row, position, layer) reported: %d, expert sets that differ from numpy's: %d"
              % tuple(routed), file=sys.stderr)
    return 0 if all(v < 1e-6 for v in worst.values()) else 1


def main(argv):
    p = argparse.ArgumentParser(description="transformers' Qwen3.5 text model as an mtp-oracle-wire/1 target engine")
    p.add_argument("--device", default="cpu", help="torch device: cpu, cuda, cuda:1 (default cpu)")
    p.add_argument("--dtype", default="float32", choices=sorted(tb.PROFILES), help="weights and activations")
    p.add_argument("--smoke", metavar="DIR", help="compare one target release with numpy's and exit")
    a = p.parse_args(argv[1:])
    if a.smoke:
        return smoke(a.smoke, a.device, a.dtype)
    return mtp_wire.serve(TransformersTargetEngine(a.device, a.dtype))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
