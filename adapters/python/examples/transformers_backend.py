#!/usr/bin/env python3
"""Hugging Face transformers' own Qwen3.5 layers as an MTP backend, over mtp-oracle-wire/1.

The block's math is transformers' code, unchanged: `Qwen3_5DecoderLayer` (with its `Qwen3_5Attention`, gated,
q_norm/k_norm, `apply_rotary_pos_emb`, `repeat_kv`, eager attention; and `Qwen3_5MLP`), `Qwen3_5RMSNorm` for the
two pre-fc norms and the final norm, `Qwen3_5TextRotaryEmbedding` for cos/sin, and one `DynamicCache` per row, rolled
back with `DynamicCache.crop`. transformers has no MTP module (its Qwen3.5 models drop `mtp.*` on load), so the thin
wrapper around the layer (fc over the embedding-first concat, spec §1.4) is written here, as vLLM wires it. The model
directory is read by numpy_backend's loader (both layouts, MLX affine weights dequantized), and the row lifecycle,
validation and the seeded sampler (SPEC.md's stream; transformers has none) are numpy_backend's too: what this
backend puts on trial is transformers' layer math, in the dtype and on the device chosen.

    python3 transformers_backend.py [--device cpu|cuda] [--dtype float32|bfloat16|float64]
    python3 transformers_backend.py --self-check [--device cuda]    # against the external float64 reference

    mtp tck --backend exec:'python3 adapters/python/examples/transformers_backend.py --device cuda'

Without torch or transformers this still speaks the protocol and reports itself unavailable, with the reason.
"""

import argparse
import inspect
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy_backend as nb  # noqa: E402
import mtp_wire  # noqa: E402
from mtp_wire import errors as E  # noqa: E402

PROFILES = {"float32": ("f32", 1e-4, 1e-9, 0), "float64": ("f32", 1e-4, 1e-9, 0),
            "bfloat16": ("bf16", 0.15, 2e-3, 1e-5)}


def import_transformers():
    """(torch, modeling module, text config class, DynamicCache, versions) or raises ImportError with the reason."""
    try:
        import torch
    except ImportError as e:
        raise ImportError("torch is not installed (%s); pip install torch 'transformers>=5'" % e)
    try:
        import transformers
        from transformers.cache_utils import DynamicCache
        from transformers.models.qwen3_5 import modeling_qwen3_5 as mq
        from transformers.models.qwen3_5.configuration_qwen3_5 import Qwen3_5Config
    except ImportError as e:
        raise ImportError("transformers with models.qwen3_5 is not installed (%s); pip install 'transformers>=5'" % e)
    return torch, mq, Qwen3_5Config, DynamicCache, "torch %s, transformers %s" % (torch.__version__,
                                                                                  transformers.__version__)


