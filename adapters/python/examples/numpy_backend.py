#!/usr/bin/env python3
"""A second, independent implementation of the Qwen3.5 MTP draft block and its row lifecycle, in numpy float64,
written from conformance/spec/mtp-behavior.md (cited as §N) and conformance/SPEC.md (the seeded sampling stream),
served over mtp-oracle-wire/1 with the mtp_wire SDK:

    mtp tck --backend exec:'python3 adapters/python/examples/numpy_backend.py'

Everything is computed in float64 from the stored weights (BF16/F16/F32 widen exactly; MLX affine weights are
dequantized in float64); log-probs are rounded to float32 before sampling, as SPEC.md §6 takes them. Checkpoints are
F32. Each row owns an unpadded KV cache, so a row's result never depends on the other rows (§11.10).
The engine claims the `f32` tolerance profile.
"""

import hashlib
import json
import math
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import mtp_wire  # noqa: E402
from mtp_wire import errors as E  # noqa: E402
from mtp_wire.server import Checkpoint  # noqa: E402
from mtp_wire.tensor import Tensor, bf16_to_f32  # noqa: E402

ENGINE_NAME = "numpy-mtp"
ENGINE_VERSION = "1.0"
NUMERICS = "numpy float64 (weights widened exactly, affine dequantized in float64; float32 log-probs for sampling)"
SCHEMA = "qwen-mtp-v1"
MAX_DEPTH = 64          # the deepest round a call may ask for (api RowContract.MAX_DEPTH)
MIN_TEMPERATURE = 1e-30  # below it f32(1/T) times a log-prob overflows (api RowSampler.MIN_TEMPERATURE)

# ---------------------------------------------------------------------------------------------------------------
# safetensors (8-byte little-endian header length, JSON header, raw little-endian data)

_ST_DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "BF16": "<u2", "I64": "<i8", "I32": "<i4", "I16": "<i2",
              "I8": "i1", "U64": "<u8", "U32": "<u4", "U16": "<u2", "U8": "u1", "BOOL": "?"}


