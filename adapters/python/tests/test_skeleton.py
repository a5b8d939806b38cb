"""The row skeleton (mtp_wire/rows.py): the numpy engine on it equals numpy_backend.py's own lifecycle (a separate
implementation of the same contract) draft for draft and checkpoint for checkpoint; bad calls fail with the Java
RowContract's kinds and messages (copied here from RowContract.java / AbstractDraftRows.java, not from rows.py) and
change nothing; a failure at any step of any call changes nothing; the README's snippets run as written after
`pip install ./adapters/python`."""

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np

from mtp_wire import (BACKEND_FAILURE, ILLEGAL_STATE, INCOMPATIBLE_CHECKPOINT, INVALID_ARGUMENT, Checkpoint, LoadArgs,
                      MtpError, RowSampler, Tensor)
from mtp_wire import rows as R
from tests.support import ADAPTER, EXAMPLES, EXTERNAL_MOE, GREEDY, WireClient, external, f32, hello_args, i32, nb

import numpy_skeleton_backend as sk  # noqa: E402 (examples/ is on sys.path through tests.support)

MODEL_DIR = external("float32")[0]
OLD = nb.Model(MODEL_DIR, "skeleton-test")
C = OLD.cfg
CONFIG = {"hiddenSize": C.hidden, "numHeads": C.heads, "numKvHeads": C.kv_heads, "headDim": C.head_dim,
          "vocabSize": OLD.vocab, "intermediateSize": 0}
H, V = C.hidden, OLD.vocab


def new_rows(cps=()):
    g = sk.NumpyRows(OLD, LoadArgs(MODEL_DIR, "hf", "skeleton-test", {}, CONFIG))
    g.append(list(cps))
    return g


def snapshot(g):
    """What a runner can observe of a group: row count, and each warm row's checkpoint digest."""
    out = [g.row_count()]
    for r in range(g.row_count()):
        try:
            out.append(g.capture(r).digest)
        except MtpError as e:
            out.append(e.kind)
    return out


