#!/usr/bin/env python3
"""Hugging Face transformers' own Qwen3.5 layers as an MTP backend, over mtp-oracle-wire/1.

The block's math is transformers' code, unchanged: `Qwen3_5DecoderLayer` (with its `Qwen3_5Attention`, gated,
q_norm/k_norm, `apply_rotary_pos_emb`, `repeat_kv`, eager attention; and `Qwen3_5MLP`), `Qwen3_5RMSNorm` for the
two pre-fc norms and the final norm, `Qwen3_5TextRotaryEmbedding` for cos/sin, and one `DynamicCache` per row, rolled
back with `DynamicCache.crop`. A MoE MTP layer (spec §12) runs `Qwen3_5MoeDecoderLayer` from
`transformers.models.qwen3_5_moe` instead (the same gated attention), whose MLP is `Qwen3_5MoeSparseMoeBlock`
(`Qwen3_5MoeTopKRouter`, `Qwen3_5MoeExperts` with the eager experts loop, the shared `Qwen3_5MoeMLP` and its sigmoid
gate); for a Qwen3-Next model, or a config with `norm_topk_prob` false (Qwen3.5-MoE's router renormalises
regardless, §12.1), the layer's MLP is `Qwen3NextSparseMoeBlock` from `transformers.models.qwen3_next`, whose router
honours the flag. Our experts (any stored layout) are loaded into the block's own parameters. transformers has no
MTP module (its Qwen3.5 models drop `mtp.*` on load), so the thin wrapper around the layer (fc over the
embedding-first concat, spec §1.4) is written here, as vLLM wires it. The model
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


def import_moe(next_block):
    """(Qwen3.5-MoE modeling module, its config class, the Qwen3-Next modeling module and config class or None) for a
    MoE layer, or raises MtpError UNAVAILABLE naming what is missing."""
    try:
        from transformers.models.qwen3_5_moe import modeling_qwen3_5_moe as mm
        from transformers.models.qwen3_5_moe.configuration_qwen3_5_moe import Qwen3_5MoeConfig
    except ImportError as e:
        raise E.MtpError(E.UNAVAILABLE, "load: the model's MTP layer is MoE and this transformers has no "
                                        "models.qwen3_5_moe (%s); pip install 'transformers>=5'" % e)
    if not next_block:
        return mm, Qwen3_5MoeConfig, None, None
    try:
        from transformers.models.qwen3_next import modeling_qwen3_next as mn
        from transformers.models.qwen3_next.configuration_qwen3_next import Qwen3NextConfig
    except ImportError as e:
        raise E.MtpError(E.UNAVAILABLE, "load: the model needs Qwen3-Next's MoE block and this transformers has no "
                                        "models.qwen3_next (%s); pip install 'transformers>=5'" % e)
    return mm, Qwen3_5MoeConfig, mn, Qwen3NextConfig


def set_eager(config, attrs=("_attn_implementation", "_experts_implementation")):
    """The eager attention and the eager experts loop (transformers' plain per-expert code, no grouped kernels)."""
    for attr in attrs:
        try:
            setattr(config, attr, "eager")
        except Exception:  # noqa: BLE001 - some versions keep these behind a property without a setter
            object.__setattr__(config, attr + "_internal", "eager")
        if getattr(config, attr, None) != "eager":
            raise E.incompatible_model("load: could not set %s = 'eager' on transformers' %s (it reads %r)"
                                       % (attr, type(config).__name__, getattr(config, attr, None)))


class TorchLayers:
    """transformers' classes for one loaded model, on one device, in one dtype."""

    def __init__(self, cfg, weights, raw_config, raw_text_config, device, dtype_name):
        torch, mq, Config, DynamicCache, versions = import_transformers()
        self.torch, self.DynamicCache, self.versions = torch, DynamicCache, versions
        self.device = torch.device(device)
        self.dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float64": torch.float64}[dtype_name]
        vocab = weights.embed.shape[0]
        moe = weights.moe
        self.classes = "Qwen3_5DecoderLayer"
        if moe is None:
            inter = weights.t["layers.0.mlp.gate_proj"].shape[0]
            self.tcfg = self._text_config(Config, cfg, raw_text_config, vocab, {"intermediate_size": inter},
                                          "qwen3_5", "Qwen3_5ForConditionalGeneration")
            Layer, Norm, Rotary = mq.Qwen3_5DecoderLayer, mq.Qwen3_5RMSNorm, mq.Qwen3_5TextRotaryEmbedding
        else:
            # Qwen3-Next's block when the model is Qwen3-Next or the flag is off (Qwen3.5-MoE's router ignores it)
            kind = raw_config.get("model_type"), raw_text_config.get("model_type")
            next_block = "qwen3_next" in kind or not cfg.norm_topk_prob
            mm, MoeConfig, mn, NextConfig = import_moe(next_block)
            fields = {"num_experts": moe.experts, "num_experts_per_tok": cfg.top_k,
                      "moe_intermediate_size": moe.gate.shape[1],
                      "shared_expert_intermediate_size": moe.shared_gate.shape[0],
                      "norm_topk_prob": cfg.norm_topk_prob, "router_aux_loss_coef": 0.001,
                      "output_router_logits": False, "attn_output_gate": True}
            self.tcfg = self._text_config(MoeConfig, cfg, raw_text_config, vocab, fields, "qwen3_5_moe",
                                          "Qwen3_5MoeForConditionalGeneration")
            got = (self.tcfg.num_experts, self.tcfg.num_experts_per_tok, self.tcfg.moe_intermediate_size,
                   self.tcfg.shared_expert_intermediate_size)
            if got != (moe.experts, cfg.top_k, moe.gate.shape[1], moe.shared_gate.shape[0]):
                raise E.incompatible_model("load: transformers read the MoE config as (E, K, I_e, I_s) = %s, "
                                           "expected %s" % (got, (moe.experts, cfg.top_k, moe.gate.shape[1],
                                                                  moe.shared_gate.shape[0])))
            Layer, Norm, Rotary = mm.Qwen3_5MoeDecoderLayer, mm.Qwen3_5MoeRMSNorm, mm.Qwen3_5MoeTextRotaryEmbedding
            self.classes = "Qwen3_5MoeDecoderLayer with Qwen3_5MoeSparseMoeBlock"
            if next_block:
                self.next_cfg = self._next_config(NextConfig, cfg, fields)
                self.classes = "Qwen3_5MoeDecoderLayer with Qwen3NextSparseMoeBlock"
        h, eps = cfg.hidden, cfg.eps

        class MtpBlock(torch.nn.Module):
            """The thin MTP wrapper: y = norm(layer(fc(cat(pre_fc_norm_embedding(E), pre_fc_norm_hidden(Hin)))))."""

            def __init__(self, tcfg):
                super().__init__()
                self.fc = torch.nn.Linear(2 * h, h, bias=False)
                self.pre_fc_norm_embedding = Norm(h, eps=eps)
                self.pre_fc_norm_hidden = Norm(h, eps=eps)
                self.layers = torch.nn.ModuleList([Layer(tcfg, layer_idx=0)])
                self.norm = Norm(h, eps=eps)

        self.block = MtpBlock(self.tcfg)
        if moe is not None and next_block:
            self.block.layers[0].mlp = mn.Qwen3NextSparseMoeBlock(self.next_cfg)
        # transformers' norms are zero-centred (gain 1 + w); the loader holds full gains, so w = gain - 1
        state = {}
        for n in nb.NORMS:
            state[n] = torch.from_numpy(weights.t[n] - 1.0)
        for p in nb.ATTENTION_LINEARS if moe is not None else nb.LINEARS:
            state[p + ".weight"] = torch.from_numpy(weights.t[p])
        if moe is not None:
            state.update(self._moe_state(torch, moe, set(self.block.state_dict())))
        self.block.load_state_dict(state, strict=True)
        self.block.to(device=self.device, dtype=self.dtype).eval()
        self.rotary = Rotary(config=self.tcfg).to(self.device)
        self.embed = torch.from_numpy(weights.embed).to(device=self.device, dtype=self.dtype)
        self.head = torch.from_numpy(weights.head).to(device=self.device, dtype=self.dtype)
        params = inspect.signature(Layer.forward).parameters
        self.cache_kwarg = "past_key_values" if "past_key_values" in params else "past_key_value"

    @staticmethod
    def _moe_state(torch, moe, keys):
        """Our experts into transformers' MoE block: the router `gate.weight`, the shared expert and its gate, and
        the routed experts fused (`experts.gate_up_proj` [E, 2·I_e, H], gate rows first, `experts.down_proj`) or per
        expert (`experts.{e}.*_proj.weight`), whichever the block holds."""
        mlp = "layers.0.mlp."
        state = {mlp + "gate.weight": moe.router, mlp + "shared_expert.gate_proj.weight": moe.shared_gate,
                 mlp + "shared_expert.up_proj.weight": moe.shared_up,
                 mlp + "shared_expert.down_proj.weight": moe.shared_down,
                 mlp + "shared_expert_gate.weight": moe.shared_gate_w}
        if mlp + "experts.gate_up_proj" in keys:
            state[mlp + "experts.gate_up_proj"] = np.concatenate([moe.gate, moe.up], axis=1)
            state[mlp + "experts.down_proj"] = moe.down
        elif mlp + "experts.0.gate_proj.weight" in keys:
            for e in range(moe.experts):
                state[mlp + "experts.%d.gate_proj.weight" % e] = moe.gate[e]
                state[mlp + "experts.%d.up_proj.weight" % e] = moe.up[e]
                state[mlp + "experts.%d.down_proj.weight" % e] = moe.down[e]
        else:
            raise E.incompatible_model("load: transformers' MoE block holds neither fused nor per-expert experts: "
                                       "%s" % sorted(k for k in keys if k.startswith(mlp + "experts."))[:4])
        return {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in state.items()}

    @staticmethod
    def _next_config(NextConfig, cfg, fields):
        """A one-layer Qwen3-Next config carrying the MoE fields, for Qwen3NextSparseMoeBlock."""
        try:
            ncfg = NextConfig(hidden_size=cfg.hidden, num_hidden_layers=1, layer_types=["full_attention"],
                              num_attention_heads=cfg.heads, num_key_value_heads=cfg.kv_heads, head_dim=cfg.head_dim,
                              hidden_act="silu", rms_norm_eps=cfg.eps, decoder_sparse_step=1, mlp_only_layers=[],
                              **{k: v for k, v in fields.items() if k != "attn_output_gate"})
        except Exception as e:  # noqa: BLE001
            raise E.incompatible_model("load: transformers refused the Qwen3-Next MoE config: %r" % e)
        set_eager(ncfg, ("_experts_implementation",))
        if (ncfg.num_experts, ncfg.num_experts_per_tok, ncfg.norm_topk_prob) != (
                fields["num_experts"], fields["num_experts_per_tok"], fields["norm_topk_prob"]):
            raise E.incompatible_model("load: transformers read the Qwen3-Next MoE config differently: %s"
                                       % ((ncfg.num_experts, ncfg.num_experts_per_tok, ncfg.norm_topk_prob),))
        return ncfg

    @staticmethod
    def _text_config(Config, cfg, raw_text, vocab, mlp_fields, model_type, architecture):
        """A one-layer, full-attention Qwen3.5 (or Qwen3.5-MoE) text config of the block's shape, read by
        transformers' own Config.from_pretrained from a config.json written here (the way a user loads one); the
        text config class itself is the fallback."""
        rope = dict(raw_text.get("rope_parameters") or {})
        prf = raw_text.get("partial_rotary_factor", rope.get("partial_rotary_factor", 1.0))
        rope.update({"rope_type": "default", "rope_theta": cfg.theta, "partial_rotary_factor": prf})
        text = dict(model_type=model_type + "_text", vocab_size=vocab, hidden_size=cfg.hidden,
                    num_hidden_layers=1, layer_types=["full_attention"], full_attention_interval=1,
                    num_attention_heads=cfg.heads, num_key_value_heads=cfg.kv_heads, head_dim=cfg.head_dim,
                    hidden_act="silu", rms_norm_eps=cfg.eps, max_position_embeddings=262144, attention_bias=False,
                    attention_dropout=0.0, tie_word_embeddings=False, partial_rotary_factor=prf,
                    rope_parameters=rope, **mlp_fields)
        errors = []
        try:
            import json
            import tempfile
            with tempfile.TemporaryDirectory() as tmp:
                with open(os.path.join(tmp, "config.json"), "w") as f:
                    json.dump({"architectures": [architecture], "model_type": model_type,
                               "tie_word_embeddings": False, "text_config": text}, f)
                tcfg = Config.from_pretrained(tmp).text_config
        except Exception as e:  # noqa: BLE001 - fall back to the text config class, and say why on stderr
            errors.append("%s.from_pretrained: %r" % (Config.__name__, e))
            try:
                tcfg = Config.sub_configs["text_config"](**{k: v for k, v in text.items() if k != "model_type"})
            except Exception as e2:  # noqa: BLE001
                errors.append("text config class(**kwargs): %r" % e2)
                raise E.incompatible_model("load: transformers refused the block's config: " + "; ".join(errors))
            sys.stderr.write("transformers_backend: %s; using the text config class\n" % errors[0])
        got = (tcfg.hidden_size, tcfg.num_attention_heads, tcfg.num_key_value_heads, tcfg.head_dim,
               list(tcfg.layer_types))
        want = (cfg.hidden, cfg.heads, cfg.kv_heads, cfg.head_dim, ["full_attention"])
        if got != want:
            raise E.incompatible_model("load: transformers read the config as %s, expected %s" % (got, want))
        if "num_experts" in mlp_fields:
            set_eager(tcfg)
        else:
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
    """forward(cache, ids, hin) and log_probs(y) as numpy_backend.Rows calls them, computed by transformers. For a
    MoE layer, `last_experts` holds the last forward's (KV position, chosen experts), read off the router's output
    (its integer top-k indices, in torch.topk's descending order) by a forward hook; a router that returns no
    indices leaves it empty, and the kit then compares this backend on its outputs only."""

    def __init__(self, layers):
        self.L = layers
        self.last_experts = []
        self._indices = []
        gate = getattr(getattr(layers.block.layers[0], "mlp", None), "gate", None)
        if gate is not None and hasattr(layers.block.layers[0].mlp, "shared_expert_gate"):
            gate.register_forward_hook(self._keep_indices)

    def _keep_indices(self, module, args, out):
        ints = [o for o in (out if isinstance(out, tuple) else (out,)) if not o.is_floating_point()]
        if ints:
            self._indices.append(ints[0].detach().to("cpu").numpy())

    def forward(self, cache, ids, hin):
        L, t = self.L, self.L.torch
        s, past = len(ids), cache.length
        self.last_experts, self._indices = [], []
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
        if self._indices:
            idx = self._indices[-1].reshape(s, -1)
            self.last_experts = [(past + i, [int(e) for e in idx[i]]) for i in range(s)]
            self._indices = []
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
        self.layers = TorchLayers(self.cfg, self.weights, raw, text, device, dtype_name)
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

    def numerics(self, classes="Qwen3_5DecoderLayer"):
        return "transformers %s, %s on %s, eager attention (%s)" % (classes, self.dtype_name, self.device,
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
                              "layouts": ["hf", "companion"], "maxRows": 64, "maxDepth": nb.MAX_DEPTH,
                              "routerChoices": True}}
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
        wire.numerics = self.numerics(model.layers.classes)
        return wire


