"""The SDK's server loop over a real pipe, as the runner drives it (conformance/WIRE.md): handshake, framing with
binary tensors, one op per contract call, error replies, protocol mismatch, poisoning, stdout hygiene. The engine
is numpy_backend.py, started as a child process; its replies are compared with the same calls made in-process."""

import os
import sys
import unittest

import numpy as np

from mtp_wire import MtpError, Tensor
from mtp_wire.server import read_frame, write_frame
from tests.support import (ADAPTER, EXAMPLES, EXTERNAL, EXTERNAL_MOE, GREEDY, WireClient, external, f32, hello_args,
                           i32, nb)

ENGINE = [sys.executable, os.path.join(EXAMPLES, "numpy_backend.py")]


@unittest.skipUnless(os.path.isdir(EXTERNAL), "external reference data not found")
class WireTest(unittest.TestCase):
    def setUp(self):
        self.c = WireClient(ENGINE)
        self.model_dir = external("bfloat16")[0]

    def tearDown(self):
        self.c.close()

    def load(self):
        self.c.ok("hello", hello_args())
        r, _ = self.c.ok("load", {"directory": self.model_dir, "layout": "hf", "identity": "wire-test",
                                  "options": {}, "config": {}})
        return r["model"]

    def test_handshake_claims_a_profile_and_capabilities(self):
        r, _ = self.c.ok("hello", hello_args())
        self.assertEqual(r["protocol"], "mtp-oracle-wire/1")
        self.assertEqual(r["engine"]["name"], "numpy-mtp")
        self.assertEqual(r["profiles"][0]["tolerance"], {"name": "f32", "tokenGap": 1e-4, "kvNmse": 1e-9,
                                                         "hiddenNmse": 0})
        self.assertTrue(r["capabilities"]["seededSampling"])
        self.assertEqual(self.c.ok("ping")[0], {})

    def test_moe_replies_list_the_chosen_experts_and_dense_ones_none(self):
        """WIRE.md §5 `experts`: [row, KV position, experts in slot order] per MoE forward row of the call."""
        r, _ = self.c.ok("hello", hello_args())
        self.assertTrue(r["capabilities"]["routerChoices"])
        d, ex = external("bfloat16", EXTERNAL_MOE)
        m = self.c.ok("load", {"directory": d, "layout": "hf", "identity": "moe", "options": {}, "config": {}})[0]
        g = self.c.ok("openRows", {"model": m["model"], "checkpoints": [None]})[0]["group"]
        res, _ = self.c.ok("prefill", {"group": g, "tokens": {"tensor": 0}, "context": {"tensor": 1}},
                           [i32(ex["prompt_tokens"][None]), f32(ex["target_hidden"][None])])
        self.assertEqual(res["experts"], [[0, p] + [int(e) for e in ex["trace_topk_indices"][p]] for p in range(8)])
        greedy = [{"temperature": 0, "topK": 0, "topP": 1, "seed": "0"}]
        res, _ = self.c.ok("draft", {"group": g, "pending": [int(ex["pending_token"][0])], "depth": 2, "steps": [0],
                                     "sampling": greedy})
        self.assertEqual(res["experts"], [[0, 8 + t] + [int(e) for e in ex["draft_step%d_topk_indices" % t]]
                                          for t in range(2)])
        res, _ = self.c.ok("commit", {"group": g, "accepted": [1], "context": {"tensor": 0}},
                           [f32(np.zeros((1, 3, 64)))])
        self.assertNotIn("experts", res)   # accepted < depth: commit runs no forward
        dense = self.load()
        g = self.c.ok("openRows", {"model": dense, "checkpoints": [None]})[0]["group"]
        res, _ = self.c.ok("prefill", {"group": g, "tokens": {"tensor": 0}, "context": {"tensor": 1}},
                           [i32(np.array([[1, 2, 3]])), f32(np.zeros((1, 3, 256)))])
        self.assertEqual(res, {})

    def test_a_malformed_router_choices_list_fails_the_call_and_poisons_the_group(self):
        """The call has run when its experts are read, so a bad list (WIRE.md §5) is a BACKEND_FAILURE that poisons
        the group, as any handler failure after the fact; a good one comes out as [row, position, e...]."""
        import io
        from mtp_wire import errors as E
        from mtp_wire import server as S

        class Rows:
            def __init__(self, choices):
                self.choices = choices

            def router_choices(self):
                return self.choices

        srv = S.Server(None, io.BytesIO(), io.BytesIO(), io.StringIO())
        self.assertEqual(srv._experts("prefill", 1, Rows([(0, 3, [5, 2]), (1, 3, (4,))]), {}),
                         {"experts": [[0, 3, 5, 2], [1, 3, 4]]})
        self.assertEqual(srv._experts("commit", 1, Rows([]), {}), {})
        for g, bad in enumerate([[(-1, 0, [1])], [(0, 2 ** 31, [1])], [(0, 0, [])], [(0, 0, [2 ** 31])],
                                 [(0, 0, [True])], [(0, 0.5, [1])], [(0, 0)], [None]], start=10):
            with self.assertRaises(E.MtpError, msg=repr(bad)) as e:
                srv._experts("draft", g, Rows(bad), {"proposals": [[1]]})
            self.assertEqual(e.exception.kind, E.BACKEND_FAILURE)
            self.assertTrue(e.exception.poisoned, repr(bad))
            self.assertIn(g, srv.poisoned)
            self.assertIn("router_choices()[0]", e.exception.message)

    def test_protocol_mismatch_is_unavailable(self):
        h, _ = self.c.call("hello", {"protocols": ["mtp-oracle-wire/2"], "runner": "tests"})
        self.assertFalse(h["ok"])
        self.assertEqual(h["error"]["kind"], "UNAVAILABLE")
        self.assertIn("mtp-oracle-wire/1", h["error"]["message"])

    def test_a_round_over_the_wire_equals_the_same_calls_in_process(self):
        m = self.load()
        g = self.c.ok("openRows", {"model": m, "checkpoints": [None, None]})[0]["group"]
        rng = np.random.default_rng(3)
        toks = rng.integers(0, 1000, (2, 5)).astype(np.int32)
        ctx = Tensor.from_numpy(rng.standard_normal((2, 5, 256)).astype(np.float32), "BF16")
        self.c.ok("prefill", {"group": g, "tokens": {"tensor": 0}, "context": {"tensor": 1}}, [i32(toks), ctx])
        sampling = [{"temperature": 0, "topK": 0, "topP": 1, "seed": "0"},
                    {"temperature": 0.8, "topK": 20, "topP": 0.9, "seed": "18446744073709551615"}]
        r, _ = self.c.ok("draft", {"group": g, "pending": [4, 5], "depth": 3, "steps": [1, 1], "sampling": sampling})
        verify = f32(rng.standard_normal((2, 4, 256)))
        self.c.ok("commit", {"group": g, "accepted": [3, 1], "context": {"tensor": 0}}, [verify])
        self.assertEqual(self.c.ok("rowCount", {"group": g})[0], {"rows": 2})
        res, tensors = self.c.ok("capture", {"group": g, "row": 0})
        cp = res["checkpoint"]
        self.assertEqual((cp["schema"], cp["processedTokens"], cp["draftOffset"], cp["modelIdentity"]),
                         ("qwen-mtp-v1", 9, 8, "wire-test"))
        self.assertEqual([(t.dtype, t.shape) for t in tensors],
                         [("F32", (1, 2, 8, 64)), ("F32", (1, 2, 8, 64)), ("F32", (1, 1, 256))])

        local = nb.Model(self.model_dir, "wire-test").open_rows([None, None])
        local.prefill(i32(toks), ctx)
        want = local.draft([4, 5], 3, [1, 1], [GREEDY, nb.mtp_wire.RowSampler(0.8, 20, 0.9, (1 << 64) - 1)])
        self.assertEqual(r["proposals"], want)
        local.commit([3, 1], verify)
        mine = local.capture(0)
        self.assertEqual(bytes(tensors[0].data), bytes(mine.keys.data))
        self.assertEqual(bytes(tensors[2].data), bytes(mine.hidden.data))

        # a checkpoint sent back is restored byte for byte
        self.assertEqual(cp["digest"], mine.digest)
        back = {"schema": "qwen-mtp-v1", "processedTokens": 9, "draftOffset": 8, "modelIdentity": "wire-test",
                "keys": {"tensor": 0}, "values": {"tensor": 1}, "hidden": {"tensor": 2}, "digest": cp["digest"]}
        g2 = self.c.ok("openRows", {"model": m, "checkpoints": [back]}, tensors)[0]["group"]
        _, again = self.c.ok("capture", {"group": g2, "row": 0})
        self.assertEqual([bytes(t.data) for t in again], [bytes(t.data) for t in tensors])

    def test_errors_carry_kind_and_message_and_leave_the_group_usable(self):
        m = self.load()
        g = self.c.ok("openRows", {"model": m, "checkpoints": [None]})[0]["group"]
        h, _ = self.c.call("prefill", {"group": g, "tokens": {"tensor": 0}, "context": None},
                           [Tensor.from_numpy(np.zeros((1, 2), np.float32))])
        self.assertEqual(h["error"]["kind"], "INVALID_ARGUMENT")
        self.assertTrue(h["error"]["message"].startswith("prefill: tokens dtype F32"))
        self.assertFalse(h["error"]["poisoned"])
        h, _ = self.c.call("commit", {"group": g, "accepted": [0], "context": None})
        self.assertEqual(h["error"]["kind"], "ILLEGAL_STATE")
        h, _ = self.c.call("draft", {"group": g, "pending": [0], "depth": 1, "steps": [0], "sampling": None})
        self.assertEqual(h["error"]["kind"], "INVALID_ARGUMENT")
        h, _ = self.c.call("capture", {"group": g, "row": {"tensor": 5}})
        self.assertEqual(h["error"]["kind"], "BACKEND_FAILURE")   # a reference to a tensor that is not there
        h, _ = self.c.call("frobnicate", {})
        self.assertEqual(h["error"]["kind"], "UNAVAILABLE")
        h, _ = self.c.call("load", {"directory": "/nonexistent", "layout": "hf", "identity": "x", "options": {}})
        self.assertEqual(h["error"]["kind"], "INCOMPATIBLE_MODEL")
        h, _ = self.c.call("load", {"directory": self.model_dir, "layout": "hf", "identity": "x",
                                    "options": {"precision": "f16"}})
        self.assertEqual(h["error"]["kind"], "INVALID_ARGUMENT")
        self.c.ok("close", {"group": g})
        self.c.ok("close", {"group": g})
        h, _ = self.c.call("rowCount", {"group": g})
        self.assertEqual(h["ok"], True)
        h, _ = self.c.call("capture", {"group": g, "row": 0})
        self.assertEqual((h["error"]["kind"], h["error"]["message"][:24]), ("ILLEGAL_STATE", "capture: the group is cl"))

    def test_a_group_whose_model_was_unloaded_refuses_every_call_but_close(self):
        m = self.load()
        g = self.c.ok("openRows", {"model": m, "checkpoints": [None, None]})[0]["group"]
        self.c.ok("unload", {"model": m})
        for op, args in (("capture", {"row": 0}), ("filterRows", {"keep": [1, 0]}), ("append", {"checkpoints": []}),
                         ("draft", {"pending": [0, 0], "depth": 1, "steps": [0, 0], "sampling": None}),
                         ("commit", {"accepted": [0, 0], "context": None}),
                         ("prefill", {"tokens": None, "context": None})):
            h, _ = self.c.call(op, dict(args, group=g))
            self.assertEqual(h["error"]["kind"], "ILLEGAL_STATE", op)
            self.assertTrue(h["error"]["message"].startswith(op + ": the model this group was opened from is closed"))
        self.assertEqual(self.c.ok("rowCount", {"group": g})[0], {"rows": 2})
        self.c.ok("close", {"group": g})
        h, _ = self.c.call("capture", {"group": g, "row": 0})
        self.assertTrue(h["error"]["message"].startswith("capture: the group is closed"))

    def test_shutdown_exits_zero(self):
        self.c.ok("hello", hello_args())
        self.c.ok("shutdown")
        self.assertEqual(self.c.p.wait(timeout=10), 0)


