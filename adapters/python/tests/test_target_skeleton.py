"""The target row skeleton (mtp_wire/target_rows.py): the numpy engine's target on it (examples/numpy_skeleton_target.py)
equals numpy_mtp's own target lifecycle (TargetGroup, a separate implementation of the same contract) output for
output and checkpoint for checkpoint, on the external transformers reference's tiny target; bad calls fail with the
Java TargetContract's kinds and messages (copied here from TargetContract.java, RowContract.java and
AbstractTargetRows.java, not from target_rows.py) and change nothing; a failure at any step of any call changes
nothing."""

import os
import re
import unittest

import numpy as np

from mtp_wire import (BACKEND_FAILURE, ILLEGAL_STATE, INCOMPATIBLE_CHECKPOINT, INVALID_ARGUMENT, LoadArgs, MtpError,
                      TargetCheckpoint, Tensor, target_checkpoint_digest)
from mtp_wire import target_rows as TR
from tests.support import ADAPTER, EXAMPLES, REPO, f32, i32

import numpy_skeleton_target as st  # noqa: E402 (examples/ is on sys.path through tests.support)
from numpy_mtp.target import HybridTarget, TargetGroup  # noqa: E402

TARGET_DIR = os.path.join(REPO, "reference", "src", "test", "data", "qwen35-target-transformers", "float32")
T = HybridTarget(TARGET_DIR, "target-id")
S = T.s
CONFIG = {"hiddenSize": S.attn.hidden, "numHeads": S.attn.heads, "numKvHeads": S.attn.kv_heads,
          "headDim": S.attn.head_dim, "vocabSize": S.vocab, "intermediateSize": S.intermediate, "layerTypes": S.types,
          "gdn": {"numKeyHeads": S.hk, "numValueHeads": S.hv, "keyHeadDim": S.dk, "valueHeadDim": S.dv,
                  "convKernel": S.k}}
V, H = S.vocab, S.attn.hidden
N_GDN, N_FULL, CONV, KM1 = len(S.gdn_slots), len(S.full_slots), S.conv_dim, S.k - 1
NKV, D = S.attn.kv_heads, S.attn.head_dim


class Faulty(st.NumpyTargetRows):
    fail_at = None

    def reached(self, call, step):
        if (call, step) == self.fail_at:
            raise RuntimeError("injected at %s/%s" % (call, step))


def new_rows(cps=(), config=CONFIG):
    g = Faulty(T, LoadArgs(TARGET_DIR, "qwen3_5", "target-id", {}, config))
    g.append(list(cps))
    return g


def snapshot(g):
    """What a runner observes of a group outside a round: P per row, and each row's digest or refusal kind."""
    out = [g.processed_tokens()]
    for r in range(g.row_count()):
        try:
            out.append(g.capture(r).digest)
        except MtpError as e:
            out.append(e.kind)
    return out


def outputs(o):
    return [t.array().tobytes() for t in o]