class TorchLayers:
    """transformers' classes for one loaded model, on one device, in one dtype."""

    def __init__(self, cfg, weights, raw_text_config, device, dtype_name):
        torch, mq, Config, DynamicCache, versions = import_transformers()
        self.torch, self.DynamicCache, self.versions = torch, DynamicCache, versions
        self.device = torch.device(device)
        self.dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float64": torch.float64}[dtype_name]
        inter = weights.t["layers.0.mlp.gate_proj"].shape[0]
        vocab = weights.embed.shape[0]
        self.tcfg = self._text_config(Config, cfg, raw_text_config, inter, vocab)
        h, eps = cfg.hidden, cfg.eps

        class MtpBlock(torch.nn.Module):
            """The thin MTP wrapper: y = norm(layer(fc(cat(pre_fc_norm_embedding(E), pre_fc_norm_hidden(Hin)))))."""

            def __init__(self, tcfg):
                super().__init__()
                self.fc = torch.nn.Linear(2 * h, h, bias=False)
                self.pre_fc_norm_embedding = mq.Qwen3_5RMSNorm(h, eps=eps)
                self.pre_fc_norm_hidden = mq.Qwen3_5RMSNorm(h, eps=eps)
                self.layers = torch.nn.ModuleList([mq.Qwen3_5DecoderLayer(tcfg, layer_idx=0)])
                self.norm = mq.Qwen3_5RMSNorm(h, eps=eps)

        self.block = MtpBlock(self.tcfg)
        # transformers' norms are zero-centred (gain 1 + w); the loader holds full gains, so w = gain - 1
        state = {}
        for n in nb.NORMS:
            state[n] = torch.from_numpy(weights.t[n] - 1.0)
        for p in nb.LINEARS:
            state[p + ".weight"] = torch.from_numpy(weights.t[p])
        self.block.load_state_dict(state, strict=True)
        self.block.to(device=self.device, dtype=self.dtype).eval()
        self.rotary = mq.Qwen3_5TextRotaryEmbedding(config=self.tcfg).to(self.device)
        self.embed = torch.from_numpy(weights.embed).to(device=self.device, dtype=self.dtype)
        self.head = torch.from_numpy(weights.head).to(device=self.device, dtype=self.dtype)
        params = inspect.signature(mq.Qwen3_5DecoderLayer.forward).parameters
        self.cache_kwarg = "past_key_values" if "past_key_values" in params else "past_key_value"

    @staticmethod
    def _text_config(Config, cfg, raw_text, inter, vocab):
        """A one-layer, full-attention Qwen3.5 text config of the block's shape, read by transformers' own
        Qwen3_5Config.from_pretrained from a config.json written here (the way a user loads one); the text config
        class itself is the fallback."""
        rope = dict(raw_text.get("rope_parameters") or {})
        prf = raw_text.get("partial_rotary_factor", rope.get("partial_rotary_factor", 1.0))
        rope.update({"rope_type": "default", "rope_theta": cfg.theta, "partial_rotary_factor": prf})
        text = dict(model_type="qwen3_5_text", vocab_size=vocab, hidden_size=cfg.hidden, intermediate_size=inter,
                    num_hidden_layers=1, layer_types=["full_attention"], full_attention_interval=1,
                    num_attention_heads=cfg.heads, num_key_value_heads=cfg.kv_heads, head_dim=cfg.head_dim,
                    hidden_act="silu", rms_norm_eps=cfg.eps, max_position_embeddings=262144, attention_bias=False,
                    attention_dropout=0.0, tie_word_embeddings=False, partial_rotary_factor=prf,
                    rope_parameters=rope)
        errors = []
        try:
            import json
            import tempfile
            with tempfile.TemporaryDirectory() as tmp:
                with open(os.path.join(tmp, "config.json"), "w") as f:
                    json.dump({"architectures": ["Qwen3_5ForConditionalGeneration"], "model_type": "qwen3_5",
                               "tie_word_embeddings": False, "text_config": text}, f)
                tcfg = Config.from_pretrained(tmp).text_config
        except Exception as e:  # noqa: BLE001 - fall back to the text config class, and say why on stderr
            errors.append("Qwen3_5Config.from_pretrained: %r" % e)
            try:
                tcfg = Config.sub_configs["text_config"](**{k: v for k, v in text.items() if k != "model_type"})
            except Exception as e2:  # noqa: BLE001
                errors.append("Qwen3_5TextConfig(**kwargs): %r" % e2)
                raise E.incompatible_model("load: transformers refused the block's config: " + "; ".join(errors))
            sys.stderr.write("transformers_backend: %s; using the text config class\n" % errors[0])
        got = (tcfg.hidden_size, tcfg.num_attention_heads, tcfg.num_key_value_heads, tcfg.head_dim,
               list(tcfg.layer_types))
        want = (cfg.hidden, cfg.heads, cfg.kv_heads, cfg.head_dim, ["full_attention"])
        if got != want:
            raise E.incompatible_model("load: transformers read the config as %s, expected %s" % (got, want))
        tcfg._attn_implementation = "eager"
        return tcfg

    def new_dynamic_cache(self):
        try:
            return self.DynamicCache(config=self.tcfg)
        except TypeError:
            return self.DynamicCache()


class TorchRowCache:
    """One row's KV in a transformers DynamicCache; shortening it is DynamicCache.crop (a negative count removes
    that many positions from the end)."""

    def __init__(self, layers, keys=None, values=None):
        self.L = layers
        self.dc = layers.new_dynamic_cache()
        if keys is not None:
            t = layers.torch
            k = t.from_numpy(np.ascontiguousarray(keys)).to(device=layers.device, dtype=layers.dtype)[None]
            v = t.from_numpy(np.ascontiguousarray(values)).to(device=layers.device, dtype=layers.dtype)[None]
            self.dc.update(k, v, 0)

    @property
    def length(self):
        return int(self.dc.get_seq_length(0))

    @length.setter
    def length(self, n):
        cur = self.length
        if n > cur:
            raise RuntimeError("a DynamicCache cannot grow back from %d to %d positions" % (cur, n))
        if n < cur:
            self.dc.crop(n - cur)
        if self.length != n:
            raise RuntimeError("DynamicCache.crop left %d positions, expected %d" % (self.length, n))

    def _kv(self):
        if hasattr(self.dc, "layers"):
            layer = self.dc.layers[0]
            return layer.keys, layer.values
        return self.dc.key_cache[0], self.dc.value_cache[0]

    def keys(self):
        if self.length == 0:
            return np.zeros((self.L.tcfg.num_key_value_heads, 0, self.L.tcfg.head_dim))
        return self._kv()[0][0].to(self.L.torch.float64).cpu().numpy()

    def values(self):
        if self.length == 0:
            return np.zeros((self.L.tcfg.num_key_value_heads, 0, self.L.tcfg.head_dim))
        return self._kv()[1][0].to(self.L.torch.float64).cpu().numpy()