class TransformersImportSafetyTest(unittest.TestCase):
    def test_without_torch_the_engine_speaks_and_says_why_it_is_unavailable(self):
        try:
            import torch  # noqa: F401
            self.skipTest("torch is installed here; the GPU check script covers this backend")
        except ImportError:
            pass
        c = WireClient([sys.executable, os.path.join(EXAMPLES, "transformers_backend.py"), "--device", "cuda"])
        try:
            r, _ = c.ok("hello", hello_args())
            self.assertIn("torch is not installed", r["unavailable"])
            h, _ = c.call("load", {"directory": "/x", "layout": "hf", "identity": "i", "options": {}})
            self.assertEqual(h["error"]["kind"], "UNAVAILABLE")
            moe = os.path.join(EXTERNAL_MOE, "bfloat16")
            h, _ = c.call("load", {"directory": moe, "layout": "hf", "identity": "i", "options": {}})
            self.assertEqual(h["error"]["kind"], "UNAVAILABLE")
            self.assertIn("torch is not installed", h["error"]["message"])
        finally:
            c.close()

    def test_every_numpy_backend_name_the_transformers_engine_uses_exists(self):
        """transformers_backend runs only where torch is; the names it takes from numpy_backend are checked here (a
        missing re-export once failed its first GPU run)."""
        import re
        with open(os.path.join(EXAMPLES, "transformers_backend.py"), encoding="utf-8") as f:
            names = set(re.findall(r"\bnb\.([A-Za-z_]\w*)", f.read()))
        self.assertIn("ATTENTION_LINEARS", names)
        for n in sorted(names):
            self.assertTrue(hasattr(nb, n), "numpy_backend has no " + n)

    @unittest.skipUnless(os.path.isdir(EXTERNAL_MOE), "external MoE reference data not found")
    def test_moe_weights_map_onto_transformers_fused_and_per_expert_names(self):
        """TorchLayers._moe_state, torch replaced by numpy: transformers' fused gate_up_proj holds each expert's
        gate rows then its up rows (the stored checkpoint's own tensor comes back), or per-expert modules."""
        import transformers_backend as tb

        class FakeTorch:
            @staticmethod
            def from_numpy(a):
                return a
        _, w = nb.load_model(os.path.join(EXTERNAL_MOE, "float32"))
        stored = nb.read_safetensors(os.path.join(EXTERNAL_MOE, "float32", "model.safetensors"))
        mlp = "layers.0.mlp."
        fused = tb.TorchLayers._moe_state(FakeTorch, w.moe, {mlp + "experts.gate_up_proj", mlp + "experts.down_proj"})
        np.testing.assert_array_equal(fused[mlp + "experts.gate_up_proj"],
                                      stored["mtp." + mlp + "experts.gate_up_proj"][2])
        np.testing.assert_array_equal(fused[mlp + "experts.down_proj"], stored["mtp." + mlp + "experts.down_proj"][2])
        for n in ("gate.weight", "shared_expert.gate_proj.weight", "shared_expert.up_proj.weight",
                  "shared_expert.down_proj.weight", "shared_expert_gate.weight"):
            np.testing.assert_array_equal(fused[mlp + n], stored["mtp." + mlp + n][2], n)
        per = tb.TorchLayers._moe_state(FakeTorch, w.moe, {mlp + "experts.0.gate_proj.weight"})
        self.assertEqual(len([k for k in per if ".experts." in k]), 3 * 8)
        np.testing.assert_array_equal(per[mlp + "experts.7.up_proj.weight"],
                                      stored["mtp." + mlp + "experts.gate_up_proj"][2][7, 32:])
        with self.assertRaises(MtpError):
            tb.TorchLayers._moe_state(FakeTorch, w.moe, {mlp + "experts.weight"})