class SkeletonEqualsTheNumpyTargetTest(unittest.TestCase):
    def test_a_lifecycle_gives_the_same_outputs_and_checkpoints(self):
        rng = np.random.default_rng(7)
        old, new = TargetGroup(T), new_rows()
        both = (old, new)
        for g in both:
            g.append([None, None])

        def same(f):
            a, b = f(old), f(new)
            self.assertEqual(a, b)
            return a
        for length, width, acc in ((4, 3, [2, 0]), (1, 1, [0, 0]), (2, 5, [1, 4])):
            toks, ver = i32(rng.integers(0, V, (2, length))), i32(rng.integers(0, V, (2, width)))
            same(lambda g: outputs(g.prefill(toks)))
            same(lambda g: outputs(g.verify(ver)))
            same(lambda g: g.processed_tokens())
            for g in both:
                g.commit(acc)
            same(lambda g: [g.capture(r).digest for r in range(2)])
        cps = [new.capture(1), None, new.capture(0)]
        old2, new2 = TargetGroup(T), new_rows()
        for g in (old2, new2):
            g.append(cps)
            g.filter_rows([2, 0, 1])
        self.assertEqual(new2.processed_tokens(), [cps[2].processed_tokens, cps[0].processed_tokens, 0])
        toks = i32(rng.integers(0, V, (3, 2)))
        self.assertEqual(outputs(old2.prefill(toks)), outputs(new2.prefill(toks)))
        ver = i32(rng.integers(0, V, (3, 3)))
        self.assertEqual(outputs(old2.verify(ver)), outputs(new2.verify(ver)))
        for g in (old2, new2):
            g.commit([2, 1, 0])
        self.assertEqual([old2.capture(r).digest for r in range(3)], [new2.capture(r).digest for r in range(3)])

    def test_a_captured_checkpoint_is_f32_in_the_wire_shapes_with_the_wire_digest(self):
        g = new_rows([None])
        g.prefill(i32([[3, 1, 4, 1, 5]]))
        cp = g.capture(0)
        self.assertEqual((cp.schema, cp.processed_tokens, cp.model_identity), ("qwen-target-v1", 5, "target-id"))
        self.assertEqual([(t.dtype, t.shape) for t in (cp.conv_windows, cp.recurrent_states, cp.keys, cp.values)],
                         [("F32", (N_GDN, CONV, KM1)), ("F32", (N_GDN, S.hv, S.dk, S.dv)),
                          ("F32", (N_FULL, NKV, 5, D)), ("F32", (N_FULL, NKV, 5, D))])
        self.assertEqual(cp.digest, target_checkpoint_digest(cp))
        h = new_rows([cp])
        self.assertEqual(h.capture(0).digest, cp.digest)

    def test_a_chunked_prefill_follows_one_forward(self):
        toks = i32(np.arange(14).reshape(2, 7) * 5 % V)
        whole = new_rows([None, None])
        a = whole.prefill(toks)
        saved = TR.PREFILL_CHUNK
        TR.PREFILL_CHUNK = 3   # 7 positions in chunks of 3, 3 and 1
        try:
            chunked = new_rows([None, None])
            b = chunked.prefill(toks)
        finally:
            TR.PREFILL_CHUNK = saved
        self.assertEqual(chunked.processed_tokens(), [7, 7])
        for x, y in zip(a, b):   # the chunks' boundaries hold the state at f32, one forward does not: close, not equal
            self.assertEqual(x.shape, y.shape)
            np.testing.assert_allclose(x.array(), y.array(), rtol=1e-4, atol=1e-5)


def prefilled(rows=2):
    g = new_rows([None] * rows)
    g.prefill(i32(np.arange(3 * rows).reshape(rows, 3) % V))
    return g


def sealed(p, identity="target-id", conv=None, states=None, keys=None, values=None, schema="qwen-target-v1", drop=()):
    """A well-formed checkpoint after p tokens (small values), with the given tensors replaced; sealed."""
    rng = np.random.default_rng(p)
    t = {"conv": f32(rng.standard_normal((N_GDN, CONV, KM1))), "states": f32(rng.standard_normal((N_GDN, S.hv, S.dk,
                                                                                                  S.dv))),
         "keys": f32(rng.standard_normal((N_FULL, NKV, p, D))), "values": f32(rng.standard_normal((N_FULL, NKV, p, D)))}
    for k, v in (("conv", conv), ("states", states), ("keys", keys), ("values", values)):
        if v is not None:
            t[k] = v
    for k in drop:
        t[k] = None
    cp = TargetCheckpoint(schema, p, identity, t["conv"], t["states"], t["keys"], t["values"])
    cp.digest = target_checkpoint_digest(cp)
    return cp