class TorchBlock:
    """forward(cache, ids, hin) and log_probs(y) as numpy_backend.Rows calls them, computed by transformers."""

    def __init__(self, layers):
        self.L = layers

    def forward(self, cache, ids, hin):
        L, t = self.L, self.L.torch
        s, past = len(ids), cache.length
        with t.no_grad():
            pos = t.arange(past, past + s, device=L.device)
            embeds = L.embed[t.as_tensor(np.asarray(ids), dtype=t.long, device=L.device)][None]
            hidden = t.from_numpy(np.ascontiguousarray(hin)).to(device=L.device, dtype=L.dtype)[None]
            position_ids = pos.view(1, 1, -1).expand(3, 1, -1)   # text only: temporal = height = width
            cos, sin = L.rotary(embeds, position_ids)
            allowed = t.arange(past + s, device=L.device)[None, :] <= (past + t.arange(s, device=L.device))[:, None]
            mask = t.zeros(s, past + s, dtype=L.dtype, device=L.device)
            mask[~allowed] = t.finfo(L.dtype).min
            b = L.block
            x = b.fc(t.cat([b.pre_fc_norm_embedding(embeds), b.pre_fc_norm_hidden(hidden)], dim=-1))
            out = b.layers[0](x, position_embeddings=(cos, sin), attention_mask=mask[None, None],
                              position_ids=pos[None], **{L.cache_kwarg: cache.dc})
            if isinstance(out, tuple):
                out = out[0]
            y = b.norm(out)
        return y[0].to(t.float64).cpu().numpy()

    def log_probs(self, y):
        L, t = self.L, self.L.torch
        with t.no_grad():
            yy = t.from_numpy(np.ascontiguousarray(y)).to(device=L.device, dtype=L.dtype)
            logits = L.head @ yy
            return t.log_softmax(logits.float(), dim=-1).cpu().numpy().astype(np.float64)


class TorchModel(nb.Model):
    def __init__(self, path, identity, device, dtype_name):
        self.cfg, self.weights = nb.load_model(path)
        raw = nb.read_json(os.path.join(path, "config.json"))
        text = raw.get("text_config") if isinstance(raw.get("text_config"), dict) else raw
        self.layers = TorchLayers(self.cfg, self.weights, text, device, dtype_name)
        self.block = TorchBlock(self.layers)
        self.vocab = self.weights.embed.shape[0]
        self.identity = identity

    def new_cache(self, keys=None, values=None):
        return TorchRowCache(self.layers, keys, values)


class TransformersEngine(mtp_wire.Engine):
    name = "transformers-qwen3_5"
    version = "1.0"

    def __init__(self, device, dtype_name):
        self.device, self.dtype_name = device, dtype_name
        self.unavailable = None
        self.versions = ""
        try:
            imported = import_transformers()
            torch, self.versions = imported[0], imported[4]
            if device.startswith("cuda") and not torch.cuda.is_available():
                self.unavailable = "--device %s: torch %s sees no CUDA device" % (device, torch.__version__)
        except ImportError as e:
            self.unavailable = str(e)

    def numerics(self):
        return "transformers Qwen3_5DecoderLayer, %s on %s, eager attention (%s)" % (self.dtype_name, self.device,
                                                                                   self.versions or "not installed")

    def hello_result(self):
        name, gap, kv, hid = PROFILES[self.dtype_name]
        r = {"description": "Hugging Face transformers' Qwen3.5 layers as an MTP block",
             "numerics": self.numerics(),
             "profiles": [{"label": "transformers-%s-%s" % (self.dtype_name, self.device.split(":")[0]),
                           "options": {},
                           "tolerance": {"name": name, "tokenGap": gap, "kvNmse": kv, "hiddenNmse": hid}}],
             "capabilities": {"seededSampling": True, "tapDtypes": ["F32", "F16", "BF16"],
                              "weightDtypes": ["F32", "F16", "BF16"],
                              "quantization": [{"bits": b, "groupSizes": [32, 64, 128]} for b in (2, 3, 4, 5, 6, 8)],
                              "layouts": ["hf", "companion"], "maxRows": 64, "maxDepth": nb.MAX_DEPTH}}
        if self.unavailable:
            r["unavailable"] = self.unavailable
        return r

    def load(self, directory, layout, identity, options, config):
        if self.unavailable:
            raise E.MtpError(E.UNAVAILABLE, "load: " + self.unavailable)
        if options:
            raise E.invalid_argument("load: unknown option(s) %s; this engine takes none (use --device, --dtype)"
                                     % ", ".join(sorted(map(str, options))))
        if not isinstance(directory, str):
            raise E.invalid_argument("load: directory = %r, expected a path" % (directory,))
        model = TorchModel(directory, identity, self.device, self.dtype_name)
        wire = nb.WireModel(model)
        wire.numerics = self.numerics()
        return wire