class SdkTest(unittest.TestCase):
    """The SDK with a toy handler: an unexpected exception poisons the group; print() goes to stderr."""

    TOY = r'''
import sys
sys.path.insert(0, %r)
import mtp_wire

class Rows(mtp_wire.DraftRows):
    def row_count(self):
        print("this print must not reach stdout")
        return 1
    def prefill(self, tokens, context):
        raise ZeroDivisionError("boom")
    def close(self):
        pass

class Model(mtp_wire.DraftModel):
    def open_rows(self, checkpoints):
        return Rows()

class Toy(mtp_wire.Engine):
    name = "toy"
    def load(self, directory, layout, identity, options, config):
        return Model()

sys.exit(mtp_wire.serve(Toy()))
''' % ADAPTER

    def test_poisoning_and_stdout_hygiene(self):
        c = WireClient([sys.executable, "-c", self.TOY])
        try:
            c.ok("hello", hello_args())
            m = c.ok("load", {"directory": "x", "layout": "hf", "identity": "i", "options": {}})[0]["model"]
            g = c.ok("openRows", {"model": m, "checkpoints": []})[0]["group"]
            self.assertEqual(c.ok("rowCount", {"group": g})[0], {"rows": 1})
            h, _ = c.call("prefill", {"group": g, "tokens": None, "context": None})
            self.assertEqual((h["error"]["kind"], h["error"]["poisoned"]), ("BACKEND_FAILURE", True))
            h, _ = c.call("rowCount", {"group": g})
            self.assertEqual(h["error"]["kind"], "ILLEGAL_STATE")
            self.assertIn("poisoned", h["error"]["message"])
            c.ok("close", {"group": g})
            c.p.stdin.close()
            c.p.wait(timeout=10)
            log = c.p.stderr.read()
        finally:
            c.close()
        self.assertIn(b"this print must not reach stdout", log)
        self.assertIn(b"ZeroDivisionError", log)

    def test_frames_round_trip_through_bytes(self):
        import io
        buf = io.BytesIO()
        t = Tensor.from_numpy(np.arange(6, dtype=np.float32).reshape(2, 3), "BF16")
        write_frame(buf, {"id": 1, "op": "x", "args": {"t": {"tensor": 0}}}, [t])
        buf.seek(0)
        header, tensors = read_frame(buf)
        self.assertEqual(header["tensors"], [{"dtype": "BF16", "shape": [2, 3], "nbytes": 12}])
        np.testing.assert_array_equal(tensors[0].array(), np.arange(6, dtype=np.float32).reshape(2, 3))
        self.assertIsNone(read_frame(buf))


if __name__ == "__main__":
    unittest.main()