class BadCallsTest(unittest.TestCase):
    """Kinds and messages as TargetContract.java, RowContract.java and AbstractTargetRows.java word them (the Python
    SDK's tensor descriptions put a space before the shape)."""

    def refuse(self, g, call, kind, message):
        before = snapshot(g) if not g.round_open() else g.processed_tokens()
        with self.assertRaises(MtpError) as e:
            call(g)
        self.assertEqual((e.exception.kind, e.exception.message), (kind, message))
        self.assertFalse(e.exception.poisoned)
        self.assertEqual(snapshot(g) if not g.round_open() else g.processed_tokens(), before,
                         "a refused call changed the rows")

    def test_state_and_argument_checks(self):
        g = prefilled()
        self.refuse(g, lambda g: g.append(None), INVALID_ARGUMENT,
                    "append: checkpoint list is null (use null entries for empty rows)")
        self.refuse(g, lambda g: g.filter_rows(None), INVALID_ARGUMENT, "filterRows: keep is null")
        self.refuse(g, lambda g: g.filter_rows([0, 0]), INVALID_ARGUMENT, "filterRows: keep[1] = 0 repeats a row")
        self.refuse(g, lambda g: g.filter_rows([-1]), INVALID_ARGUMENT, "filterRows: keep[0] = -1 outside [0, 2)")
        self.refuse(g, lambda g: g.prefill(None), INVALID_ARGUMENT, "prefill: tokens is null")
        self.refuse(g, lambda g: g.prefill(f32(np.zeros((2, 2)))), INVALID_ARGUMENT,
                    "prefill: tokens dtype F32, expected I32 or I64")
        self.refuse(g, lambda g: g.prefill(i32(np.zeros((3, 2)))), INVALID_ARGUMENT,
                    "prefill: tokens shape I32 [3, 2], expected [2, L] (one row per group row, spec §5.4)")
        self.refuse(g, lambda g: g.prefill(i32(np.zeros((2, 0)))), INVALID_ARGUMENT,
                    "prefill: tokens has L = 0 new positions, expected L ≥ 1 (spec §5.4)")
        self.refuse(g, lambda g: g.prefill(i32([[1, 2], [V, -1]])), INVALID_ARGUMENT,
                    "prefill: tokens[1, 0] = %d outside the vocabulary [0, %d)" % (V, V))
        wraps = Tensor("I64", (2, 1), np.asarray([1, (1 << 32) + 1], dtype="<i8").tobytes())
        self.refuse(g, lambda g: g.verify(wraps), INVALID_ARGUMENT,
                    "verify: tokens[1, 0] = 4294967297 outside the vocabulary [0, %d)" % V)
        self.refuse(g, lambda g: g.verify(i32(np.zeros((2, 66)))), INVALID_ARGUMENT,
                    "verify: width W = 66 tokens per row, more than the 65 a verify may take (the pending token and "
                    "at most 64 drafts, spec §13.3)")
        self.refuse(g, lambda g: g.commit([0, 0]), ILLEGAL_STATE, "commit: no verify round is open (spec §13.3)")
        self.refuse(g, lambda g: g.capture(2), INVALID_ARGUMENT, "capture: row 2 outside [0, 2)")
        self.refuse(g, lambda g: g.capture(-1), INVALID_ARGUMENT, "capture: row -1 outside [0, 2)")
        g.append([None])
        self.refuse(g, lambda g: g.verify(i32(np.zeros((3, 2)))), ILLEGAL_STATE,
                    "verify: row 2 has processed no token; prefill it first: a verify continues from the pending "
                    "token (spec §13.3)")
        self.refuse(g, lambda g: g.capture(2), ILLEGAL_STATE,
                    "capture: row 2 has processed no token yet (an empty row must be prefilled first, spec §13.3)")
        g.filter_rows([0, 1])
        g.verify(i32([[1, 2, 3], [4, 5, 6]]))
        for call, f in (("append", lambda g: g.append([None])), ("filterRows", lambda g: g.filter_rows([])),
                        ("prefill", lambda g: g.prefill(None)), ("verify", lambda g: g.verify(None)),
                        ("capture", lambda g: g.capture(0))):
            self.refuse(g, f, ILLEGAL_STATE, call + ": a verify round is open; commit it first (spec §13.3)")
        self.refuse(g, lambda g: g.commit(None), INVALID_ARGUMENT, "commit: accepted is null")
        self.refuse(g, lambda g: g.commit([0, 0, 0]), INVALID_ARGUMENT,
                    "commit: accepted has 3 entries, expected 2 (one per row)")
        self.refuse(g, lambda g: g.commit([0, 3]), INVALID_ARGUMENT,
                    "commit: accepted[1] = 3 outside [0, 2], the drafts of a verify of width 3 (spec §13.3); rows "
                    "unchanged")
        self.assertEqual(g.processed_tokens(), [6, 6])
        g.commit([2, 0])
        self.assertEqual(g.processed_tokens(), [6, 4])
        empty = new_rows()
        self.refuse(empty, lambda g: g.prefill(i32(np.zeros((0, 1)))), ILLEGAL_STATE, "prefill: the group has no rows")
        self.refuse(empty, lambda g: g.verify(None), ILLEGAL_STATE, "verify: the group has no rows")
        g.close()
        self.refuse(g, lambda g: g.filter_rows([]), ILLEGAL_STATE, "filterRows: the group is closed")

    def test_checkpoint_checks_in_order_digest_last(self):
        g = prefilled()
        where = "append: checkpoint[1]"
        ic = INCOMPATIBLE_CHECKPOINT
        self.refuse(g, lambda g: g.append([None, sealed(2, schema="qwen-target-v0")]), ic,
                    where + " has schema 'qwen-target-v0', expected 'qwen-target-v1' (spec §13.3)")
        self.refuse(g, lambda g: g.append([None, sealed(2, identity="another-target")]), ic,
                    where + " belongs to target 'another-targ…', this group's target is target-id")
        self.refuse(g, lambda g: g.append([None, sealed(0)]), ic,
                    where + " has P = 0 processed tokens, outside [1, 1048576] (spec §13.3)")
        self.refuse(g, lambda g: g.append([None, sealed(3, conv=f32(np.zeros((N_GDN, CONV, KM1 + 1))))]), ic,
                    where + " convWindows shape F32 [%d, %d, %d], expected [%d, %d, %d]"
                    % (N_GDN, CONV, KM1 + 1, N_GDN, CONV, KM1))
        self.refuse(g, lambda g: g.append([None, sealed(3, drop=("states",))]), ic,
                    where + " has no recurrentStates tensor")
        self.refuse(g, lambda g: g.append([None, sealed(4, keys=sealed(3).keys)]), ic,
                    where + " keys shape F32 [%d, %d, 3, %d], expected [%d, %d, 4, %d]" % (N_FULL, NKV, D, N_FULL, NKV, D))
        nan = np.zeros((N_GDN, S.hv, S.dk, S.dv))
        nan.reshape(-1)[17] = np.nan
        self.refuse(g, lambda g: g.append([None, sealed(2, states=f32(nan), drop=("values",))]), ic,
                    where + " recurrentStates element 17 is not finite")
        self.refuse(g, lambda g: g.append([None, sealed(2, conv=i32(np.zeros((N_GDN, CONV, KM1))))]), ic,
                    where + " convWindows dtype I32, expected F32")
        cp = sealed(2)
        cp.digest = None
        self.refuse(g, lambda g: g.append([None, cp]), ic, where + " carries no content digest; a checkpoint comes "
                    "from a capture, or from a file or peer that kept its digest (spec §13.3)")
        changed = sealed(2)
        changed.keys = f32(changed.keys.array() + 1)
        self.refuse(g, lambda g: g.append([None, changed]), ic, where + " does not match its content digest: its "
                    "label (schema, P, model identity) or its tensors were changed after capture (spec §13.3)")
        self.refuse(g, lambda g: g.append([None, sealed(2), sealed(2, identity="x")]), ic,
                    "append: checkpoint[2] belongs to target 'x', this group's target is target-id")

    def test_a_kind_of_layer_the_target_lacks_must_be_absent(self):
        gdn_only = dict(CONFIG, layerTypes=["linear_attention"] * 4)
        g = new_rows(config=gdn_only)
        four = sealed(2, conv=f32(np.zeros((4, CONV, KM1))), states=f32(np.zeros((4, S.hv, S.dk, S.dv))))
        self.refuse(g, lambda g: g.append([four]), INCOMPATIBLE_CHECKPOINT,
                    "append: checkpoint[0] carries keys but the target has no layer that holds them")
        ok = TargetCheckpoint("qwen-target-v1", 2, "target-id", f32(np.zeros((4, CONV, KM1))),
                              f32(np.zeros((4, S.hv, S.dk, S.dv))), None, None)
        ok.digest = target_checkpoint_digest(ok)
        g.append([ok])
        self.assertEqual(g.processed_tokens(), [2])

    def test_the_position_and_forward_size_bounds(self):
        wide = dict(CONFIG, numKvHeads=1 << 14, headDim=1 << 14)   # 2^30 / (nKV·D) = 4 positions a row
        g = new_rows([None], config=wide)
        self.refuse(g, lambda g: g.prefill(i32(np.zeros((1, 5)))), INVALID_ARGUMENT,
                    "prefill: row 0 has processed 0 tokens; 5 more would bring it to 5, more than the 4 a row may "
                    "hold (spec §11.13)")
        huge = dict(CONFIG, intermediateSize=1 << 28)
        g = new_rows([None] * 5, config=huge)
        self.refuse(g, lambda g: g.prefill(i32(np.zeros((5, 1)))), INVALID_ARGUMENT,
                    "prefill: one forward of 5 rows × 1 positions × 268435456 values per token needs 1342177280 "
                    "elements in one array, more than 1073741824 (spec §11.13); split the prefill into shorter ones")

    def test_a_forward_of_the_wrong_shape_is_the_engines_failure(self):
        class Short(st.NumpyTargetRows):
            def forward(self, state, at, ids, s, verify):
                f = super().forward(state, at, ids, s, verify)
                return f._replace(logits=f.logits[:, :, :-1])
        g = Short(T, LoadArgs(TARGET_DIR, "qwen3_5", "target-id", {}, CONFIG))
        g.append([None])
        with self.assertRaises(MtpError) as e:
            g.prefill(i32([[1, 2]]))
        self.assertEqual(e.exception.kind, BACKEND_FAILURE)
        self.assertEqual(e.exception.message, "prefill: the backend's forward returned logits of shape [1, 1, %d], "
                                              "expected [1, 1, %d]" % (V - 1, V))
        self.assertEqual(g.processed_tokens(), [0])


