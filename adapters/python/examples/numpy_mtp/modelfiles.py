"""Model directories (spec §1.2, §1.3, §1.6, §2, §11.4, §11.5, §12.1, §12.2): safetensors files, config.json, the
raw Hugging Face and companion layouts, MLX affine quantization, and a MoE layer's router, experts (per-expert, HF
fused or MLX stacked) and shared expert. Every weight ends as float64 with full norm gains."""

import json
import os
import re
import struct

import numpy as np

from mtp_wire import errors as E
from mtp_wire.tensor import bf16_to_f32

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
ATTENTION_LINEARS = ("fc", "layers.0.self_attn.q_proj", "layers.0.self_attn.k_proj", "layers.0.self_attn.v_proj",
                     "layers.0.self_attn.o_proj")
DENSE_MLP = ("layers.0.mlp.gate_proj", "layers.0.mlp.up_proj", "layers.0.mlp.down_proj")
LINEARS = ATTENTION_LINEARS + DENSE_MLP
# §12.2: the router, the shared expert and its gate (linears like any other), then the routed experts' three layouts
MOE_LINEARS = ("layers.0.mlp.gate", "layers.0.mlp.shared_expert.gate_proj", "layers.0.mlp.shared_expert.up_proj",
               "layers.0.mlp.shared_expert.down_proj", "layers.0.mlp.shared_expert_gate")
MOE_MARKS = ("layers.0.mlp.gate.", "layers.0.mlp.experts.", "layers.0.mlp.switch_mlp.", "layers.0.mlp.shared_expert")
FUSED = ("layers.0.mlp.experts.gate_up_proj", "layers.0.mlp.experts.down_proj")
STACKED = tuple("layers.0.mlp.switch_mlp.%s" % p for p in ("gate_proj", "up_proj", "down_proj"))
_PER_EXPERT = re.compile(r"layers\.0\.mlp\.experts\.(\d+)\.(gate_proj|up_proj|down_proj)\.(weight|scales|biases)")
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
    """The block's weights in float64, full gains (norms folded once), plus the target's embedding and head. A MoE
    layer (its tensors decide, §12.1) has `moe` set and no dense MLP in `t`."""

    def __init__(self, tensors, quant, embed, head, names_for_errors):
        self.t = {}
        for n in NORMS:
            if n not in tensors:
                raise E.incompatible_model("load: missing tensor '%s' in %s (spec §1.2)" % (n, names_for_errors))
            self.t[n] = to_f64(tensors[n], n)
        moe = is_moe(tensors)
        for p in ATTENTION_LINEARS if moe else LINEARS:
            self.t[p] = linear(tensors, p, quant, names_for_errors)
        self.moe = MoeWeights(tensors, quant, names_for_errors) if moe else None
        self.embed = embed
        self.head = head


def is_moe(tensors):
    """§12.1: a layer is MoE when it holds a router, experts or a shared expert."""
    return any(n.startswith(MOE_MARKS) for n in tensors)


