"""The numpy engine's MoE MTP layer (spec §12) against the external float64 reference computed with Hugging Face
transformers' own Qwen3.5-MoE classes (reference/src/test/data/qwen35-moe-mtp-transformers): every MoE intermediate
and every chosen expert of the prefill, a greedy round of depth 4 and a rollback, driven through the row lifecycle;
the three expert layouts (the reference's fused tensors split per expert and stacked as MLX writes them, dense and
4-bit); the router's float32 softmax and tie rule by hand; and the load refusals of §12.2."""

import json
import math
import os
import tempfile
import unittest

import numpy as np

from mtp_wire import INCOMPATIBLE_MODEL, MtpError
from tests.support import EXTERNAL_MOE, GREEDY, external, f32, i32, nb
from tests.test_quant import pack, write_safetensors

MOE = ("router_logits", "router_probs", "topk_weights", "expert_out", "routed_out", "shared_act", "shared_out",
       "shared_gate_logit", "shared_gate", "moe_out")
I_E = 32  # the reference's moe_intermediate_size


def nmse(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.sum((a - b) ** 2) / np.sum(b ** 2))


def moe_external(variant):
    return external(variant, EXTERNAL_MOE)


@unittest.skipUnless(os.path.isdir(EXTERNAL_MOE), "external MoE reference data not found at " + EXTERNAL_MOE)
class MoeExternalReferenceTest(unittest.TestCase):
    # The float64 router reproduces the reference's float64 arithmetic: bf16 weights widen exactly (~1e-31); f32
    # weights fold 1 + w in float32 once (spec §11.4), ~1e-15. The float32 router (spec §12.3, the engine's default)
    # rounds probabilities and weights to f32: ~1e-14, with the same experts in the same slots.
    BOUND = {("bfloat16", "float64"): 1e-24, ("float32", "float64"): 1e-12,
             ("bfloat16", "float32"): 1e-12, ("float32", "float32"): 1e-12}

    def check_row(self, got, ex, prefix, bound, where):
        np.testing.assert_array_equal(got["topk_indices"], ex[prefix + "topk_indices"], where)
        for name in MOE:
            self.assertLess(nmse(got[name], ex[prefix + name]), bound, "%s %s" % (where, name))

    def test_prefill_trace_reproduces_every_moe_intermediate(self):
        for variant in ("bfloat16", "float32"):
            for router in ("float64", "float32"):
                d, ex = moe_external(variant)
                bound = self.BOUND[variant, router]
                model = nb.Model(d, identity="external", router=router)
                model.block.moe_trace = []
                cache = nb.RowCache(model.cfg.kv_heads, model.cfg.head_dim)
                y = model.block.forward(cache, ex["prefill_tokens"], ex["target_hidden"][:8])
                self.assertLess(nmse(y, ex["prefill_y"]), bound)
                trace = model.block.moe_trace
                self.assertEqual([p for p, _ in trace], list(range(8)))
                got = {k: np.stack([t[k] for _, t in trace]) for k in trace[0][1]}
                where = "%s weights, %s router" % (variant, router)
                np.testing.assert_array_equal(got["topk_indices"], ex["trace_topk_indices"], where)
                for name in MOE + ("mlp_in", "h2"):
                    want = ex["trace_" + name]
                    self.assertLess(nmse(got[name].reshape(want.shape), want), bound, "%s %s" % (where, name))
                if router == "float32":   # f32 probabilities, as the reference's stock router computes them
                    self.assertLess(np.abs(got["router_probs"] - ex["trace_router_probs"]).max(), 1e-6)

    def run_lifecycle(self, variant, router):
        d, ex = moe_external(variant)
        bound = self.BOUND[variant, router]
        model = nb.Model(d, identity="external", router=router)
        model.block.moe_trace = trace = []
        g = model.open_rows([None])
        g.prefill(i32(ex["prompt_tokens"][None]), f32(ex["target_hidden"][None]))
        kv = g.rows[0].kv
        self.assertLess(nmse(kv.keys(), ex["prefill_kv_k"]), bound)
        self.assertLess(nmse(kv.values(), ex["prefill_kv_v"]), bound)
        for r, (pos, t) in enumerate(trace):
            self.assertEqual(pos, r)
            np.testing.assert_array_equal(t["topk_indices"], ex["trace_topk_indices"][r])

        del trace[:]
        proposals = g.draft([int(ex["pending_token"][0])], 4, [0], [GREEDY])
        self.assertEqual(proposals, [[int(t) for t in ex["draft_tokens"]]])
        self.assertEqual([p for p, _ in trace], [8, 9, 10, 11])
        for step, (_, t) in enumerate(trace):
            self.check_row(t, ex, "draft_step%d_" % step, bound, "%s/%s draft step %d" % (variant, router, step))
        self.assertLess(nmse(kv.keys(), ex["round_kv_k"]), bound)
        self.assertLess(nmse(kv.values(), ex["round_kv_v"]), bound)

        # commit accepting d_0 keeps rows 0..9; the next round's first step is the reference's rollback forward
        h = ex["verify_hidden"].shape[0]
        ctx = np.zeros((1, 5, h), np.float32)
        ctx[0, 1] = ex["verify_hidden"]
        del trace[:]
        g.commit([1], f32(ctx))
        self.assertEqual(trace, [])           # not a full acceptance: commit runs no forward (spec §5.8)
        proposals = g.draft([int(ex["rollback_input_token"][0])], 1, [0], [GREEDY])
        self.assertEqual(proposals, [[int(ex["rollback_token"][0])]])
        self.assertEqual([p for p, _ in trace], [int(ex["rollback_position"][0])])
        self.check_row(trace[0][1], ex, "rollback_", bound, "%s/%s rollback" % (variant, router))
        self.assertLess(nmse(kv.keys(), ex["rollback_kv_k"]), bound)
        self.assertLess(nmse(kv.values(), ex["rollback_kv_v"]), bound)

    def test_lifecycle_bfloat16_float32_router(self):
        self.run_lifecycle("bfloat16", "float32")

    def test_lifecycle_float32_float32_router(self):
        self.run_lifecycle("float32", "float32")

    def test_lifecycle_bfloat16_float64_router(self):
        self.run_lifecycle("bfloat16", "float64")

    def test_router_boundary_margins(self):
        """p_(K) − p_(K+1) of every MoE row, from the engine's f32 probabilities, against the reference's."""
        d, ex = moe_external("bfloat16")
        model = nb.Model(d, identity="external")
        model.block.moe_trace = trace = []
        g = model.open_rows([None])
        g.prefill(i32(ex["prompt_tokens"][None]), f32(ex["target_hidden"][None]))
        g.draft([int(ex["pending_token"][0])], 4, [0], [GREEDY])
        k = model.cfg.top_k
        margins = [np.sort(t["router_probs"])[::-1][k - 1] - np.sort(t["router_probs"])[::-1][k] for _, t in trace]
        np.testing.assert_allclose(margins, ex["router_boundary_margin"][:12], atol=1e-6)

    def test_chunked_prefill_equals_one_shot(self):
        d, ex = moe_external("bfloat16")
        g = nb.Model(d, identity="external").open_rows([None])
        toks, hid = ex["prompt_tokens"], ex["target_hidden"]
        g.prefill(i32(toks[None, :4]), f32(hid[None, :4]))
        g.prefill(i32(toks[None, 4:]), f32(hid[None, 4:]))
        self.assertLess(nmse(g.rows[0].kv.keys(), ex["chunked_prefill_kv_k"]), 1e-12)
        self.assertLess(nmse(g.rows[0].kv.values(), ex["chunked_prefill_kv_v"]), 1e-12)