class SkeletonEqualsTheNumpyEngineTest(unittest.TestCase):
    def test_a_lifecycle_gives_the_same_drafts_and_checkpoints(self):
        rng = np.random.default_rng(11)
        old, new = OLD.open_rows([None, None]), new_rows([None, None])
        both = (old, new)

        def same(f):
            a, b = f(old), f(new)
            self.assertEqual(a, b)
            return a
        seeded = [RowSampler(0.9, 7, 0.95, 12345), RowSampler(1.3, 0, 1.0, 2 ** 64 - 1)]
        for step, (l, depth, acc, sampling) in enumerate([(5, 3, [3, 1], seeded), (1, 2, [2, 2], [GREEDY, GREEDY]),
                                                          (3, 0, [0, 0], seeded), (2, 4, [0, 4], seeded)]):
            toks, ctx = i32(rng.integers(0, V, (2, l))), f32(rng.standard_normal((2, l, H)))
            for g in both:
                g.prefill(toks, ctx)
            same(lambda g: g.draft([step + 1, 2 * step], depth, [step, 3 * step], sampling))
            verify = f32(rng.standard_normal((2, depth + 1, H)))
            for g in both:
                g.commit(acc, verify)
            same(lambda g: [g.capture(r).digest for r in range(2)])
        cps = [new.capture(1), None, new.capture(0)]
        old2, new2 = OLD.open_rows(cps), new_rows(cps)
        ctx = f32(rng.standard_normal((3, 2, H)))
        for g in (old2, new2):
            g.filter_rows([2, 0, 1])
            g.prefill(i32([[1, 2], [3, 4], [5, 6]]), ctx)
        self.assertEqual(old2.draft([1, 2, 3], 3, [0, 0, 0], [GREEDY] * 3),
                         new2.draft([1, 2, 3], 3, [0, 0, 0], [GREEDY] * 3))
        verify = f32(rng.standard_normal((3, 4, H)))
        for g in (old2, new2):
            g.commit([3, 0, 2], verify)
        self.assertEqual([old2.capture(r).digest for r in range(3)], [new2.capture(r).digest for r in range(3)])
        self.assertEqual(new2.drafter_lengths(), [old2.capture(r).draft_offset for r in range(3)])

    @unittest.skipUnless(os.path.isdir(EXTERNAL_MOE), "external MoE reference data not found")
    def test_moe_router_choices_are_the_numpy_engines(self):
        d = external("float32", EXTERNAL_MOE)[0]
        m = nb.Model(d, "moe")
        cfg = {"hiddenSize": m.cfg.hidden, "numKvHeads": m.cfg.kv_heads, "headDim": m.cfg.head_dim,
               "vocabSize": m.vocab}
        old, new = m.open_rows([None, None]), sk.NumpyRows(m, LoadArgs(d, "hf", "moe", {}, cfg))
        new.append([None, None])
        rng = np.random.default_rng(4)
        h = m.cfg.hidden
        toks, ctx = i32(rng.integers(0, m.vocab, (2, 4))), f32(rng.standard_normal((2, 4, h)))
        verify = f32(rng.standard_normal((2, 3, h)))
        steps = [lambda g: g.prefill(toks, ctx), lambda g: g.draft([3, 5], 2, [0, 0], [GREEDY] * 2),
                 lambda g: g.commit([2, 0], verify), lambda g: g.prefill(toks, ctx)]
        for call in steps:
            call(old)
            call(new)
            # the same (row, KV position, experts) triples; the skeleton computes them step by step across rows (as
            # AbstractDraftRows does), the numpy engine row by row
            want = sorted((r, p, list(e)) for r, p, e in old.choices)
            self.assertTrue(want)
            self.assertEqual(sorted((r, p, list(e)) for r, p, e in new.router_choices()), want)
        self.assertEqual([old.capture(r).digest for r in range(2)], [new.capture(r).digest for r in range(2)])

    def test_a_chunked_prefill_equals_one_forward(self):
        rng = np.random.default_rng(5)
        toks, ctx = i32(rng.integers(0, V, (2, 9))), f32(rng.standard_normal((2, 9, H)))
        whole = new_rows([None, None])
        whole.prefill(toks, ctx)
        saved = R.PREFILL_CHUNK
        R.PREFILL_CHUNK = 3   # 8 shifted positions in chunks of 3, 3 and 2
        try:
            chunked = new_rows([None, None])
            chunked.prefill(toks, ctx)
        finally:
            R.PREFILL_CHUNK = saved
        self.assertEqual(snapshot(whole), snapshot(chunked))
        self.assertEqual(chunked.drafter_lengths(), [8, 8])


def good_prefilled(rows=2):
    g = new_rows([None] * rows)
    g.prefill(i32(np.arange(3 * rows).reshape(rows, 3) % V), f32(np.ones((rows, 3, H)) * 0.25))
    return g