class MoeWeights:
    """§12.2 in float64: `router` [E, H], `shared_gate`/`shared_up` [I_s, H], `shared_down` [H, I_s], `shared_gate_w`
    [1, H], and the routed experts stacked as `gate`/`up` [E, I_e, H] and `down` [E, H, I_e], whichever of the three
    layouts stored them (`layout`: per-expert, fused or stacked; quantized experts are dequantized one by one with
    their own module's spec)."""

    def __init__(self, tensors, quant, where):
        mlp = sorted(n for n in tensors if n.startswith("layers.0.mlp."))
        dense = [n for n in mlp if n.startswith(tuple(p + "." for p in DENSE_MLP))]
        if dense:
            theirs = [n for n in mlp if n.startswith(MOE_MARKS)]
            raise E.incompatible_model("load: dense MLP tensor '%s' beside MoE tensors (%s) in %s: a layer is dense or "
                                       "MoE, not both (spec §12.2)" % (dense[0], ", ".join(theirs[:3]), where))
        per = [n for n in mlp if _PER_EXPERT.fullmatch(n)]
        fused = [n for n in mlp if n in FUSED or n.startswith(tuple(f + "." for f in FUSED))]
        stacked = [n for n in mlp if n.startswith("layers.0.mlp.switch_mlp.")]
        present = [(name, group) for name, group in (("per-expert", per), ("fused", fused), ("stacked", stacked))
                   if group]
        if len(present) != 1:
            raise E.incompatible_model(
                "load: the MoE layer in %s has %s, expected exactly one layout of routed experts: per-expert "
                "'layers.0.mlp.experts.{e}.*_proj.weight', fused 'layers.0.mlp.experts.gate_up_proj'/'down_proj' or "
                "stacked 'layers.0.mlp.switch_mlp.*_proj.weight' (spec §12.2)" % (
                    where, "no routed experts" if not present else
                    " and ".join("%s experts ('%s')" % (name, g[0]) for name, g in present)))
        self.layout, group = present[0]
        known = set(group) | {p + s for p in MOE_LINEARS for s in (".weight", ".scales", ".biases")}
        stray = [n for n in mlp if n not in known]
        if stray:
            raise E.incompatible_model("load: unexpected tensor '%s' in the %s MoE layer of %s (spec §12.2)"
                                       % (stray[0], self.layout, where))
        for p in MOE_LINEARS:
            setattr(self, _MOE_FIELD[p], linear(tensors, p, quant, where))
        if self.layout == "per-expert":
            self.gate, self.up, self.down = _per_expert(tensors, per, quant, where)
        elif self.layout == "fused":
            self.gate, self.up, self.down = _fused(tensors, where)
        else:
            self.gate, self.up, self.down = (_stacked(tensors, p, quant, where) for p in STACKED)
        e = self.gate.shape[0]
        i = self.gate.shape[1]
        h = self.gate.shape[2]
        names = {"per-expert": ("layers.0.mlp.experts.{e}.gate_proj.weight", "layers.0.mlp.experts.{e}.up_proj.weight",
                                "layers.0.mlp.experts.{e}.down_proj.weight"),
                 "fused": ("layers.0.mlp.experts.gate_up_proj", "layers.0.mlp.experts.gate_up_proj",
                           "layers.0.mlp.experts.down_proj"),
                 "stacked": tuple(p + ".weight" for p in STACKED)}[self.layout]
        for name, a, want in zip(names, (self.gate, self.up, self.down), ((e, i, h), (e, i, h), (e, h, i))):
            if a.shape != want:
                raise E.incompatible_model("load: '%s' holds experts of shape %s, expected %s from the gate "
                                           "projection's [E, I_e, H] (spec §12.2)" % (name, list(a.shape), list(want)))

    @property
    def experts(self):
        return self.gate.shape[0]


_MOE_FIELD = {"layers.0.mlp.gate": "router", "layers.0.mlp.shared_expert.gate_proj": "shared_gate",
              "layers.0.mlp.shared_expert.up_proj": "shared_up", "layers.0.mlp.shared_expert.down_proj": "shared_down",
              "layers.0.mlp.shared_expert_gate": "shared_gate_w"}


def _per_expert(tensors, names, quant, where):
    """`layers.0.mlp.experts.{e}.{gate,up,down}_proj`, e = 0 … E−1, each a linear with its own quant spec."""
    idx = sorted({int(_PER_EXPERT.fullmatch(n).group(1)) for n in names})
    missing = sorted(set(range(idx[-1] + 1)) - set(idx))
    if missing:
        raise E.incompatible_model("load: expert %d of %s is missing: 'layers.0.mlp.experts.%d.*' absent while "
                                   "expert %d is present; expert indices must run 0 … E−1 (spec §12.2)"
                                   % (missing[0], where, missing[0], idx[-1]))
    out = []
    for proj in ("gate_proj", "up_proj", "down_proj"):
        mats = []
        for e in idx:
            path = "layers.0.mlp.experts.%d.%s" % (e, proj)
            w = linear(tensors, path, quant, where)
            if mats and w.shape != mats[0].shape:
                raise E.incompatible_model("load: '%s.weight' has shape %s, expert 0's has %s: every expert has the "
                                           "same shape (spec §12.2)" % (path, list(w.shape), list(mats[0].shape)))
            mats.append(w)
        out.append(np.stack(mats))
    return out