class RouterTest(unittest.TestCase):
    def test_ties_rank_the_lower_expert_index_first(self):
        p = np.float32([0.1, 0.3, 0.2, 0.3, 0.1])
        self.assertEqual(list(nb.top_k(p, 2)), [1, 3])
        self.assertEqual(list(nb.top_k(p, 4)), [1, 3, 2, 0])
        self.assertEqual(list(nb.top_k(np.full(8, np.float32(0.125)), 3)), [0, 1, 2])

    def test_equal_logits_give_exactly_uniform_probabilities(self):
        p = nb.softmax_f32(np.full(8, 0.7))
        self.assertEqual(p.dtype, np.float32)
        self.assertTrue(np.all(p == np.float32(0.125)))

    def test_softmax_follows_the_spec_in_float32_scalars(self):
        """§12.3 step 2 restated with Python floats rounded through np.float32 one operation at a time."""
        rng = np.random.default_rng(7)
        for e in (3, 8, 16, 257):
            logits = rng.standard_normal(e) * 3
            l32 = [np.float32(x) for x in logits]
            m = max(l32)
            z = [np.float32(math.exp(float(np.float32(x - m)))) for x in l32]
            s = np.float32(0)
            for v in z:
                s = np.float32(s + v)
            want = np.array([np.float32(v / s) for v in z], np.float32)
            np.testing.assert_array_equal(nb.softmax_f32(logits), want, "E = %d" % e)