class BadCallsTest(unittest.TestCase):
    """Kinds and messages as RowContract.java and AbstractDraftRows.java word them (a message names the call first)."""

    def refuse(self, g, call, kind, message):
        before = snapshot(g)
        with self.assertRaises(MtpError) as e:
            call(g)
        self.assertEqual((e.exception.kind, e.exception.message), (kind, message))
        self.assertFalse(e.exception.poisoned)
        self.assertEqual(snapshot(g), before, "a refused call changed the rows")

    def test_state_and_argument_checks(self):
        g = good_prefilled()
        ctx2 = f32(np.zeros((2, 2, H)))
        self.refuse(g, lambda g: g.append(None), INVALID_ARGUMENT,
                    "append: checkpoint list is null (use null entries for cold rows)")
        self.refuse(g, lambda g: g.filter_rows([0, 0]), INVALID_ARGUMENT, "filterRows: keep[1] = 0 repeats a row")
        self.refuse(g, lambda g: g.filter_rows([2]), INVALID_ARGUMENT, "filterRows: keep[0] = 2 outside [0, 2)")
        self.refuse(g, lambda g: g.prefill(None, ctx2), INVALID_ARGUMENT, "prefill: tokens is null")
        self.refuse(g, lambda g: g.prefill(f32(np.zeros((2, 2))), ctx2), INVALID_ARGUMENT,
                    "prefill: tokens dtype F32, expected I32 or I64")
        self.refuse(g, lambda g: g.prefill(i32(np.zeros((2, 0))), f32(np.zeros((2, 0, H)))), INVALID_ARGUMENT,
                    "prefill: tokens has L = 0 new positions, expected L ≥ 1 (spec §5.4)")
        wraps = Tensor.from_numpy(np.array([[1, 1], [1, 2 ** 32 + 1]], dtype=np.int64))
        self.refuse(g, lambda g: g.prefill(wraps, ctx2), INVALID_ARGUMENT,
                    "prefill: tokens[1, 1] = 4294967297 outside the vocabulary [0, %d)" % V)
        self.refuse(g, lambda g: g.prefill(i32(np.zeros((2, 2))), f32(np.zeros((2, 3, H)))), INVALID_ARGUMENT,
                    "prefill: context shape F32 [2, 3, %d], expected [2, 2, %d] (the taps at the same L positions "
                    "as tokens)" % (H, H))
        bad = np.zeros((2, 2, H))
        bad[1, 1, 3] = np.nan
        self.refuse(g, lambda g: g.prefill(i32(np.zeros((2, 2))), f32(bad)), INVALID_ARGUMENT,
                    "prefill: context[1, 1, 3] (row 1, position 1) = NaN is not finite")
        bad[1, 1, 3] = -1e19
        self.refuse(g, lambda g: g.prefill(i32(np.zeros((2, 2))), f32(bad)), INVALID_ARGUMENT,
                    "prefill: context[1, 1, 3] (row 1, position 1) = %r, magnitude above 2^51, where the block's f32 "
                    "RMSNorm sum of squares could overflow (spec §11.14)" % float(np.float32(-1e19)))
        self.refuse(g, lambda g: g.draft([0], 1, [0, 0], [GREEDY] * 2), INVALID_ARGUMENT,
                    "draft: pending has 1 entries, expected 2 (one per row)")
        self.refuse(g, lambda g: g.draft([0, V], 1, [0, 0], [GREEDY] * 2), INVALID_ARGUMENT,
                    "draft: pending[1] = %d outside the vocabulary [0, %d)" % (V, V))
        self.refuse(g, lambda g: g.draft([0, 0], 65, [0, 0], [GREEDY] * 2), INVALID_ARGUMENT,
                    "draft: depth = 65 outside [0, 64]")
        self.refuse(g, lambda g: g.draft([0, 0], 1, [0, -1], [GREEDY] * 2), INVALID_ARGUMENT,
                    "draft: steps[1] = -1 is negative")
        self.refuse(g, lambda g: g.draft([0, 0], 1, [0, 0], [GREEDY] * 3), INVALID_ARGUMENT,
                    "draft: sampling has 3 row samplers, expected 2")
        self.refuse(g, lambda g: g.commit([0, 0], ctx2), ILLEGAL_STATE, "commit: no draft round is open (spec §5.8)")
        self.refuse(g, lambda g: g.capture(-1), INVALID_ARGUMENT, "capture: row -1 outside [0, 2)")
        g.draft([0, 0], 2, [0, 0], [GREEDY] * 2)
        self.refuse(g, lambda g: g.append([None]), ILLEGAL_STATE,
                    "append: a draft round is open; commit it first (spec §9.2)")
        self.refuse(g, lambda g: g.commit([0, 3], f32(np.zeros((2, 3, H)))), INVALID_ARGUMENT,
                    "commit: accepted[1] = 3 outside [0, 2], the draft depth (spec §5.8); rows unchanged")
        self.refuse(g, lambda g: g.commit([0, 0], f32(np.zeros((2, 4, H)))), INVALID_ARGUMENT,
                    "commit: context shape F32 [2, 4, %d], expected [2, 3, %d] (width = depth + 1 = 3 verify taps)"
                    % (H, H))
        cold = new_rows([None])
        self.refuse(cold, lambda g: g.draft([0], 1, [0], [GREEDY]), ILLEGAL_STATE,
                    "draft: row 0 has no retained hidden (a cold row must be prefilled first, spec §5.7)")
        self.refuse(cold, lambda g: g.capture(0), ILLEGAL_STATE,
                    "capture: row 0 has consumed no target token yet (a cold row must be prefilled first, spec §11.1)")
        empty = new_rows()
        self.refuse(empty, lambda g: g.prefill(i32(np.zeros((0, 1))), f32(np.zeros((0, 1, H)))), ILLEGAL_STATE,
                    "prefill: the group has no rows")
        empty.close()
        self.refuse(empty, lambda g: g.filter_rows([]), ILLEGAL_STATE,
                    "filterRows: the group is closed")

    def test_checkpoint_checks_in_the_contracts_order(self):
        g = good_prefilled()
        cp = g.capture(0)
        ident = "skeleton-test"

        def with_(**kw):
            f = {k: getattr(cp, k) for k in Checkpoint.__slots__}
            f.update(kw)
            return Checkpoint(**f)
        where = "append: checkpoint[1]"
        cases = [
            (with_(schema="qwen-mtp-v0"), where + " has schema 'qwen-mtp-v0', expected 'qwen-mtp-v1' (spec §6)"),
            (with_(model_identity="another-model-id"),
             where + " belongs to model another-mode…, this group's model is skeleton-tes…"),
            (with_(draft_offset=cp.draft_offset - 1), where + " has invalid paired alignment: draftOffset = %d with "
             "processedTokens = %d, expected draftOffset = P − 1 (spec §6)" % (cp.draft_offset - 1,
                                                                              cp.processed_tokens)),
            (with_(values=None), where + " has no values tensor"),
            (with_(hidden=f32(np.zeros((1, 1, H + 1)))), where + " hidden shape F32 [1, 1, %d], expected [1, 1, %d]"
             % (H + 1, H)),
            (with_(digest=None), where + " carries no content digest; a checkpoint comes from a capture, or from a "
             "file or peer that kept its digest (spec §6)"),
            (with_(hidden=f32(cp.hidden.array() + 1)), where + " does not match its content digest: its label "
             "(schema, P, draftOffset, model identity) or its tensors were changed after capture (spec §6)"),
        ]
        self.assertEqual(ident, OLD.identity)
        for bad, message in cases:
            self.refuse(g, lambda g: g.append([None, bad]), INCOMPATIBLE_CHECKPOINT, message)
        g.append([None, cp])
        self.assertEqual(g.capture(3).digest, cp.digest)