def self_check(device, dtype_name):
    """The external float64 transformers references (reference/src/test/data/qwen35-mtp-transformers, dense, and
    qwen35-moe-mtp-transformers, MoE) through this backend: prefill, a greedy round of depth 4, a commit of 1 and the
    next round's first step; for the MoE set also the prefill's chosen experts as the wire reports them."""
    data = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "reference", "src", "test",
                        "data")
    greedy = mtp_wire.RowSampler(0.0, 0, 1.0, 0)
    worst, ok = 0.0, True
    for ref in ("qwen35-mtp-transformers", "qwen35-moe-mtp-transformers"):
        for variant in ("float32", "bfloat16"):
            d = os.path.join(data, ref, variant)
            ex = {k: v[2] for k, v in nb.read_safetensors(os.path.join(d, "inputs-and-expected.safetensors")).items()}
            model = TorchModel(d, "self-check", device, dtype_name)
            g = model.open_rows([None])
            f32 = mtp_wire.Tensor.from_numpy
            g.prefill(f32(ex["prompt_tokens"][None].astype(np.int32)),
                      f32(ex["target_hidden"][None].astype(np.float32)))
            checks = [("prefill K", g.rows[0].kv.keys(), ex["prefill_kv_k"]),
                      ("prefill V", g.rows[0].kv.values(), ex["prefill_kv_v"])]
            experts = "no router"
            if model.weights.moe is not None:
                if g.choices:   # what the wire reports: (row, position, experts) per forward row
                    got = [sorted(e) for _, _, e in g.choices]
                    want = [sorted(r) for r in ex["trace_topk_indices"].tolist()]
                    ok &= got == want
                    experts = "prefill experts %s" % ("equal" if got == want else "DIFFER: %s vs %s" % (got, want))
                else:
                    experts = "prefill experts not observable (the router returns no indices)"
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
            print("%s %s weights (%s): tokens %s %s (expected %s, rollback %s); %s" % (
                ref, variant, model.layers.classes, tokens + rb, "equal" if same else "DIFFER",
                list(ex["draft_tokens"]), int(ex["rollback_token"][0]), experts))
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