def _fused(tensors, where):
    """HF fused: `experts.gate_up_proj` [E, 2·I_e, H] (rows [0, I_e) gate, [I_e, 2·I_e) up, not interleaved) and
    `experts.down_proj` [E, H, I_e], no `.weight` suffix, dense only."""
    for name in FUSED:
        quantized = [n for n in tensors if n.startswith(name + ".")]
        if quantized:
            raise E.incompatible_model("load: '%s' in %s: fused experts are dense only (spec §12.2)"
                                       % (quantized[0], where))
        if name not in tensors:
            raise E.incompatible_model("load: missing tensor '%s' in %s beside '%s' (spec §12.2)"
                                       % (name, where, FUSED[1] if name == FUSED[0] else FUSED[0]))
    gu = to_f64(tensors[FUSED[0]], FUSED[0])
    dn = to_f64(tensors[FUSED[1]], FUSED[1])
    if gu.ndim != 3 or gu.shape[1] % 2:
        raise E.incompatible_model("load: '%s' has shape %s, expected [E, 2·I_e, H] (spec §12.2)"
                                   % (FUSED[0], list(gu.shape)))
    i = gu.shape[1] // 2
    return gu[:, :i], gu[:, i:], dn


def _stacked(tensors, path, quant, where):
    """MLX stacked `switch_mlp.<proj>.weight` [E, out, in]; quantized, `.weight`/`.scales`/`.biases` [E, out, ·] use
    the spec of `path`, and expert e is slice e of each."""
    wn = path + ".weight"
    if wn not in tensors:
        raise E.incompatible_model("load: missing tensor '%s' in %s (spec §12.2)" % (wn, where))
    if path + ".scales" not in tensors:
        a = to_f64(tensors[wn], wn)
        if a.ndim != 3:
            raise E.incompatible_model("load: '%s' has shape %s, expected [E, out, in] (spec §12.2)"
                                       % (wn, list(a.shape)))
        return a
    w, s, b = tensors[wn], tensors[path + ".scales"], tensors.get(path + ".biases")
    parts = [x for x in (w, s, b) if x is not None]
    if any(len(x[1]) != 3 or x[1][0] != w[1][0] for x in parts):
        raise E.incompatible_model("load: '%s' weight %s, scales %s%s are not stacked [E, out, ·] (spec §12.2)" % (
            path, w[1], s[1], "" if b is None else ", biases %s" % (b[1],)))
    spec = quant.spec(path)

    def part(x, e):
        return None if x is None else (x[0], list(x[1][1:]), x[2][e])
    return np.stack([dequantize("%s[%d]" % (path, e), part(w, e), part(s, e), part(b, e), spec)
                     for e in range(w[1][0])])


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

        def count(key):   # §12.1: optional here; required or checked against the tensors once the layer is MoE
            v = text.get(key)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int)):
                raise E.incompatible_model("load: config '%s' = %r, expected an integer (spec §12.1)" % (key, v))
            return v

        self.num_experts = count("num_experts")
        self.top_k = count("num_experts_per_tok")
        self.moe_intermediate = count("moe_intermediate_size")
        self.shared_intermediate = count("shared_expert_intermediate_size")
        self.norm_topk_prob = text.get("norm_topk_prob", True)
        if not isinstance(self.norm_topk_prob, bool):
            raise E.incompatible_model("load: config 'norm_topk_prob' = %r, expected true or false (spec §12.1)"
                                       % (self.norm_topk_prob,))


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
    v = w.embed.shape[0]
    want = {"fc": (h, 2 * h), "layers.0.self_attn.q_proj": (nh * 2 * d, h),
            "layers.0.self_attn.k_proj": (nkv * d, h), "layers.0.self_attn.v_proj": (nkv * d, h),
            "layers.0.self_attn.o_proj": (h, nh * d),
            "pre_fc_norm_embedding.weight": (h,), "pre_fc_norm_hidden.weight": (h,),
            "layers.0.input_layernorm.weight": (h,), "layers.0.self_attn.q_norm.weight": (d,),
            "layers.0.self_attn.k_norm.weight": (d,), "layers.0.post_attention_layernorm.weight": (h,),
            "norm.weight": (h,)}
    if w.moe is None:
        inter = w.t["layers.0.mlp.gate_proj"].shape[0]
        want.update({"layers.0.mlp.gate_proj": (inter, h), "layers.0.mlp.up_proj": (inter, h),
                     "layers.0.mlp.down_proj": (h, inter)})
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
    arrays = list(w.t.items()) + [("embed", w.embed), ("head", w.head)]
    if w.moe is not None:
        arrays += check_moe(cfg, w.moe)
    for n, a in arrays:
        if not np.all(np.isfinite(a)):
            idx = int(np.flatnonzero(~np.isfinite(a))[0])
            raise E.incompatible_model("load: tensor '%s' element %d is %r, not finite" % (n, idx, a.flat[idx]))