class FaultyRows(sk.NumpyRows):
    fail_at = None

    def reached(self, call, step):
        if (call, step) == self.fail_at:
            raise RuntimeError("injected at %s/%s" % (call, step))


class FailureAtomicityTest(unittest.TestCase):
    STEPS = [("append", "publish"), ("filterRows", "publish"), ("prefill", "bridge forward"),
             ("prefill", "chunk forward"), ("prefill", "retain hidden"), ("prefill", "publish"),
             ("draft", "publish"), ("commit", "full-acceptance forward"), ("commit", "retain hidden"),
             ("commit", "publish")]

    def test_a_failure_at_any_step_changes_nothing_and_the_group_goes_on(self):
        rng = np.random.default_rng(3)
        toks, ctx = i32(rng.integers(0, V, (2, 4))), f32(rng.standard_normal((2, 4, H)))
        verify = f32(rng.standard_normal((2, 3, H)))
        calls = {"append": lambda g: g.append([None]), "filterRows": lambda g: g.filter_rows([1, 0]),
                 "prefill": lambda g: g.prefill(toks, ctx), "draft": lambda g: g.draft([1, 2], 2, [0, 0], [GREEDY] * 2),
                 "commit": lambda g: g.commit([2, 1], verify)}
        for call, step in self.STEPS:
            with self.subTest(call=call, step=step):
                g = FaultyRows(OLD, LoadArgs(MODEL_DIR, "hf", "skeleton-test", {}, CONFIG))
                g.append([None, None])
                g.prefill(toks, ctx)
                if call == "commit":
                    g.draft([1, 2], 2, [0, 0], [GREEDY] * 2)
                before = (snapshot(g), g.drafter_lengths())
                g.fail_at = (call, step)
                with self.assertRaises(Exception) as e:
                    calls[call](g)
                if step == "publish":   # the hook runs outside the computation, as in AbstractDraftRows
                    self.assertIsInstance(e.exception, RuntimeError)
                else:                   # the engine's own failure: answered, not poisoned
                    self.assertIsInstance(e.exception, MtpError)
                    self.assertEqual(e.exception.kind, BACKEND_FAILURE)
                    self.assertTrue(e.exception.message.startswith(call + ": RuntimeError: injected"))
                    self.assertFalse(e.exception.poisoned)
                g.fail_at = None
                self.assertEqual((snapshot(g), g.drafter_lengths()), before)
                calls[call](g)   # the same call now succeeds, as on a group that never failed
                ref = new_rows([None, None])
                ref.prefill(toks, ctx)
                if call == "commit":
                    ref.draft([1, 2], 2, [0, 0], [GREEDY] * 2)
                calls[call](ref)
                self.assertEqual((snapshot(g), g.drafter_lengths()), (snapshot(ref), ref.drafter_lengths()))