# ---------------------------------------------------------------------------------------------------------------
# layouts and refusals, written from the reference's fused float32 weights (raw HF layout, mtp. prefix)

def reference_tensors(variant="float32"):
    d, _ = moe_external(variant)
    raw = nb.read_safetensors(os.path.join(d, "model.safetensors"))
    with open(os.path.join(d, "config.json")) as f:
        cfg = json.load(f)
    return {n: (dt, np.array(a)) for n, (dt, _, a) in raw.items()}, cfg


def load(tmp, tensors, cfg):
    write_safetensors(os.path.join(tmp, "model.safetensors"), tensors)
    with open(os.path.join(tmp, "config.json"), "w") as f:
        json.dump(cfg, f)
    return nb.load_model(tmp)


def split_per_expert(t):
    gu = t.pop("mtp.layers.0.mlp.experts.gate_up_proj")[1]
    dn = t.pop("mtp.layers.0.mlp.experts.down_proj")[1]
    for e in range(gu.shape[0]):
        t["mtp.layers.0.mlp.experts.%d.gate_proj.weight" % e] = ("F32", np.ascontiguousarray(gu[e, :I_E]))
        t["mtp.layers.0.mlp.experts.%d.up_proj.weight" % e] = ("F32", np.ascontiguousarray(gu[e, I_E:]))
        t["mtp.layers.0.mlp.experts.%d.down_proj.weight" % e] = ("F32", np.ascontiguousarray(dn[e]))
    return gu, dn