def read_safetensors(path):
    """name -> (dtype, shape, numpy array of the raw elements; BF16 as uint16)."""
    try:
        with open(path, "rb") as f:
            blob = f.read()
    except OSError as e:
        raise E.malformed_file("load: cannot read %s: %s" % (path, e))
    if len(blob) < 8:
        raise E.malformed_file("load: %s is %d bytes, too short for a safetensors header" % (path, len(blob)))
    (n,) = struct.unpack("<Q", blob[:8])
    if n > len(blob) - 8:
        raise E.malformed_file("load: %s header length %d exceeds the file (%d bytes)" % (path, n, len(blob)))
    try:
        header = json.loads(blob[8:8 + n].decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise E.malformed_file("load: %s has a malformed JSON header: %s" % (path, e))
    if not isinstance(header, dict):
        raise E.malformed_file("load: %s header is not a JSON object" % path)
    base = 8 + n
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        try:
            dtype, shape, (begin, end) = info["dtype"], [int(s) for s in info["shape"]], info["data_offsets"]
        except (KeyError, TypeError, ValueError):
            raise E.malformed_file("load: %s tensor '%s' has a malformed header entry" % (path, name))
        if dtype not in _ST_DTYPES:
            raise E.malformed_file("load: %s tensor '%s' has unsupported dtype %s" % (path, name, dtype))
        npd = np.dtype(_ST_DTYPES[dtype])
        count = int(np.prod(shape)) if shape else 1
        if not (0 <= begin <= end <= len(blob) - base) or end - begin != count * npd.itemsize:
            raise E.malformed_file("load: %s tensor '%s' data [%d, %d) does not hold %s %s" % (path, name, begin,
                                                                                               end, dtype, shape))
        arr = np.frombuffer(blob, dtype=npd, count=count, offset=base + begin).reshape(shape)
        out[name] = (dtype, shape, arr)
    return out


def to_f64(entry, name):
    dtype, _, arr = entry
    if dtype == "BF16":
        return bf16_to_f32(arr).astype(np.float64).reshape(arr.shape)
    if dtype in ("F64", "F32", "F16"):
        return arr.astype(np.float64)
    raise E.incompatible_model("load: tensor '%s' has dtype %s, expected a float dtype (spec §1.2)" % (name, dtype))


def to_f32(entry, name):
    dtype, _, arr = entry
    if dtype == "BF16":
        return bf16_to_f32(arr).reshape(arr.shape)
    if dtype in ("F64", "F32", "F16"):
        return arr.astype(np.float32)
    raise E.incompatible_model("load: tensor '%s' has dtype %s, expected a float dtype (spec §1.2)" % (name, dtype))


# ---------------------------------------------------------------------------------------------------------------
# model directory: config (§1.3), layouts (§1.6, §11.4), MLX affine quantization (§2, §11.5)

NORMS = ("pre_fc_norm_embedding.weight", "pre_fc_norm_hidden.weight", "layers.0.input_layernorm.weight",
         "layers.0.self_attn.q_norm.weight", "layers.0.self_attn.k_norm.weight",
         "layers.0.post_attention_layernorm.weight", "norm.weight")
LINEARS = ("fc", "layers.0.self_attn.q_proj", "layers.0.self_attn.k_proj", "layers.0.self_attn.v_proj",
           "layers.0.self_attn.o_proj", "layers.0.mlp.gate_proj", "layers.0.mlp.up_proj", "layers.0.mlp.down_proj")
EMBED_NAMES = ("model.language_model.embed_tokens.weight", "model.embed_tokens.weight",
               "language_model.model.embed_tokens.weight", "embed_tokens.weight")
HEAD_NAMES = ("lm_head.weight", "language_model.lm_head.weight")


def read_json(path):
    try:
        with open(path, "rb") as f:
            return json.loads(f.read().decode("utf-8"))
    except OSError as e:
        raise E.incompatible_model("load: cannot read %s: %s (spec §1.3)" % (path, e))
    except (UnicodeDecodeError, ValueError) as e:
        raise E.malformed_file("load: %s is not valid JSON: %s" % (path, e))


def load_store(directory, exclude=()):
    """Every *.safetensors file of a directory (sharded or not): name -> entry, plus the file list."""
    try:
        files = sorted(f for f in os.listdir(directory) if f.endswith(".safetensors") and f not in exclude)
    except OSError as e:
        raise E.incompatible_model("load: cannot list %s: %s" % (directory, e))
    store = {}
    for f in files:
        for name, entry in read_safetensors(os.path.join(directory, f)).items():
            if name in store:
                raise E.malformed_file("load: tensor '%s' appears in two shards of %s" % (name, directory))
            store[name] = entry
    return store, files


class Quant:
    """§2: `quantization` (or `quantization_config`) defaults and per-module overrides (exact module paths,
    `mtp.`-prefixed keys normalised, §11.5); `false` means not quantized."""

    def __init__(self, q):
        self.defaults = {}
        self.overrides = {}
        if isinstance(q, dict):
            for k, v in q.items():
                if isinstance(v, dict) or v is False:
                    key = k[len("mtp."):] if k.startswith("mtp.") else k
                    self.overrides[key] = v
                else:
                    self.defaults[k] = v
        self.present = isinstance(q, dict)

    def spec(self, path):
        if not self.present:
            return None
        o = self.overrides.get(path)
        if o is False:
            return None
        s = dict(self.defaults)
        if isinstance(o, dict):
            s.update(o)
        if "bits" not in s or "group_size" not in s:
            return None
        return int(s["bits"]), int(s["group_size"]), s.get("mode", "affine")


def dequantize(path, weight, scales, biases, spec):
    """MLX affine (§2): codes of `bits` bits in a little-endian bit stream per row of uint32 words;
    w[o, i] = scales[o, i / group] * q[o, i] + biases[o, i / group]."""
    if spec is None:
        raise E.incompatible_model("load: linear '%s' is quantized but has no quant spec (spec §2)" % path)
    bits, group, mode = spec
    if mode != "affine" or bits not in (2, 3, 4, 5, 6, 8) or group not in (32, 64, 128):
        raise E.incompatible_model("load: linear '%s' quantization bits %d group %d mode %s unsupported "
                                   "(spec §2: affine, bits 2/3/4/5/6/8, groups 32/64/128)" % (path, bits, group, mode))
    wdt, wshape, w = weight
    if wdt != "U32" or len(wshape) != 2:
        raise E.incompatible_model("load: '%s.weight' is %s %s, expected U32 [out, in*bits/32] (spec §2)"
                                   % (path, wdt, wshape))
    s = to_f64(scales, path + ".scales")
    b = to_f64(biases, path + ".biases") if biases is not None else np.zeros_like(s)
    out, groups = s.shape
    n_in = groups * group
    if wshape[0] != out or wshape[1] * 32 != n_in * bits or b.shape != s.shape:
        raise E.incompatible_model("load: '%s' weight %s, scales %s do not describe a %d-bit [%d, %d] linear "
                                   "(spec §2)" % (path, wshape, list(s.shape), bits, out, n_in))
    words = np.ascontiguousarray(w, dtype="<u4")
    bitstream = np.unpackbits(words.view(np.uint8), axis=1, bitorder="little")  # [out, in*bits], bit j of code i
    codes = bitstream.reshape(out, n_in, bits).astype(np.int64)
    q = (codes << np.arange(bits, dtype=np.int64)).sum(axis=2).astype(np.float64)
    return q * np.repeat(s, group, axis=1) + np.repeat(b, group, axis=1)


class Weights:
    """The block's weights in float64, full gains (norms folded once), plus the target's embedding and head."""

    def __init__(self, tensors, quant, embed, head, names_for_errors):
        self.t = {}
        for n in NORMS:
            if n not in tensors:
                raise E.incompatible_model("load: missing tensor '%s' in %s (spec §1.2)" % (n, names_for_errors))
            self.t[n] = to_f64(tensors[n], n)
        for p in LINEARS:
            self.t[p] = linear(tensors, p, quant, names_for_errors)
        self.embed = embed
        self.head = head


def linear(tensors, path, quant, where, prefix=""):
    if prefix + path + ".scales" in tensors:
        w = tensors.get(prefix + path + ".weight")
        if w is None:
            raise E.incompatible_model("load: missing tensor '%s.weight' in %s (spec §1.2)" % (prefix + path, where))
        return dequantize(path, w, tensors[prefix + path + ".scales"], tensors.get(prefix + path + ".biases"),
                          quant.spec(path))
    if prefix + path + ".weight" not in tensors:
        raise E.incompatible_model("load: missing tensor '%s.weight' in %s (spec §1.2)" % (prefix + path, where))
    w = to_f64(tensors[prefix + path + ".weight"], prefix + path + ".weight")
    if w.ndim != 2:
        raise E.incompatible_model("load: '%s.weight' has shape %s, expected [out, in]" % (path, list(w.shape)))
    return w


class Config:
    def __init__(self, cfg):
        text = cfg.get("text_config") if isinstance(cfg.get("text_config"), dict) else cfg

        def need(key):
            if key not in text:
                raise E.incompatible_model("load: config has no '%s' (spec §1.3)" % key)
            return text[key]

        self.hidden = int(need("hidden_size"))
        self.heads = int(need("num_attention_heads"))
        self.kv_heads = int(need("num_key_value_heads"))
        self.head_dim = int(text.get("head_dim") or self.hidden // self.heads)
        self.eps = float(need("rms_norm_eps"))
        rope = text.get("rope_parameters") if isinstance(text.get("rope_parameters"), dict) else {}
        prf = rope.get("partial_rotary_factor", text.get("partial_rotary_factor", 1.0))
        self.theta = float(rope.get("rope_theta", text.get("rope_theta", 10000.0)))
        self.rotary = int(self.head_dim * float(prf))
        if self.heads <= 0 or self.kv_heads <= 0 or self.heads % self.kv_heads:
            raise E.incompatible_model("load: num_key_value_heads = %d must divide num_attention_heads = %d"
                                       % (self.kv_heads, self.heads))
        if self.rotary % 2 or not 0 <= self.rotary <= self.head_dim:
            raise E.incompatible_model("load: rotary dims %d must be even and within head_dim %d"
                                       % (self.rotary, self.head_dim))
        q = cfg.get("quantization", cfg.get("quantization_config"))
        if q is None:
            q = text.get("quantization", text.get("quantization_config"))
        self.quant = Quant(q)
        tie = cfg.get("tie_word_embeddings", text.get("tie_word_embeddings"))
        self.tie = tie
        self.vocab_from_config = text.get("vocab_size")


def head_linear(tensors, weight_name, quant, where, module):
    base = weight_name[:-len(".weight")]
    if base + ".scales" in tensors:
        return dequantize(module, tensors[base + ".weight"], tensors[base + ".scales"], tensors.get(base + ".biases"),
                          quant.spec(module))
    return to_f64(tensors[weight_name], weight_name)


def load_model(directory):
    """Reads a model directory in the raw Hugging Face layout or the companion layout."""
    if not os.path.isdir(directory):
        raise E.incompatible_model("load: %s is not a directory" % directory)
    cfg_path = os.path.join(directory, "config.json")
    if not os.path.isfile(cfg_path):
        raise E.incompatible_model("load: missing config.json in %s (spec §1.3)" % directory)
    raw_cfg = read_json(cfg_path)
    if not isinstance(raw_cfg, dict):
        raise E.malformed_file("load: %s is not a JSON object" % cfg_path)
    cfg = Config(raw_cfg)
    companion = raw_cfg.get("model_type") == "qwen3_5_mtp"
    store, _ = load_store(directory, exclude=("target_head.safetensors",) if companion else ())
    if companion:
        mtp = {n: e for n, e in store.items() if not n.startswith("mtp.")}
    else:
        mtp = {n[len("mtp."):]: e for n, e in store.items() if n.startswith("mtp.")}
        if not mtp:
            raise E.incompatible_model("load: %s has no mtp.* tensors and config model_type is %r, not "
                                       "'qwen3_5_mtp': cannot determine the layout (spec §11.4)"
                                       % (directory, raw_cfg.get("model_type")))
    moe = sorted(n for n in mtp if ".mlp.experts." in n or n.startswith("layers.0.mlp.gate.")
                 or ".mlp.shared_expert" in n)
    if moe:
        raise E.incompatible_model("load: MoE MTP layers are unsupported (spec §11.9); found %s"
                                   % ", ".join(moe[:4]))
    if not companion:
        # §1.6, §11.4: raw HF norms are zero-centred; the gain 1 + w is formed once, in float32
        for n in NORMS:
            if n in mtp:
                mtp[n] = ("F32", mtp[n][1], (to_f32(mtp[n], n) + np.float32(1.0)).astype(np.float32))
    where = directory
    if companion:
        embed, head = companion_head(directory, cfg)
    else:
        embed, head = hf_head(store, cfg, where)
    w = Weights(mtp, cfg.quant, embed, head, where)
    check_shapes(cfg, w)
    return cfg, w


def hf_head(store, cfg, where):
    en = next((n for n in EMBED_NAMES if n in store), None)
    if en is None:
        raise E.incompatible_model("load: no embedding (%s) in %s (spec §1.7)" % (" or ".join(EMBED_NAMES), where))
    embed = head_linear(store, en, cfg.quant, where, en[:-len(".weight")])
    hn = next((n for n in HEAD_NAMES if n in store), None)
    if hn is not None:
        head = head_linear(store, hn, cfg.quant, where, hn[:-len(".weight")])
    elif cfg.tie is False:
        raise E.incompatible_model("load: missing tensor 'lm_head.weight' in %s (tie_word_embeddings is false, "
                                   "spec §1.7)" % where)
    else:
        head = embed
    return embed, head


def companion_head(directory, cfg):
    th = os.path.join(directory, "target_head.safetensors")
    if os.path.isfile(th):
        t = read_safetensors(th)
        if "embed_tokens.weight" not in t:
            raise E.incompatible_model("load: %s has no embed_tokens.weight" % th)
        embed = head_linear(t, "embed_tokens.weight", cfg.quant, th, "embed_tokens")
        head = head_linear(t, "lm_head.weight", cfg.quant, th, "lm_head") if "lm_head.weight" in t else embed
        return embed, head
    tdir = os.path.join(directory, "target")
    if os.path.isdir(tdir):
        store, _ = load_store(tdir)
        tcfg_path = os.path.join(tdir, "config.json")
        tcfg = read_json(tcfg_path) if os.path.isfile(tcfg_path) else {}
        text = tcfg.get("text_config") if isinstance(tcfg.get("text_config"), dict) else tcfg
        quant = Quant(tcfg.get("quantization", tcfg.get("quantization_config"))) if tcfg else cfg.quant

        class C:  # the target's own tie setting and quantization
            pass
        c = C()
        c.quant = quant
        c.tie = tcfg.get("tie_word_embeddings", text.get("tie_word_embeddings"))
        return hf_head(store, c, tdir)
    raise E.incompatible_model("load: companion %s has neither target_head.safetensors nor a target/ directory "
                               "(the target's embedding and head)" % directory)


def check_shapes(cfg, w):
    h, nh, nkv, d = cfg.hidden, cfg.heads, cfg.kv_heads, cfg.head_dim
    inter = w.t["layers.0.mlp.gate_proj"].shape[0]
    v = w.embed.shape[0]
    want = {"fc": (h, 2 * h), "layers.0.self_attn.q_proj": (nh * 2 * d, h),
            "layers.0.self_attn.k_proj": (nkv * d, h), "layers.0.self_attn.v_proj": (nkv * d, h),
            "layers.0.self_attn.o_proj": (h, nh * d), "layers.0.mlp.gate_proj": (inter, h),
            "layers.0.mlp.up_proj": (inter, h), "layers.0.mlp.down_proj": (h, inter),
            "pre_fc_norm_embedding.weight": (h,), "pre_fc_norm_hidden.weight": (h,),
            "layers.0.input_layernorm.weight": (h,), "layers.0.self_attn.q_norm.weight": (d,),
            "layers.0.self_attn.k_norm.weight": (d,), "layers.0.post_attention_layernorm.weight": (h,),
            "norm.weight": (h,)}
    for n, s in want.items():
        if tuple(w.t[n].shape) != s:
            raise E.incompatible_model("load: '%s' has shape %s, expected %s (spec §1.2)" % (n, list(w.t[n].shape),
                                                                                          list(s)))
    if w.embed.shape != (v, h) or w.head.shape != (v, h):
        raise E.incompatible_model("load: embedding %s / head %s, expected [V, %d] (spec §1.7)"
                                   % (list(w.embed.shape), list(w.head.shape), h))
    if cfg.vocab_from_config is not None and int(cfg.vocab_from_config) != v:
        raise E.incompatible_model("load: embedding has %d rows, expected vocab_size = %d from config (spec §1.7)"
                                   % (v, int(cfg.vocab_from_config)))
    for n, a in list(w.t.items()) + [("embed", w.embed), ("head", w.head)]:
        if not np.all(np.isfinite(a)):
            idx = int(np.flatnonzero(~np.isfinite(a))[0])
            raise E.incompatible_model("load: tensor '%s' element %d is %r, not finite" % (n, idx, a.flat[idx]))


# ---------------------------------------------------------------------------------------------------------------
# the block (§1.4, §1.5, §1.6), one row at a time over that row's own unpadded cache

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
    def __init__(self, cfg, weights):
        self.c = cfg
        self.w = weights.t
        self.embed_rows = weights.embed
        self.head = weights.head
        r = cfg.rotary
        self.inv_freq = cfg.theta ** (-2.0 * np.arange(r // 2) / r) if r else np.zeros(0)

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
        e = rms_norm(self.embed_rows[ids], w["pre_fc_norm_embedding.weight"], c.eps)
        g = rms_norm(hin, w["pre_fc_norm_hidden.weight"], c.eps)
        x = np.concatenate([e, g], axis=-1) @ w["fc"].T
        a = rms_norm(x, w["layers.0.input_layernorm.weight"], c.eps)
        qg = (a @ w["layers.0.self_attn.q_proj"].T).reshape(s, nh, 2 * d)
        q, gate = qg[..., :d], qg[..., d:].reshape(s, nh * d)
        k = (a @ w["layers.0.self_attn.k_proj"].T).reshape(s, nkv, d)
        v = (a @ w["layers.0.self_attn.v_proj"].T).reshape(s, nkv, d)
        q = rms_norm(q, w["layers.0.self_attn.q_norm.weight"], c.eps).transpose(1, 0, 2)
        k = rms_norm(k, w["layers.0.self_attn.k_norm.weight"], c.eps).transpose(1, 0, 2)
        v = v.transpose(1, 0, 2)
        start = cache.length
        pos = np.arange(start, start + s, dtype=np.float64)
        q, k = self.rope(q, pos), self.rope(k, pos)
        keys, values = cache.append(k, v)                             # [nKV, T, D]
        t = keys.shape[1]
        group = nh // nkv
        kh = np.repeat(keys, group, axis=0)                           # query head j uses KV head j // group
        vh = np.repeat(values, group, axis=0)
        scores = (q @ kh.transpose(0, 2, 1)) * (d ** -0.5)            # [nH, S, T]
        visible = np.arange(t)[None, :] <= (start + np.arange(s))[:, None]
        scores = np.where(visible[None], scores, -np.inf)
        scores -= scores.max(axis=-1, keepdims=True)
        p = np.exp(scores)
        p /= p.sum(axis=-1, keepdims=True)
        o = (p @ vh).transpose(1, 0, 2).reshape(s, nh * d)
        r = (o * sigmoid(gate)) @ w["layers.0.self_attn.o_proj"].T
        h1 = x + r
        n = rms_norm(h1, w["layers.0.post_attention_layernorm.weight"], c.eps)
        gp = n @ w["layers.0.mlp.gate_proj"].T
        m = (gp * sigmoid(gp) * (n @ w["layers.0.mlp.up_proj"].T)) @ w["layers.0.mlp.down_proj"].T
        return rms_norm(h1 + m, w["norm.weight"], c.eps)

    def log_probs(self, y):
        """§1.7: logits = y · headᵀ (no further norm), log-softmax over V; y [H] -> [V]."""
        logits = self.head @ y
        m = logits.max()
        return logits - (m + np.log(np.sum(np.exp(logits - m))))


# ---------------------------------------------------------------------------------------------------------------
# seeded draft sampling (SPEC.md "Random stream for seeded draft sampling")

M32 = 0xFFFFFFFF
M64 = 0xFFFFFFFFFFFFFFFF
_ROT = ((13, 15, 26, 6), (17, 29, 16, 24))


def threefry2x32(key, counter):
    k0, k1 = key
    ks = (k0, k1, k0 ^ k1 ^ 0x1BD11BDA)
    x0 = (counter[0] + ks[0]) & M32
    x1 = (counter[1] + ks[1]) & M32
    for i in range(5):
        for r in _ROT[i % 2]:
            x0 = (x0 + x1) & M32
            x1 = ((x1 << r) | (x1 >> (32 - r))) & M32
            x1 ^= x0
        x0 = (x0 + ks[(i + 1) % 3]) & M32
        x1 = (x1 + ks[(i + 2) % 3] + i + 1) & M32
    return x0, x1


def key_of(seed):
    seed &= M64
    return (seed >> 32, seed & M32)


def random_bits(key, n):
    h, o = n // 2, n % 2
    out = [0] * n
    for i in range(h):
        out[i], out[i + h + o] = threefry2x32(key, (i, i + h + o))
    if o:
        out[h] = threefry2x32(key, (h, 0))[0]
    return out


def step_key(seed, step):
    return ((seed & M64) ^ (((step + 1) * 0x9E3779B97F4A7C15) & M64)) & M64


_ONE_BELOW = np.nextafter(np.float32(1.0), np.float32(0.0))


def uniform(key, n):
    b = np.array(random_bits(key, n), dtype=np.uint32).astype(np.float32)   # round to nearest even
    return np.minimum(b / np.float32(4294967296.0), _ONE_BELOW).astype(np.float32)


def gumbel(key, n):
    with np.errstate(divide="ignore"):
        return (-np.log(-np.log(uniform(key, n)))).astype(np.float32)


_EXP_C = [np.float32(c) for c in (1.339887440266574e-3, 9.618437357674640e-3, 5.550332471162809e-2,
                                  2.402264791363012e-1, 6.931472028550421e-1, 1.0)]


def mlx_exp(x):
    """MLX's CPU float32 exp (SPEC.md §5), vectorised; fma emulated in float64 (p·f is exact there)."""
    x = np.asarray(x, dtype=np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        y = (x * np.float32(1.442695)).astype(np.float32)
        k = np.floor(y.astype(np.float64) + 0.5)
        kk = np.where(np.isfinite(k), k, 0.0)
        f = (y - kk.astype(np.float32)).astype(np.float32)
        p = np.full(x.shape, np.float32(1.535336188319500e-4), dtype=np.float32)
        for c in _EXP_C:
            p = (p.astype(np.float64) * f.astype(np.float64) + np.float64(c)).astype(np.float32)
        e = np.clip(kk + 127, 0, 255).astype(np.uint32) << np.uint32(23)
        out = (e.view(np.float32) * p).astype(np.float32)
    out = np.where(x > 88, np.float32(np.inf), out)
    out = np.where(x < -88, np.float32(0.0), out)
    return np.where(np.isnan(x), np.float32(np.nan), out).astype(np.float32)


def sample_row(lp, temperature, top_k, top_p, seed, step):
    """SPEC.md §6: one row of float32 log-probs -> a token id."""
    lp = np.asarray(lp, dtype=np.float32)
    v = lp.shape[0]
    if temperature == 0:
        return int(np.argmax(lp))                                    # first index on ties
    x = lp.copy()
    if 0 < top_p < 1:
        p = mlx_exp(lp)
        order = np.argsort(lp, kind="stable")                        # ascending, equal values by index
        csum = np.cumsum(p[order], dtype=np.float32)                 # sequential float32 running sum
        keep_sorted = csum > np.float32(1.0 - top_p)
        keep = np.zeros(v, dtype=bool)
        keep[order] = keep_sorted
        x = np.where(keep, x, np.float32(-np.inf)).astype(np.float32)
    if 0 < top_k < v:
        order = np.argsort(-x.astype(np.float64), kind="stable")    # descending, ties keep the lowest indices
        drop = order[top_k:]
        x[drop] = -np.inf
    x = (x * np.float32(1.0 / temperature)).astype(np.float32)
    return inverse_cdf(x, key_of(step_key(seed, step)))


def inverse_cdf(x, key):
    m = x.max()
    if np.isinf(m):
        w = (x == m).astype(np.float32)
    else:
        w = mlx_exp((x - m).astype(np.float32))
    c = np.zeros_like(w)
    if len(w) > 1:
        c[1:] = np.cumsum(w[:-1], dtype=np.float32)
    total = np.float32(c[-1] + w[-1])
    u = np.float32(uniform(key, 1)[0] * total)
    return int(np.searchsorted(c, u, side="right") - 1)


# ---------------------------------------------------------------------------------------------------------------
# the rows (§5 with the decisions of §11): validation first (§11.1), then compute, then publish

class Row:
    """One request's drafter state."""
    __slots__ = ("kv", "hidden", "prefilled", "drafts", "before")

    def __init__(self, kv, hidden, prefilled):
        self.kv = kv
        self.hidden = hidden          # [H] float64 h_{P-1}, or None (cold row, or during a round)
        self.prefilled = prefilled
        self.drafts = []
        self.before = 0


class Rows:
    """A group of draft rows over one model."""

    def __init__(self, model):
        self.m = model
        self.c = model.cfg
        self.rows = []
        self.round_open = False
        self.depth = 0
        self.closed = False
        self.poisoned_by = None

    # -- state checks, in the order every call applies them
    def _usable(self, call):
        if self.closed:
            raise E.illegal_state(call + ": the group is closed")
        if self.poisoned_by is not None:
            raise E.illegal_state(call + ": the group is poisoned by an earlier failure (%s); discard it and open a "
                                         "new one (spec §9.2)" % self.poisoned_by)

    def _no_round(self, call):
        if self.round_open:
            raise E.illegal_state(call + ": a draft round is open; commit it first (spec §9.2)")

    def _has_rows(self, call):
        if not self.rows:
            raise E.illegal_state(call + ": the group has no rows")

    def row_count(self):
        return len(self.rows)

    # -- §5.2 append
    def append(self, checkpoints):
        self._usable("append")
        self._no_round("append")
        if checkpoints is None:
            raise E.invalid_argument("append: checkpoint list is null (use null entries for cold rows)")
        restored = [None if cp is None else self._restore("append", i, cp) for i, cp in enumerate(checkpoints)]
        added = []
        for r in restored:
            if r is None:
                added.append(Row(self.m.new_cache(), None, False))
            else:
                keys, values, hidden = r
                added.append(Row(self.m.new_cache(keys, values), hidden, True))
        self.rows.extend(added)

    def _restore(self, call, i, cp):
        """§6, §11.1: checks one checkpoint and returns (keys [nKV,T,D] | None, values | None, hidden [H])."""
        where = "%s: checkpoint[%d]" % (call, i)
        bad = E.incompatible_checkpoint
        if not isinstance(cp, Checkpoint):
            raise bad("%s is not a checkpoint object" % where)
        if cp.schema != SCHEMA:
            raise bad("%s has schema '%s', expected '%s' (spec §6)" % (where, cp.schema, SCHEMA))
        if cp.model_identity != self.m.identity:
            raise bad("%s belongs to model %s, this group's model is %s" % (where, _abbrev(cp.model_identity),
                                                                          _abbrev(self.m.identity)))
        p, off = cp.processed_tokens, cp.draft_offset
        if not isinstance(p, int) or not isinstance(off, int) or p < 1 or off != p - 1:
            raise bad("%s has invalid paired alignment: draftOffset = %s with processedTokens = %s, expected "
                      "draftOffset = P − 1 (spec §6)" % (where, off, p))
        c = self.c
        kv_shape = (1, c.kv_heads, p - 1, c.head_dim)
        if p == 1:
            if cp.keys is not None or cp.values is not None:
                raise bad("%s has P = 1 but carries keys/values (spec §6)" % where)
            keys = values = None
        else:
            keys = _checked(where, "keys", cp.keys, kv_shape)[0]
            values = _checked(where, "values", cp.values, kv_shape)[0]
        hidden = _checked(where, "hidden", cp.hidden, (1, 1, c.hidden))[0, 0]
        return keys, values, hidden

    # -- §5.3 filterRows
    def filter_rows(self, keep):
        self._usable("filterRows")
        self._no_round("filterRows")
        if keep is None:
            raise E.invalid_argument("filterRows: keep is null")
        seen = set()
        for i, r in enumerate(keep):
            if not isinstance(r, int) or r < 0 or r >= len(self.rows):
                raise E.invalid_argument("filterRows: keep[%d] = %s outside [0, %d)" % (i, r, len(self.rows)))
            if r in seen:
                raise E.invalid_argument("filterRows: keep[%d] = %d repeats a row" % (i, r))
            seen.add(r)
        self.rows = [self.rows[r] for r in keep]

    # -- §5.4 prefill
    def prefill(self, tokens, context):
        self._usable("prefill")
        self._no_round("prefill")
        self._has_rows("prefill")
        b = len(self.rows)
        ids = self._tokens("prefill", tokens, b)
        n = ids.shape[1]
        ctx = self._context("prefill", context, b, n, "the taps at the same L positions as tokens")
        saved = self._lengths()
        try:
            for r, row in enumerate(self.rows):
                if row.prefilled:   # bridge: tokens[r, 0] with the retained hidden, then token p+1 with hidden p
                    step_ids = ids[r]
                    hin = np.concatenate([row.hidden[None, :], ctx[r, :n - 1]], axis=0)
                else:               # a cold row keeps nothing for tokens[r, 0]
                    step_ids = ids[r, 1:]
                    hin = ctx[r, :n - 1]
                if len(step_ids):
                    self.m.block.forward(row.kv, step_ids, hin)
        except Exception as e:
            self._put_back("prefill", saved, e)
        for r, row in enumerate(self.rows):
            row.hidden = ctx[r, n - 1].copy()
            row.prefilled = True

    # -- §5.7 draft
    def draft(self, pending, depth, steps, samplers):
        self._usable("draft")
        self._no_round("draft")
        self._has_rows("draft")
        b = len(self.rows)
        vocab = self.m.vocab
        if pending is None or steps is None or samplers is None:
            raise E.invalid_argument("draft: pending, steps and sampling must not be null")
        if len(pending) != b:
            raise E.invalid_argument("draft: pending has %d entries, expected %d (one per row)" % (len(pending), b))
        for r, t in enumerate(pending):
            if not isinstance(t, int) or t < 0 or t >= vocab:
                raise E.invalid_argument("draft: pending[%d] = %s outside the vocabulary [0, %d)" % (r, t, vocab))
        if not isinstance(depth, int) or depth < 0 or depth > MAX_DEPTH:
            raise E.invalid_argument("draft: depth = %s outside [0, %d]" % (depth, MAX_DEPTH))
        if len(steps) != b:
            raise E.invalid_argument("draft: steps has %d entries, expected %d" % (len(steps), b))
        for r, s in enumerate(steps):
            if not isinstance(s, int) or s < 0:
                raise E.invalid_argument("draft: steps[%d] = %s is negative" % (r, s))
        if len(samplers) != b:
            raise E.invalid_argument("draft: sampling has %d row samplers, expected %d" % (len(samplers), b))
        for r, s in enumerate(samplers):
            _check_sampler(r, s)
        for r, row in enumerate(self.rows):
            if row.hidden is None:
                raise E.illegal_state("draft: row %d has no retained hidden (a cold row must be prefilled first, "
                                      "spec §5.7)" % r)
        saved = self._lengths()
        out = [[0] * depth for _ in range(b)]
        try:
            for r, row in enumerate(self.rows):
                tok, hin = pending[r], row.hidden
                if depth == 0:   # the pending row only: no logits, no sampling (§5.7, §11.2)
                    self.m.block.forward(row.kv, np.array([tok]), hin[None, :])
                s = samplers[r]
                for t in range(depth):
                    y = self.m.block.forward(row.kv, np.array([tok]), hin[None, :])[0]
                    lp = self.m.block.log_probs(y).astype(np.float32)
                    tok = sample_row(lp, s.temperature, s.top_k, s.top_p, s.seed, steps[r] + t)
                    out[r][t] = tok
                    hin = y
        except Exception as e:
            self._put_back("draft", saved, e)
        for r, row in enumerate(self.rows):
            row.before = saved[r]
            row.drafts = list(out[r])
            row.hidden = None
        self.depth = depth
        self.round_open = True
        return out

    # -- §5.8 commit
    def commit(self, accepted, context):
        self._usable("commit")
        if not self.round_open:
            raise E.illegal_state("commit: no draft round is open (spec §5.8)")
        b, d = len(self.rows), self.depth
        if accepted is None:
            raise E.invalid_argument("commit: accepted is null")
        if len(accepted) != b:
            raise E.invalid_argument("commit: accepted has %d entries, expected %d (one per row)" % (len(accepted), b))
        for r, a in enumerate(accepted):
            if not isinstance(a, int) or a < 0 or a > d:
                raise E.invalid_argument("commit: accepted[%d] = %s outside [0, %d], the draft depth (spec §5.8); "
                                         "rows unchanged" % (r, a, d))
        ctx = self._context("commit", context, b, d + 1, "width = depth + 1 = %d verify taps" % (d + 1))
        saved = self._lengths()
        appended = max(1, d)
        try:
            for r, row in enumerate(self.rows):
                row.kv.length = row.before + min(accepted[r] + 1, appended)
                if d > 0 and accepted[r] == d:   # full acceptance: the last proposal's row, from the true hidden
                    self.m.block.forward(row.kv, np.array([row.drafts[d - 1]]), ctx[r, d - 1][None, :])
        except Exception as e:
            self._put_back("commit", saved, e)
        for r, row in enumerate(self.rows):
            row.hidden = ctx[r, accepted[r]].copy()
            row.drafts = []
        self.round_open = False
        self.depth = 0

    # -- §6 capture
    def capture(self, row):
        self._usable("capture")
        self._no_round("capture")
        if not isinstance(row, int) or row < 0 or row >= len(self.rows):
            raise E.invalid_argument("capture: row %s outside [0, %d)" % (row, len(self.rows)))
        r = self.rows[row]
        if r.hidden is None:
            raise E.illegal_state("capture: row %d has consumed no target token yet (a cold row must be prefilled "
                                  "first, spec §11.1)" % row)
        t = r.kv.length
        keys = Tensor.from_numpy(r.kv.keys()[None].astype(np.float32)) if t else None
        values = Tensor.from_numpy(r.kv.values()[None].astype(np.float32)) if t else None
        hidden = Tensor.from_numpy(r.hidden.astype(np.float32).reshape(1, 1, -1))
        return Checkpoint(SCHEMA, t + 1, t, self.m.identity, keys, values, hidden)

    def close(self):
        self.closed = True
        self.rows = []
        self.round_open = False

    # -- helpers
    def _lengths(self):
        return [row.kv.length for row in self.rows]

    def _put_back(self, call, saved, error):
        """A failed computation: KV lengths go back; if even that fails the group is poisoned (§9.2)."""
        try:
            for row, n in zip(self.rows, saved):
                row.kv.length = n
        except Exception:
            self.poisoned_by = "a failed %s whose rollback failed" % call
            raise E.MtpError(E.BACKEND_FAILURE, "%s: %s; rollback failed, group poisoned" % (call, error),
                             poisoned=True)
        if isinstance(error, E.MtpError):
            raise error
        raise E.MtpError(E.BACKEND_FAILURE, "%s: %s: %s (rows unchanged)" % (call, type(error).__name__, error))

    def _tokens(self, call, t, rows):
        if t is None:
            raise E.invalid_argument(call + ": tokens is null")
        if not isinstance(t, Tensor):
            raise E.invalid_argument("%s: tokens %s is not a valid tensor" % (call, t.describe()))
        if t.dtype not in ("I32", "I64"):
            raise E.invalid_argument("%s: tokens dtype %s, expected I32 or I64" % (call, t.dtype))
        if t.rank != 2 or t.shape[0] != rows:
            raise E.invalid_argument("%s: tokens shape %s, expected [%d, L] (one row per group row, spec §5.4)"
                                     % (call, t.describe(), rows))
        if t.shape[1] < 1:
            raise E.invalid_argument(call + ": tokens has L = 0 new positions, expected L ≥ 1 (spec §5.4)")
        ids = t.array().astype(np.int64)
        bad = np.argwhere((ids < 0) | (ids >= self.m.vocab))
        if len(bad):
            b, p = (int(v) for v in bad[0])
            raise E.invalid_argument("%s: tokens[%d, %d] = %d outside the vocabulary [0, %d)"
                                     % (call, b, p, ids[b, p], self.m.vocab))
        return ids

    def _context(self, call, t, rows, width, rule):
        h = self.c.hidden
        if t is None:
            raise E.invalid_argument(call + ": context is null")
        if not isinstance(t, Tensor):
            raise E.invalid_argument("%s: context %s is not a valid tensor" % (call, t.describe()))
        if t.dtype not in ("F32", "F16", "BF16"):
            raise E.invalid_argument("%s: context dtype %s, expected F32, F16 or BF16" % (call, t.dtype))
        if t.rank != 3 or t.shape != (rows, width, h):
            raise E.invalid_argument("%s: context shape %s, expected [%d, %d, %d] (%s)"
                                     % (call, t.describe(), rows, width, h, rule))
        a = t.array().astype(np.float64)
        bad = np.argwhere(~np.isfinite(a))
        if len(bad):
            i, j, k = (int(v) for v in bad[0])
            raise E.invalid_argument("%s: context[%d, %d, %d] = %r is not finite" % (call, i, j, k, a[i, j, k]))
        return a


def _abbrev(identity):
    s = str(identity)
    return s[:12] + "…" if len(s) > 12 else s


def _checked(where, name, t, shape):
    if t is None:
        raise E.incompatible_checkpoint("%s has no %s tensor" % (where, name))
    if not isinstance(t, Tensor):
        raise E.incompatible_checkpoint("%s %s is not a valid tensor" % (where, name))
    if t.dtype not in ("F32", "F16", "BF16"):
        raise E.incompatible_checkpoint("%s %s dtype %s, expected F32, F16 or BF16" % (where, name, t.dtype))
    if tuple(t.shape) != tuple(shape):
        raise E.incompatible_checkpoint("%s %s shape %s, expected %s" % (where, name, t.describe(), list(shape)))
    a = t.array().astype(np.float64)
    if not np.all(np.isfinite(a)):
        raise E.incompatible_checkpoint("%s %s element %d is not finite" % (where, name,
                                                                          int(np.flatnonzero(~np.isfinite(a))[0])))
    return a


def _check_sampler(r, s):
    if not isinstance(s, mtp_wire.RowSampler):
        raise E.invalid_argument("draft: sampling[%d] is not a sampler" % r)
    t, k, p, seed = s.temperature, s.top_k, s.top_p, s.seed
    if not isinstance(t, (int, float)) or not math.isfinite(t) or t < 0:
        raise E.invalid_argument("draft: sampling[%d] temperature = %s must be finite and ≥ 0" % (r, t))
    if 0 < t < MIN_TEMPERATURE:
        raise E.invalid_argument("draft: sampling[%d] temperature = %s is in (0, %s): f32(1/T) times a log-prob "
                                 "overflows; use 0 for greedy (spec §7)" % (r, t, MIN_TEMPERATURE))
    if not isinstance(k, int) or k < 0:
        raise E.invalid_argument("draft: sampling[%d] top_k = %s must be ≥ 0 (0 disables it)" % (r, k))
    if not isinstance(p, (int, float)) or not 0 < p <= 1:
        raise E.invalid_argument("draft: sampling[%d] top_p = %s must be in (0, 1] (1 disables it)" % (r, p))
    if not isinstance(seed, int) or not 0 <= seed < 1 << 64:
        raise E.invalid_argument("draft: sampling[%d] seed = %s must be an unsigned 64-bit integer" % (r, seed))


class Model:
    """A loaded model: config, weights and the identity checkpoints carry."""

    def __init__(self, path, identity=None):
        self.cfg, self.weights = load_model(path)
        self.block = Block(self.cfg, self.weights)
        self.vocab = self.weights.embed.shape[0]
        self.identity = identity if identity is not None else _own_identity(path)

    def new_cache(self, keys=None, values=None):
        """An empty row cache, or one holding keys/values [nKV, T, D]."""
        return RowCache(self.cfg.kv_heads, self.cfg.head_dim, keys, values)

    def open_rows(self, checkpoints):
        rows = Rows(self)
        rows.append(checkpoints)
        return rows


def _own_identity(path):
    """Only when the runner sends none: SHA-256 over config.json and the safetensors files, by name."""
    h = hashlib.sha256()
    for root, _, files in sorted(os.walk(path)):
        for f in sorted(files):
            if f == "config.json" or f.endswith(".safetensors"):
                h.update(os.path.relpath(os.path.join(root, f), path).encode("utf-8"))
                with open(os.path.join(root, f), "rb") as fh:
                    h.update(fh.read())
    return h.hexdigest()


# ---------------------------------------------------------------------------------------------------------------
# the wire handler

class NumpyEngine(mtp_wire.Engine):
    name = ENGINE_NAME
    version = ENGINE_VERSION

    def hello_result(self):
        return {
            "description": "numpy float64 Qwen3.5 MTP block and row lifecycle, written from the spec",
            "numerics": NUMERICS,
            "profiles": [{"label": "numpy-f64", "options": {},
                          "tolerance": {"name": "f32", "tokenGap": 1e-4, "kvNmse": 1e-9, "hiddenNmse": 0}}],
            "capabilities": {
                "seededSampling": True,
                "tapDtypes": ["F32", "F16", "BF16"],
                "weightDtypes": ["F32", "F16", "BF16"],
                "quantization": [{"bits": b, "groupSizes": [32, 64, 128]} for b in (2, 3, 4, 5, 6, 8)],
                "layouts": ["hf", "companion"],
                "maxRows": 64,
                "maxDepth": MAX_DEPTH,
            },
        }

    def load(self, directory, layout, identity, options, config):
        if options:
            raise E.invalid_argument("load: unknown option(s) %s; this engine takes none"
                                     % ", ".join(sorted(map(str, options))))
        if not isinstance(directory, str):
            raise E.invalid_argument("load: directory = %r, expected a path" % (directory,))
        return WireModel(Model(directory, identity))


class WireModel(mtp_wire.DraftModel):
    numerics = NUMERICS

    def __init__(self, model):
        self.model = model

    def open_rows(self, checkpoints):
        return WireRows(self.model.open_rows(checkpoints))


class WireRows(mtp_wire.DraftRows):
    """The SDK's handler names over Rows."""

    def __init__(self, rows):
        self.r = rows

    def row_count(self):
        return self.r.row_count()

    def append(self, checkpoints):
        self.r.append(checkpoints)

    def filter_rows(self, keep):
        self.r.filter_rows(keep)

    def prefill(self, tokens, context):
        self.r.prefill(tokens, context)

    def draft(self, pending, depth, steps, sampling):
        return self.r.draft(pending, depth, steps, sampling)

    def commit(self, accepted, context):
        self.r.commit(accepted, context)

    def capture(self, row):
        return self.r.capture(row)

    def close(self):
        self.r.close()


def main(argv):
    if len(argv) > 1:
        sys.stderr.write("usage: numpy_backend.py   (speaks mtp-oracle-wire/1 on stdin/stdout)\n")
        return 2
    return mtp_wire.serve(NumpyEngine())


if __name__ == "__main__":
    sys.exit(main(sys.argv))