def readme_block(first_line):
    with open(os.path.join(ADAPTER, "README.md"), encoding="utf-8") as f:
        text = f.read()
    for block in re.findall(r"```python\n(.*?)```", text, re.S):
        if block.startswith(first_line):
            return block
    raise AssertionError("README.md has no python block starting with %r" % first_line)


class ReadmeSnippetsTest(unittest.TestCase):
    """`pip install ./adapters/python` (into a scratch folder), then the README's my_engine.py as written, over a pipe;
    and the README's numpy adapter is examples/numpy_skeleton_backend.py itself."""

    def test_the_numpy_adapter_in_the_readme_is_the_file(self):
        with open(os.path.join(EXAMPLES, "numpy_skeleton_backend.py"), encoding="utf-8") as f:
            self.assertEqual(readme_block('"""The numpy engine'), f.read())

    @unittest.skipUnless(importlib.util.find_spec("pip"), "pip is not installed for " + sys.executable)
    def test_pip_install_then_my_engine_as_written(self):
        tmp = tempfile.mkdtemp(prefix="mtp-wire-readme-")
        try:
            site = os.path.join(tmp, "site")
            p = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-index", "--no-deps",
                                "--disable-pip-version-check", "--target", site, ADAPTER], capture_output=True,
                               text=True, timeout=300)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            self.assertTrue(os.path.isfile(os.path.join(site, "mtp_wire", "rows.py")))
            engine = os.path.join(tmp, "my_engine.py")
            with open(engine, "w", encoding="utf-8") as f:
                f.write(readme_block("# my_engine.py"))
            c = WireClient([sys.executable, engine], env=dict(os.environ, PYTHONPATH=site), cwd=tmp)
            try:
                self.drive(c)
            finally:
                c.close()
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def drive(self, c):
        r, _ = c.ok("hello", hello_args())
        self.assertEqual(r["engine"]["name"], "my-engine")
        m = c.ok("load", {"directory": MODEL_DIR, "layout": "hf", "identity": "readme", "options": {},
                          "config": CONFIG})[0]["model"]
        g = c.ok("openRows", {"model": m, "checkpoints": [None, None]})[0]["group"]
        rng = np.random.default_rng(2)
        c.ok("prefill", {"group": g, "tokens": {"tensor": 0}, "context": {"tensor": 1}},
             [i32(rng.integers(0, V, (2, 3))), f32(rng.standard_normal((2, 3, H)))])
        sampling = [{"temperature": 0.0, "topK": 0, "topP": 1.0, "seed": "0"}] * 2
        p = c.ok("draft", {"group": g, "pending": [1, 2], "depth": 2, "steps": [0, 0], "sampling": sampling})[0]
        self.assertEqual([len(x) for x in p["proposals"]], [2, 2])
        h, _ = c.call("commit", {"group": g, "accepted": [3, 0], "context": {"tensor": 0}},
                      [f32(np.zeros((2, 3, H)))])
        self.assertEqual(h["error"]["kind"], INVALID_ARGUMENT)
        self.assertIn("accepted[0] = 3 outside [0, 2]", h["error"]["message"])
        c.ok("commit", {"group": g, "accepted": [2, 0], "context": {"tensor": 0}}, [f32(np.zeros((2, 3, H)))])
        cp, tensors = c.ok("capture", {"group": g, "row": 0})
        self.assertEqual((cp["checkpoint"]["processedTokens"], cp["checkpoint"]["draftOffset"]), (6, 5))
        self.assertEqual(tensors[0].shape, (1, C.kv_heads, 5, C.head_dim))
        self.assertEqual(c.ok("rowCount", {"group": g})[0], {"rows": 2})


if __name__ == "__main__":
    unittest.main()
