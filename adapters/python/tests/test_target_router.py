"""The target's router choices (WIRE.md §5.2 `experts`, spec §12.5): the numpy engine's MoE target reports one
(row, position, layer, experts) per token and MoE layer of a prefill or verify, in the order computed, through
numpy_mtp's own TargetGroup, the target skeleton (examples/numpy_skeleton_target.py) and over the wire; a commit and
a failed call report none. The targets are the external transformers reference's dense tiny target with every MLP
replaced by a MoE block whose router is built so the expected experts follow without running the engine: an all-zero
router ties every expert (the lower indices win, spec §12.3), and router rows (e + 1)·u rank the experts by index,
descending or ascending with the sign of u·x, so the slot order is [7, 6] or [0, 1] and nothing else."""

import json
import os
import sys
import tempfile
import unittest

import numpy as np

from mtp_wire import BACKEND_FAILURE, ILLEGAL_STATE, LoadArgs, MtpError
from tests.support import ADAPTER, EXAMPLES, REPO, WireClient, hello_args, i32, nb

import numpy_skeleton_target as st  # noqa: E402 (examples/ is on sys.path through tests.support)
from numpy_mtp.target import HybridTarget, TargetGroup  # noqa: E402

DENSE = os.path.join(REPO, "reference", "src", "test", "data", "qwen35-target-transformers", "float32")
E_, K, I_E = 8, 2, 32


def moe_target(tmp, router):
    """A MoE copy of the dense tiny target in `tmp`: 8 experts, top-2, fused experts; `router` "zero" or "ramp"."""
    raw = nb.read_safetensors(os.path.join(DENSE, "model.safetensors"))
    with open(os.path.join(DENSE, "config.json")) as f:
        cfg = json.load(f)
    text = cfg["text_config"]
    text.update(num_experts=E_, num_experts_per_tok=K, moe_intermediate_size=I_E,
                shared_expert_intermediate_size=I_E, norm_topk_prob=True)
    h = text["hidden_size"]
    rng = np.random.default_rng(11)
    out = {}
    for name, (dt, _, arr) in raw.items():
        if name.startswith("model.language_model.") and ".mlp." not in name:
            out[name] = (dt, np.array(arr))
    u = rng.normal(size=h).astype(np.float32)
    for li in range(text["num_hidden_layers"]):
        p = "model.language_model.layers.%d.mlp." % li
        gate = np.zeros((E_, h), np.float32) if router == "zero" else np.outer(np.arange(1, E_ + 1), u) * 0.05

        def w(*shape):
            return (rng.normal(size=shape) * 0.1).astype(np.float32)
        out[p + "gate.weight"] = ("F32", np.asarray(gate, np.float32))
        out[p + "experts.gate_up_proj"] = ("F32", w(E_, 2 * I_E, h))
        out[p + "experts.down_proj"] = ("F32", w(E_, h, I_E))
        out[p + "shared_expert.gate_proj.weight"] = ("F32", w(I_E, h))
        out[p + "shared_expert.up_proj.weight"] = ("F32", w(I_E, h))
        out[p + "shared_expert.down_proj.weight"] = ("F32", w(h, I_E))
        out[p + "shared_expert_gate.weight"] = ("F32", w(1, h))
    from tests.test_quant import write_safetensors
    write_safetensors(os.path.join(tmp, "model.safetensors"), out)
    with open(os.path.join(tmp, "config.json"), "w") as f:
        json.dump(cfg, f)
    return tmp


def config_of(t):
    s = t.s
    return {"hiddenSize": s.attn.hidden, "numHeads": s.attn.heads, "numKvHeads": s.attn.kv_heads,
            "headDim": s.attn.head_dim, "vocabSize": s.vocab, "intermediateSize": s.intermediate,
            "layerTypes": s.types, "gdn": {"numKeyHeads": s.hk, "numValueHeads": s.hv, "keyHeadDim": s.dk,
                                           "valueHeadDim": s.dv, "convKernel": s.k}}


class Faulty(st.NumpyTargetRows):
    fail_at = None

    def reached(self, call, step):
        if (call, step) == self.fail_at:
            raise RuntimeError("injected at %s/%s" % (call, step))


def groups(t, d):
    """numpy_mtp's TargetGroup and the skeleton adapter over the same target."""
    return TargetGroup(t), Faulty(t, LoadArgs(d, "hf", t.identity, {}, config_of(t)))


def keys(choices):
    return [(r, p, layer) for r, p, layer, _ in choices]


def expected_keys(at, width, layers):
    """Row by row, layer by layer, tokens in order: the order the numpy engine computes them."""
    return [(b, p + i, li) for b, p in enumerate(at) for li in range(layers) for i in range(width)]


