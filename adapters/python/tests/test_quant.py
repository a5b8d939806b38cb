"""MLX affine dequantization (spec §2) against codes packed by hand, a quant spec lookup with overrides, and the
loader's layout handling (a companion directory written here from the external reference's weights)."""

import json
import os
import struct
import tempfile
import unittest

import numpy as np

from mtp_wire import INCOMPATIBLE_MODEL, MtpError
from tests.support import EXTERNAL, external, nb


def pack(codes, bits):
    """codes [out, in] -> uint32 words [out, in*bits/32]: code i at bits [i*bits, (i+1)*bits) of the row's
    little-endian bit stream (a Python int per row, so no numpy bit tricks are shared with the engine)."""
    rows = []
    for row in codes:
        stream = 0
        for i, c in enumerate(row):
            stream |= int(c) << (i * bits)
        n = len(row) * bits // 32
        rows.append([(stream >> (32 * w)) & 0xFFFFFFFF for w in range(n)])
    return np.array(rows, dtype=np.uint32)


class DequantizeTest(unittest.TestCase):
    def check(self, bits, group):
        out, n_in = 3, 128
        rng = np.random.default_rng(bits)
        codes = rng.integers(0, 1 << bits, (out, n_in))
        scales = rng.standard_normal((out, n_in // group)).astype(np.float32)
        biases = rng.standard_normal((out, n_in // group)).astype(np.float32)
        w = nb.dequantize("fc", ("U32", [out, n_in * bits // 32], pack(codes, bits)),
                          ("F32", list(scales.shape), scales), ("F32", list(biases.shape), biases),
                          (bits, group, "affine"))
        for o in range(out):
            for i in range(0, n_in, 7):
                want = float(scales[o, i // group]) * codes[o, i] + float(biases[o, i // group])
                self.assertEqual(w[o, i], want, (bits, o, i))

    def test_all_bit_widths(self):
        for bits in (2, 3, 4, 5, 6, 8):
            self.check(bits, 32)
        self.check(4, 64)
        self.check(4, 128)

    def test_no_spec_is_refused(self):
        with self.assertRaises(MtpError) as e:
            nb.dequantize("fc", ("U32", [1, 4], np.zeros((1, 4), np.uint32)), ("F32", [1, 1], np.ones((1, 1))),
                          None, None)
        self.assertEqual(e.exception.kind, INCOMPATIBLE_MODEL)

    def test_overrides_by_module_path(self):
        q = nb.Quant({"bits": 4, "group_size": 64, "mtp.fc": {"bits": 8}, "layers.0.mlp.down_proj": False})
        self.assertEqual(q.spec("fc"), (8, 64, "affine"))
        self.assertEqual(q.spec("layers.0.mlp.up_proj"), (4, 64, "affine"))
        self.assertIsNone(q.spec("layers.0.mlp.down_proj"))
        self.assertIsNone(nb.Quant(None).spec("fc"))


def write_safetensors(path, tensors):
    header, blobs, off = {}, [], 0
    for name, (dtype, arr) in tensors.items():
        b = np.ascontiguousarray(arr).tobytes()
        header[name] = {"dtype": dtype, "shape": list(arr.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


@unittest.skipUnless(os.path.isdir(EXTERNAL), "external reference data not found")
class LayoutTest(unittest.TestCase):
    def test_companion_with_4bit_linears_and_target_head_loads_like_the_hf_layout(self):
        d, _ = external("float32")
        raw = nb.read_safetensors(os.path.join(d, "model.safetensors"))
        with open(os.path.join(d, "config.json")) as f:
            cfg = json.load(f)
        text = dict(cfg["text_config"])
        text.update(model_type="qwen3_5_mtp", quantization={"bits": 4, "group_size": 64,
                                                               "layers.0.mlp.down_proj": False})
        with tempfile.TemporaryDirectory() as tmp:
            mtp, codes_of = {}, {}
            for name, (dt, shape, arr) in raw.items():
                if not name.startswith("mtp."):
                    continue
                short = name[4:]
                a = arr.astype(np.float32)
                if short in nb.NORMS:
                    mtp[short] = ("F32", a + np.float32(1.0))
                elif len(shape) == 2 and short != "layers.0.mlp.down_proj.weight":
                    # quantize to 4 bits, group 64, by a plain min/max rule
                    base = short[:-len(".weight")]
                    g = a.reshape(shape[0], -1, 64)
                    lo, hi = g.min(axis=2), g.max(axis=2)
                    scale = ((hi - lo) / 15).astype(np.float32)
                    codes = np.clip(np.rint((g - lo[..., None]) / scale[..., None]), 0, 15).astype(np.int64)
                    codes = codes.reshape(shape[0], shape[1])
                    mtp[base + ".weight"] = ("U32", pack(codes, 4))
                    mtp[base + ".scales"] = ("F32", scale)
                    mtp[base + ".biases"] = ("F32", lo.astype(np.float32))
                    codes_of[base] = (codes, scale, lo)
                else:
                    mtp[short] = ("F32", a)
            write_safetensors(os.path.join(tmp, "model.safetensors"), mtp)
            write_safetensors(os.path.join(tmp, "target_head.safetensors"), {
                "embed_tokens.weight": ("F32", raw["model.language_model.embed_tokens.weight"][2]),
                "lm_head.weight": ("F32", raw["lm_head.weight"][2])})
            with open(os.path.join(tmp, "config.json"), "w") as f:
                json.dump(text, f)
            cfg_c, w_c = nb.load_model(tmp)
        cfg_h, w_h = nb.load_model(d)
        for n in nb.NORMS:
            np.testing.assert_array_equal(w_c.t[n], w_h.t[n])
        np.testing.assert_array_equal(w_c.t["layers.0.mlp.down_proj"], w_h.t["layers.0.mlp.down_proj"])
        codes, scale, lo = codes_of["layers.0.self_attn.q_proj"]
        want = codes * np.repeat(scale.astype(np.float64), 64, axis=1) + np.repeat(lo.astype(np.float64), 64, axis=1)
        np.testing.assert_array_equal(w_c.t["layers.0.self_attn.q_proj"], want)
        np.testing.assert_array_equal(w_c.head, w_h.head)
        self.assertEqual(cfg_c.rotary, 16)


if __name__ == "__main__":
    unittest.main()