class ReadmeTest(unittest.TestCase):
    def test_the_target_adapter_in_the_readme_is_the_file(self):
        with open(os.path.join(ADAPTER, "README.md"), encoding="utf-8") as f:
            blocks = re.findall(r"```python\n(.*?)```", f.read(), re.S)
        with open(os.path.join(EXAMPLES, "numpy_skeleton_target.py"), encoding="utf-8") as f:
            self.assertIn(f.read(), blocks)


class FailureAtomicityTest(unittest.TestCase):
    STEPS = [("append", "publish"), ("filterRows", "publish"), ("prefill", "chunk forward"), ("prefill", "publish"),
             ("verify", "forward"), ("verify", "publish"), ("commit", "rollback"), ("commit", "publish")]

    def test_a_failure_at_any_step_changes_nothing_and_the_group_goes_on(self):
        toks, ver = i32([[1, 2, 3], [4, 5, 6]]), i32([[7, 8, 9], [10, 11, 12]])
        calls = {"append": lambda g: g.append([None]), "filterRows": lambda g: g.filter_rows([1, 0]),
                 "prefill": lambda g: g.prefill(toks), "verify": lambda g: g.verify(ver),
                 "commit": lambda g: g.commit([2, 1])}

        def start():
            g = prefilled()
            if call == "commit":
                g.verify(ver)
            return g
        for call, step in self.STEPS:
            with self.subTest(call=call, step=step):
                g = start()
                before = (g.processed_tokens(), g.round_open())
                g.fail_at = (call, step)
                with self.assertRaises(Exception) as e:
                    calls[call](g)
                if step == "publish":   # the hook runs outside the computation, as in AbstractTargetRows
                    self.assertIsInstance(e.exception, RuntimeError)
                else:                   # the engine's own failure: answered, not poisoned
                    self.assertIsInstance(e.exception, MtpError)
                    self.assertEqual(e.exception.kind, BACKEND_FAILURE)
                    self.assertTrue(e.exception.message.startswith(call + ": RuntimeError: injected"))
                    self.assertFalse(e.exception.poisoned)
                g.fail_at = None
                self.assertEqual((g.processed_tokens(), g.round_open()), before)
                calls[call](g)   # the same call now succeeds, as on a group that never failed
                ref = start()
                calls[call](ref)
                if g.round_open():
                    for x in (g, ref):
                        x.commit([1, 0])
                self.assertEqual(snapshot(g), snapshot(ref))


if __name__ == "__main__":
    unittest.main()