@unittest.skipUnless(os.path.isdir(DENSE), "external target reference data not found")
class TargetRouterChoicesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dirs = {}
        for router in ("zero", "ramp"):
            d = os.path.join(cls.tmp.name, router)
            os.mkdir(d)
            cls.dirs[router] = moe_target(d, router)
        cls.targets = {r: HybridTarget(d, "moe-" + r) for r, d in cls.dirs.items()}

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_an_exact_tie_reports_the_lower_indices_at_every_token_layer_and_row(self):
        t = self.targets["zero"]
        layers = len(t.s.types)
        for g in groups(t, self.dirs["zero"]):
            with self.subTest(group=type(g).__name__):
                g.append([None, None])
                g.prefill(i32([[3, 1, 4], [1, 5, 9]]))
                got = g.router_choices()
                self.assertEqual(keys(got), expected_keys([0, 0], 3, layers))
                self.assertTrue(all(list(e) == [0, 1] for *_, e in got), got[:3])
                g.verify(i32([[2, 6], [5, 3]]))
                self.assertEqual(keys(g.router_choices()), expected_keys([3, 3], 2, layers))
                g.commit([0, 1])
                self.assertEqual(g.router_choices(), [])   # a commit computes nothing and reports nothing
                g.verify(i32([[7], [8]]))                  # rows now at P = 4 and 5
                self.assertEqual(keys(g.router_choices()), expected_keys([4, 5], 1, layers))

    def test_the_slot_order_is_descending_probability(self):
        t = self.targets["ramp"]
        seen = set()
        for g in groups(t, self.dirs["ramp"]):
            g.append([None])
            g.prefill(i32([[11, 200, 37, 5, 400, 99]]))
            got = g.router_choices()
            self.assertEqual(len(got), 6 * len(t.s.types))
            for *_, e in got:
                self.assertIn(list(e), ([7, 6], [0, 1]))
                seen.add(tuple(e))
        self.assertEqual(seen, {(7, 6), (0, 1)}, "the ramp router should reach both ends on these tokens")

    def test_skeleton_and_target_group_report_the_same_choices_and_a_verify_those_of_a_prefill(self):
        t = self.targets["ramp"]
        old, new = groups(t, self.dirs["ramp"])
        for g in (old, new):
            g.append([None, None])
        toks, ver = i32([[1, 2, 3, 4], [9, 8, 7, 6]]), i32([[5, 6, 7], [1, 1, 2]])
        old.prefill(toks)
        new.prefill(toks)
        self.assertEqual(old.router_choices(), new.router_choices())
        old.verify(ver)
        new.verify(ver)
        self.assertEqual(old.router_choices(), new.router_choices())
        # one prefill of the seven tokens routes the last three as the verify did
        whole = groups(t, self.dirs["ramp"])[1]
        whole.append([None, None])
        whole.prefill(i32(np.concatenate([toks.array(), ver.array()], axis=1)))
        tail = [c for c in whole.router_choices() if c[1] >= 4]
        self.assertEqual(sorted(map(repr, tail)), sorted(map(repr, new.router_choices())))

    def test_a_failed_or_refused_call_reports_nothing(self):
        t = self.targets["zero"]
        g = groups(t, self.dirs["zero"])[1]
        g.append([None])
        g.prefill(i32([[1, 2]]))
        self.assertTrue(g.router_choices())
        for step in ("forward", "publish"):
            g.fail_at = ("verify", step)
            with self.assertRaises(Exception):
                g.verify(i32([[3, 4]]))
            self.assertEqual(g.router_choices(), [], step)
            g.fail_at = None
            g.prefill(i32([[1]]))
            self.assertTrue(g.router_choices())
        with self.assertRaises(MtpError) as e:
            g.commit([0])   # no round open: refused, and the prefill's choices are gone
        self.assertEqual(e.exception.kind, ILLEGAL_STATE)
        self.assertEqual(g.router_choices(), [])
        old = groups(t, self.dirs["zero"])[0]
        old.append([None])
        old.prefill(i32([[1, 2]]))
        with self.assertRaises(MtpError):
            old.verify(i32([[1, 10 ** 6]]))
        self.assertEqual(old.router_choices(), [])

    def test_a_dense_target_reports_nothing(self):
        t = HybridTarget(DENSE, "dense")
        for g in groups(t, DENSE):
            g.append([None])
            g.prefill(i32([[1, 2, 3]]))
            g.verify(i32([[4, 5]]))
            self.assertEqual(g.router_choices(), [])