@unittest.skipUnless(os.path.isdir(EXTERNAL_MOE), "external MoE reference data not found")
class MoeLayoutTest(unittest.TestCase):
    def test_fused_split_not_interleaved(self):
        t, cfg = reference_tensors()
        d, _ = moe_external("float32")
        _, w = nb.load_model(d)
        gu = t["mtp.layers.0.mlp.experts.gate_up_proj"][1]
        self.assertEqual(w.moe.layout, "fused")
        np.testing.assert_array_equal(w.moe.gate[5], gu[5, :I_E])
        np.testing.assert_array_equal(w.moe.up[5], gu[5, I_E:])
        np.testing.assert_array_equal(w.moe.down[5], t["mtp.layers.0.mlp.experts.down_proj"][1][5])

    def test_per_expert_and_stacked_load_the_same_experts(self):
        d, _ = moe_external("float32")
        _, fused = nb.load_model(d)
        for layout in ("per-expert", "stacked"):
            t, cfg = reference_tensors()
            gu, dn = split_per_expert(t)
            if layout == "stacked":
                for n in [n for n in t if ".experts." in n]:
                    del t[n]
                t["mtp.layers.0.mlp.switch_mlp.gate_proj.weight"] = ("F32", np.ascontiguousarray(gu[:, :I_E]))
                t["mtp.layers.0.mlp.switch_mlp.up_proj.weight"] = ("F32", np.ascontiguousarray(gu[:, I_E:]))
                t["mtp.layers.0.mlp.switch_mlp.down_proj.weight"] = ("F32", dn)
            with tempfile.TemporaryDirectory() as tmp:
                _, w = load(tmp, t, cfg)
            self.assertEqual(w.moe.layout, layout)
            for a in ("router", "gate", "up", "down", "shared_gate", "shared_up", "shared_down", "shared_gate_w"):
                np.testing.assert_array_equal(getattr(w.moe, a), getattr(fused.moe, a), "%s %s" % (layout, a))

    def test_stacked_4bit_dequantizes_each_expert_with_its_modules_spec(self):
        """MLX switch_mlp codes [E, out, in·bits/32] with scales/biases [E, out, groups]: gate/up at the default 4
        bits, down_proj overridden to 8 bits by its module path; expert e is slice e."""
        t, cfg = reference_tensors()
        for n in ("mtp.layers.0.mlp.experts.gate_up_proj", "mtp.layers.0.mlp.experts.down_proj"):
            del t[n]
        cfg["quantization"] = {"group_size": 32, "bits": 4, "mode": "affine",
                               "layers.0.mlp.switch_mlp.down_proj": {"bits": 8}}
        rng = np.random.default_rng(3)
        want = {}
        for proj, out, n_in, bits in (("gate_proj", I_E, 64, 4), ("up_proj", I_E, 64, 4), ("down_proj", 64, I_E, 8)):
            codes = rng.integers(0, 1 << bits, (8, out, n_in))
            scales = rng.standard_normal((8, out, n_in // 32)).astype(np.float32)
            biases = rng.standard_normal((8, out, n_in // 32)).astype(np.float32)
            base = "mtp.layers.0.mlp.switch_mlp." + proj
            t[base + ".weight"] = ("U32", np.stack([pack(codes[e], bits) for e in range(8)]))
            t[base + ".scales"] = ("F32", scales)
            t[base + ".biases"] = ("F32", biases)
            want[proj] = (codes, scales, biases)
        with tempfile.TemporaryDirectory() as tmp:
            _, w = load(tmp, t, cfg)
        self.assertEqual(w.moe.layout, "stacked")
        for proj, got in (("gate_proj", w.moe.gate), ("up_proj", w.moe.up), ("down_proj", w.moe.down)):
            codes, scales, biases = want[proj]
            for e, o, i in ((0, 0, 0), (3, 5, 33), (7, 63, 63), (6, 2, 31), (1, 17, 40)):
                o, i = o % got.shape[1], i % got.shape[2]
                expect = float(scales[e, o, i // 32]) * int(codes[e, o, i]) + float(biases[e, o, i // 32])
                self.assertEqual(got[e, o, i], expect, (proj, e, o, i))

    def test_per_expert_4bit_uses_each_experts_own_override(self):
        t, cfg = reference_tensors()
        split_per_expert(t)
        cfg["quantization"] = {"group_size": 32, "bits": 4, "mode": "affine",
                               "mtp.layers.0.mlp.experts.3.down_proj": {"bits": 8}}
        rng = np.random.default_rng(4)
        cases = {}
        for e, bits in ((2, 4), (3, 8)):
            base = "mtp.layers.0.mlp.experts.%d.down_proj" % e
            codes = rng.integers(0, 1 << bits, (64, I_E))
            scales = rng.standard_normal((64, 1)).astype(np.float32)
            biases = rng.standard_normal((64, 1)).astype(np.float32)
            t[base + ".weight"] = ("U32", pack(codes, bits))
            t[base + ".scales"] = ("F32", scales)
            t[base + ".biases"] = ("F32", biases)
            cases[e] = (codes, scales, biases)
        with tempfile.TemporaryDirectory() as tmp:
            _, w = load(tmp, t, cfg)
        for e, (codes, scales, biases) in cases.items():
            expect = codes * scales.astype(np.float64) + biases.astype(np.float64)
            np.testing.assert_array_equal(w.moe.down[e], expect, "expert %d" % e)
        np.testing.assert_array_equal(w.moe.down[4], t["mtp.layers.0.mlp.experts.4.down_proj.weight"][1])

    def test_norm_topk_prob_false_keeps_the_chosen_probabilities(self):
        d, ex = moe_external("bfloat16")
        model = nb.Model(d, identity="external")
        model.block.moe.norm_topk_prob = False
        _, t = model.block.moe.forward_row(ex["trace_mlp_in"][0])
        np.testing.assert_array_equal(t["topk_weights"], t["router_probs"][t["topk_indices"]])
        self.assertLess(float(t["topk_weights"].sum()), 1.0)

    def refused(self, edit, config=None, *needles):
        t, cfg = reference_tensors()
        edit(t)
        if config:
            config(cfg)
        with tempfile.TemporaryDirectory() as tmp:
            with self.assertRaises(MtpError) as e:
                load(tmp, t, cfg)
        self.assertEqual(e.exception.kind, INCOMPATIBLE_MODEL, e.exception.message)
        for n in needles:
            self.assertIn(n, e.exception.message)
        return e.exception.message

    def test_refusals_name_the_tensor_and_both_values(self):
        zeros = ("F32", np.zeros((32, 64), np.float32))

        def dense_beside(t):
            t["mtp.layers.0.mlp.gate_proj.weight"] = zeros
        self.refused(dense_beside, None, "layers.0.mlp.gate_proj.weight", "§12.2")

        def missing_expert(t):
            split_per_expert(t)
            for p in ("gate_proj", "up_proj", "down_proj"):
                del t["mtp.layers.0.mlp.experts.5.%s.weight" % p]
        self.refused(missing_expert, None, "expert 5", "expert 7")

        def odd_expert(t):
            split_per_expert(t)
            t["mtp.layers.0.mlp.experts.6.up_proj.weight"] = ("F32", np.zeros((16, 64), np.float32))
        self.refused(odd_expert, None, "layers.0.mlp.experts.6.up_proj.weight", "[16, 64]", "[32, 64]")

        def two_layouts(t):
            t["mtp.layers.0.mlp.switch_mlp.gate_proj.weight"] = ("F32", np.zeros((8, 32, 64), np.float32))
        self.refused(two_layouts, None, "fused", "stacked")

        def quantized_fused(t):
            t["mtp.layers.0.mlp.experts.gate_up_proj.scales"] = ("F32", np.zeros((8, 64, 2), np.float32))
        self.refused(quantized_fused, None, "gate_up_proj.scales", "dense only")

        def keep(t):
            pass
        self.refused(keep, lambda c: c["text_config"].update(num_experts=16), "num_experts = 16", "= 8")
        self.refused(keep, lambda c: c["text_config"].update(moe_intermediate_size=64), "= 64", "= 32")
        self.refused(keep, lambda c: c["text_config"].update(shared_expert_intermediate_size=8), "= 8", "= 32")
        self.refused(keep, lambda c: c["text_config"].pop("num_experts_per_tok"), "num_experts_per_tok")
        self.refused(keep, lambda c: c["text_config"].update(num_experts_per_tok=9), "= 9", "[1, 8]")
        self.refused(keep, lambda c: c["text_config"].update(norm_topk_prob="yes"), "norm_topk_prob")

        def bad_router(t):
            t["mtp.layers.0.mlp.gate.weight"] = ("F32", np.zeros((7, 64), np.float32))
        self.refused(bad_router, None, "layers.0.mlp.gate.weight", "[7, 64]", "[8, 64]")


if __name__ == "__main__":
    unittest.main()