def check_moe(cfg, m):
    """§12.1, §12.2: the MoE tensors' shapes against H and each other, and E, I_e, I_s, K against the config;
    returns (name, array) pairs for the finiteness check."""
    h, e, i = cfg.hidden, m.experts, m.gate.shape[1]
    s = m.shared_gate.shape[0]
    if m.gate.shape[2] != h:
        raise E.incompatible_model("load: the %s experts take inputs of width %d, expected H = %d (spec §12.2)"
                                   % (m.layout, m.gate.shape[2], h))
    want = {"layers.0.mlp.gate.weight": (m.router, (e, h)),
            "layers.0.mlp.shared_expert.gate_proj.weight": (m.shared_gate, (s, h)),
            "layers.0.mlp.shared_expert.up_proj.weight": (m.shared_up, (s, h)),
            "layers.0.mlp.shared_expert.down_proj.weight": (m.shared_down, (h, s)),
            "layers.0.mlp.shared_expert_gate.weight": (m.shared_gate_w, (1, h))}
    for n, (a, shape) in want.items():
        if a.shape != shape:
            raise E.incompatible_model("load: '%s' has shape %s, expected %s (E = %d %s experts, spec §12.2)"
                                       % (n, list(a.shape), list(shape), e, m.layout))
    for key, have, what in (("num_experts", e, "routed experts"), ("moe_intermediate_size", i, "expert width I_e"),
                            ("shared_expert_intermediate_size", s, "shared expert width I_s")):
        declared = getattr(cfg, {"num_experts": "num_experts", "moe_intermediate_size": "moe_intermediate",
                                 "shared_expert_intermediate_size": "shared_intermediate"}[key])
        if declared is not None and declared != have:
            raise E.incompatible_model("load: the tensors hold %s = %d, config %s = %d (spec §12.1)"
                                       % (what, have, key, declared))
    if cfg.top_k is None:
        raise E.incompatible_model("load: config has no 'num_experts_per_tok', required for a MoE layer (spec §12.1)")
    if not 1 <= cfg.top_k <= e:
        raise E.incompatible_model("load: config num_experts_per_tok = %d outside [1, %d], the expert count "
                                   "(spec §12.1)" % (cfg.top_k, e))
    return [(p, getattr(m, _MOE_FIELD[p])) for p in MOE_LINEARS] + [
        ("experts gate_proj", m.gate), ("experts up_proj", m.up), ("experts down_proj", m.down)]