@unittest.skipUnless(os.path.isdir(DENSE), "external target reference data not found")
class TargetRouterChoicesOverTheWireTest(unittest.TestCase):
    ENGINES = {"numpy_backend.py": "numpy-mtp", "numpy_skeleton_backend.py": "numpy-mtp-skeleton"}

    def test_prefill_and_verify_replies_carry_experts_commit_and_dense_ones_none(self):
        with tempfile.TemporaryDirectory() as tmp:
            d = moe_target(tmp, "zero")
            t = HybridTarget(d, "moe")
            layers = len(t.s.types)
            for script, name in self.ENGINES.items():
                with self.subTest(engine=script):
                    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ADAPTER, EXAMPLES]))
                    c = WireClient([sys.executable, os.path.join(EXAMPLES, script)], env=env)
                    try:
                        r, _ = c.ok("hello", hello_args())
                        self.assertEqual(r["engine"]["name"], name)
                        self.assertIs(r["capabilities"]["targetRouterChoices"], True)
                        m = c.ok("loadTarget", {"directory": d, "layout": "hf", "identity": "moe", "options": {},
                                                "config": config_of(t)})[0]["model"]
                        g = c.ok("targetOpenRows", {"model": m, "checkpoints": [None, None]})[0]["group"]
                        res, _ = c.ok("targetPrefill", {"group": g, "tokens": {"tensor": 0}},
                                      [i32([[3, 1, 4], [1, 5, 9]])])
                        self.assertEqual(res["experts"], [[b, p, li, 0, 1] for b, p, li in
                                                          expected_keys([0, 0], 3, layers)])
                        res, _ = c.ok("targetVerify", {"group": g, "tokens": {"tensor": 0}}, [i32([[2, 6], [5, 3]])])
                        self.assertEqual(res["experts"], [[b, p, li, 0, 1] for b, p, li in
                                                          expected_keys([3, 3], 2, layers)])
                        res, _ = c.ok("targetCommit", {"group": g, "accepted": [1, 0]})
                        self.assertNotIn("experts", res)
                        h, _ = c.call("targetVerify", {"group": g, "tokens": {"tensor": 0}}, [i32([[2, 512]])])
                        self.assertFalse(h["ok"])
                        self.assertNotIn("experts", h)
                        dense = c.ok("loadTarget", {"directory": DENSE, "layout": "hf", "identity": "dense",
                                                    "options": {}, "config": config_of(HybridTarget(DENSE, "x"))})
                        g = c.ok("targetOpenRows", {"model": dense[0]["model"], "checkpoints": [None]})[0]["group"]
                        res, _ = c.ok("targetPrefill", {"group": g, "tokens": {"tensor": 0}}, [i32([[1, 2]])])
                        self.assertNotIn("experts", res)
                    finally:
                        c.close()

    def test_a_malformed_list_fails_the_call_and_poisons_the_group(self):
        import io
        from mtp_wire import server as S
        from mtp_wire.target import TargetModel

        class Rows:
            choices = None

            def prefill(self, tokens):
                return (i32([[0]]),) * 3

            def router_choices(self):
                return self.choices

        class Model(TargetModel):
            def open_rows(self, checkpoints):
                return Rows()

        class Engine:
            def load_target(self, *args):
                return Model()
        srv = S.Server(Engine(), io.BytesIO(), io.BytesIO(), io.StringIO())
        m = srv.dispatch("loadTarget", {})[0]["model"]
        good = ([(0, 3, 1, [5, 2]), (1, 3, 0, (4,))], [[0, 3, 1, 5, 2], [1, 3, 0, 4]])
        g = srv.dispatch("targetOpenRows", {"model": m})[0]["group"]
        srv._target.groups[g].choices = good[0]
        self.assertEqual(srv.dispatch("targetPrefill", {"group": g})[0]["experts"], good[1])
        for bad in ([(0, 3, [5])], [(0, 3, -1, [5])], [(0, 3, 1, [])], [(0, 3, 1, 2, [5])], [(0, 3, 1, [2 ** 31])],
                    [None]):
            g = srv.dispatch("targetOpenRows", {"model": m})[0]["group"]
            srv._target.groups[g].choices = bad
            with self.assertRaises(MtpError, msg=repr(bad)) as e:
                srv.dispatch("targetPrefill", {"group": g})
            self.assertEqual(e.exception.kind, BACKEND_FAILURE)
            self.assertTrue(e.exception.poisoned, repr(bad))
            self.assertIn("targetPrefill: router_choices()[0]", e.exception.message)
            self.assertIn(g, srv._target.poisoned)


class TransformersRouterHookTest(unittest.TestCase):
    """transformers_target.py's router hook without torch: what the hook keeps of `Qwen3_5MoeTopKRouter`'s output
    (router_logits, router_scores, router_indices) and the (position, layer, experts) it makes of it."""

    def test_the_routers_indices_become_position_layer_experts_in_the_order_run(self):
        import transformers_target as tt

        class T:   # a tensor as the hook sees one
            def __init__(self, a):
                self.a = np.asarray(a)

            def is_floating_point(self):
                return self.a.dtype.kind == "f"

            def detach(self):
                return self

            def to(self, device):
                return self

            def numpy(self):
                return self.a

        class FakeTorch:
            @staticmethod
            def is_tensor(x):
                return isinstance(x, T)
        t = object.__new__(tt.TorchTarget)
        t.torch, t._routed = FakeTorch, []
        t._keep_indices(2, (T(np.zeros((2, 8))), T([[0.6, 0.4]] * 2), T([[5, 1], [0, 7]])))
        t._keep_indices(3, (T(np.zeros((2, 8))), T(np.zeros((2, 2)))))   # no integer output: nothing kept
        t._keep_indices(0, (T(np.zeros((2, 8))), T(np.zeros((2, 2))), T([[3, 4], [4, 3]])))
        self.assertEqual(tt.routed_experts(10, 2, t._routed),
                         [(10, 2, [5, 1]), (11, 2, [0, 7]), (10, 0, [3, 4]), (11, 0, [4, 3])])


if __name__ == "__main__":
    unittest.main()