def self_check(device, dtype_name):
    """The external float64 transformers reference (reference/src/test/data/qwen35-mtp-transformers) through this
    backend: prefill, a greedy round of depth 4, a commit of 1 and the next round's first step."""
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "reference", "src", "test",
                        "data", "qwen35-mtp-transformers")
    greedy = mtp_wire.RowSampler(0.0, 0, 1.0, 0)
    worst, ok = 0.0, True
    for variant in ("float32", "bfloat16"):
        d = os.path.join(root, variant)
        ex = {k: v[2] for k, v in nb.read_safetensors(os.path.join(d, "inputs-and-expected.safetensors")).items()}
        g = TorchModel(d, "self-check", device, dtype_name).open_rows([None])
        f32 = mtp_wire.Tensor.from_numpy
        g.prefill(f32(ex["prompt_tokens"][None].astype(np.int32)), f32(ex["target_hidden"][None].astype(np.float32)))
        checks = [("prefill K", g.rows[0].kv.keys(), ex["prefill_kv_k"]),
                  ("prefill V", g.rows[0].kv.values(), ex["prefill_kv_v"])]
        tokens = g.draft([int(ex["pending_token"][0])], 4, [0], [greedy])[0]
        checks += [("round K", g.rows[0].kv.keys(), ex["round_kv_k"])]
        ctx = np.zeros((1, 5, ex["verify_hidden"].shape[0]), np.float32)
        ctx[0, 1] = ex["verify_hidden"]
        g.commit([1], f32(ctx))
        rb = g.draft([int(ex["rollback_input_token"][0])], 1, [0], [greedy])[0]
        checks += [("rollback K", g.rows[0].kv.keys(), ex["rollback_kv_k"]),
                   ("rollback V", g.rows[0].kv.values(), ex["rollback_kv_v"])]
        same = tokens == [int(x) for x in ex["draft_tokens"]] and rb == [int(ex["rollback_token"][0])]
        ok &= same
        print("%s weights: tokens %s %s (expected %s, rollback %s)" % (variant, tokens + rb, "equal" if same else
                                                                        "DIFFER", list(ex["draft_tokens"]),
                                                                        int(ex["rollback_token"][0])))
        for name, got, want in checks:
            e = float(np.sum((got - want) ** 2) / np.sum(want ** 2))
            worst = max(worst, e)
            print("  %-11s NMSE %.3e" % (name, e))
    bound = PROFILES[dtype_name][2]
    print("worst K/V NMSE %.3e, profile %s bound %.0e: %s" % (worst, PROFILES[dtype_name][0], bound,
                                                             "OK" if ok and worst <= bound else "FAIL"))
    return 0 if ok and worst <= bound else 1


def main(argv):
    p = argparse.ArgumentParser(description="transformers' Qwen3.5 layers as an mtp-oracle-wire/1 engine")
    p.add_argument("--device", default="cpu", help="torch device: cpu, cuda, cuda:1 (default cpu)")
    p.add_argument("--dtype", default="float32", choices=sorted(PROFILES), help="weights and activations")
    p.add_argument("--self-check", action="store_true", help="check against the external reference and exit")
    a = p.parse_args(argv[1:])
    if a.self_check:
        try:
            import_transformers()
        except ImportError as e:
            print("self-check: " + str(e), file=sys.stderr)
            return 3
        return self_check(a.device, a.dtype)
    return mtp_wire.serve(TransformersEngine(a.device, a.dtype))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
