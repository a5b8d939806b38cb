"""The row lifecycle's invariants (spec §10.1) and bad calls (§11.1) on the engine in-process. Expected values are
invariants (two routes to the same state must agree) or the kinds the contract names."""

import os
import unittest

import numpy as np

from mtp_wire import (ILLEGAL_STATE, INCOMPATIBLE_CHECKPOINT, INVALID_ARGUMENT, Checkpoint, MtpError, RowSampler, Tensor,
                      checkpoint_digest)
from tests.support import EXTERNAL, GREEDY, external, f32, i32, nb

_MODEL = None


def model():
    global _MODEL
    if _MODEL is None:
        _MODEL = nb.Model(external("bfloat16")[0], identity="test-model")
    return _MODEL


def hiddens(seed, b, n, h=256):
    """N(0, 1) rounded to bf16 values, as the kit's chains feed them."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((b, n, h)).astype(np.float32)
    return (x.view(np.uint32) & 0xFFFF0000).view(np.float32)


def prefilled(b, n, seed=1):
    g = model().open_rows([None] * b)
    rng = np.random.default_rng(seed)
    g.prefill(i32(rng.integers(0, 1000, (b, n))), f32(hiddens(seed, b, n)))
    return g


def same(a, b):
    def t(x):
        return None if x is None else (x.dtype, x.shape, bytes(x.data))
    return (a.schema, a.processed_tokens, a.draft_offset, a.model_identity, t(a.keys), t(a.values), t(a.hidden)) == \
        (b.schema, b.processed_tokens, b.draft_offset, b.model_identity, t(b.keys), t(b.values), t(b.hidden))


def kv_nmse(a, b):
    x, y = a.keys.array().astype(np.float64), b.keys.array().astype(np.float64)
    return float(np.sum((x - y) ** 2) / np.sum(y ** 2))


@unittest.skipUnless(os.path.isdir(EXTERNAL), "external reference data not found")
class LifecycleTest(unittest.TestCase):
    def test_alignment_after_prefill_and_rounds(self):
        g = prefilled(2, 6)
        for r in range(2):
            cp = g.capture(r)
            self.assertEqual((cp.processed_tokens, cp.draft_offset, cp.keys.shape), (6, 5, (1, 2, 5, 64)))
        g.draft([3, 4], 4, [1, 1], [GREEDY, GREEDY])
        g.commit([2, 4], f32(hiddens(2, 2, 5)))
        self.assertEqual([g.capture(r).processed_tokens for r in range(2)], [9, 11])

    def test_one_token_cold_prefix_keeps_only_its_hidden(self):
        g = prefilled(1, 1)
        cp = g.capture(0)
        self.assertEqual((cp.processed_tokens, cp.keys, cp.values), (1, None, None))

    def test_depth_zero_equals_depth_one_with_nothing_accepted(self):
        start = prefilled(1, 4).capture(0)
        ctx = hiddens(5, 1, 2)
        a = model().open_rows([start])
        a.draft([9], 0, [1], [GREEDY])
        a.commit([0], f32(ctx[:, :1]))
        b = model().open_rows([start])
        b.draft([9], 1, [1], [GREEDY])
        b.commit([0], f32(ctx))
        self.assertTrue(same(a.capture(0), b.capture(0)))

    def test_rollback_is_trace_free(self):
        start = prefilled(1, 6).capture(0)
        ctx = hiddens(7, 1, 5)
        a = model().open_rows([start])
        a.draft([5], 4, [1], [GREEDY])
        a.commit([0], f32(ctx))
        c = model().open_rows([start])
        c.prefill(i32([[5]]), f32(ctx[:, :1]))
        self.assertTrue(same(a.capture(0), c.capture(0)))

    def test_full_acceptance_builds_the_last_row_from_the_tap_before_it(self):
        start = prefilled(1, 5).capture(0)
        ctx = hiddens(8, 1, 4)
        g = model().open_rows([start])
        d = g.draft([7], 3, [1], [GREEDY])[0]
        g.commit([3], f32(ctx))
        # by hand: the pending row, the chained rows of d0 and d1, then (d2, ctx[2]); hidden ctx[3]
        h2 = model().open_rows([start])
        kv2, hin = h2.rows[0].kv, h2.rows[0].hidden
        for tok in [7, d[0], d[1]]:
            hin = model().block.forward(kv2, np.array([tok]), hin[None])[0]
        model().block.forward(kv2, np.array([d[2]]), ctx[0, 2][None].astype(np.float64))
        h2.rows[0].hidden = ctx[0, 3].astype(np.float64)
        self.assertTrue(same(g.capture(0), h2.capture(0)))

    def test_batched_equals_one_at_a_time(self):
        rng = np.random.default_rng(11)
        toks = rng.integers(0, 1000, (3, 5))
        ctx = hiddens(11, 3, 5)
        g = model().open_rows([None] * 3)
        g.prefill(i32(toks), f32(ctx))
        g.draft([1, 2, 3], 2, [0, 0, 0], [GREEDY] * 3)
        g.commit([0, 1, 2], f32(hiddens(12, 3, 3)))
        for r in range(3):
            one = model().open_rows([None])
            one.prefill(i32(toks[r:r + 1]), f32(ctx[r:r + 1]))
            one.draft([r + 1], 2, [0], [GREEDY])
            one.commit([r], f32(hiddens(12, 3, 3)[r:r + 1]))
            self.assertTrue(same(one.capture(0), g.capture(r)), r)

    def test_prefill_split_anywhere_equals_one_prefill(self):
        n = 40
        rng = np.random.default_rng(13)
        toks = rng.integers(0, 1000, (1, n))
        ctx = hiddens(13, 1, n)
        whole = model().open_rows([None])
        whole.prefill(i32(toks), f32(ctx))
        for cut in (1, 13, n - 1):
            g = model().open_rows([None])
            g.prefill(i32(toks[:, :cut]), f32(ctx[:, :cut]))
            g.prefill(i32(toks[:, cut:]), f32(ctx[:, cut:]))
            self.assertLess(kv_nmse(g.capture(0), whole.capture(0)), 1e-24, cut)

    def test_checkpoint_round_trip_and_filter_permutation(self):
        g = prefilled(4, 5)
        g.draft([1, 2, 3, 4], 2, [1] * 4, [RowSampler(0.8, 20, 0.9, 5)] * 4)
        g.commit([0, 1, 2, 1], f32(hiddens(3, 4, 3)))
        before = [g.capture(r) for r in range(4)]
        for cp in before:
            self.assertTrue(same(model().open_rows([cp]).capture(0), cp))
        g.filter_rows([3, 0, 2])
        for i, old in enumerate([3, 0, 2]):
            self.assertTrue(same(g.capture(i), before[old]))

    def test_seeded_drafts_depend_on_seed_and_step_only(self):
        start = prefilled(1, 5).capture(0)
        s = RowSampler(1.0, 0, 1.0, 1234)
        a = model().open_rows([start, start]).draft([3, 3], 6, [2, 2], [s, s])
        self.assertEqual(a[0], a[1])
        b = model().open_rows([start]).draft([3], 6, [2], [s])
        self.assertEqual(a[0], b[0])


def bad_calls():
    """(name, state, call, kind): state is 'prefilled' (2 prefilled rows), 'round' (a round of depth 2 open),
    'cold' (2 prefilled + 1 cold row) or 'empty'."""
    h = 256
    ok_cp = lambda: prefilled(1, 3).capture(0)  # noqa: E731

    def cp(**kw):
        c = ok_cp()
        for k, v in kw.items():
            setattr(c, k, v)
        return c

    def relabelled():
        c = cp(model_identity="another-model")
        c.digest = checkpoint_digest(c)  # captured on another model ...
        c.model_identity = model().identity  # ... then labelled with this one's, the digest kept
        return c
    return [
        ("append null", "prefilled", lambda g: g.append(None), INVALID_ARGUMENT),
        ("append schema", "prefilled", lambda g: g.append([cp(schema="qwen-mtp-v0")]), INCOMPATIBLE_CHECKPOINT),
        ("append identity", "prefilled", lambda g: g.append([cp(model_identity="x")]), INCOMPATIBLE_CHECKPOINT),
        ("append misaligned", "prefilled", lambda g: g.append([cp(draft_offset=1)]), INCOMPATIBLE_CHECKPOINT),
        ("append kv length", "prefilled",
         lambda g: g.append([cp(processed_tokens=4, draft_offset=3)]), INCOMPATIBLE_CHECKPOINT),
        ("append P1 with kv", "prefilled",
         lambda g: g.append([cp(processed_tokens=1, draft_offset=0)]), INCOMPATIBLE_CHECKPOINT),
        ("append nan hidden", "prefilled",
         lambda g: g.append([cp(hidden=f32(np.full((1, 1, h), np.nan)))]), INCOMPATIBLE_CHECKPOINT),
        ("append int hidden", "prefilled",
         lambda g: g.append([cp(hidden=Tensor.from_numpy(np.zeros((1, 1, h), np.int32)))]), INCOMPATIBLE_CHECKPOINT),
        ("append relabelled", "prefilled", lambda g: g.append([relabelled()]), INCOMPATIBLE_CHECKPOINT),
        ("append edited", "prefilled",
         lambda g: g.append([cp(hidden=f32(np.ones((1, 1, h))))]), INCOMPATIBLE_CHECKPOINT),
        ("append no digest", "prefilled", lambda g: g.append([cp(digest=None)]), INCOMPATIBLE_CHECKPOINT),
        ("append good then bad", "prefilled",
         lambda g: g.append([None, ok_cp(), cp(draft_offset=0)]), INCOMPATIBLE_CHECKPOINT),
        ("append in round", "round", lambda g: g.append([None]), ILLEGAL_STATE),
        ("filter null", "prefilled", lambda g: g.filter_rows(None), INVALID_ARGUMENT),
        ("filter range", "prefilled", lambda g: g.filter_rows([2]), INVALID_ARGUMENT),
        ("filter repeat", "prefilled", lambda g: g.filter_rows([0, 0]), INVALID_ARGUMENT),
        ("filter in round", "round", lambda g: g.filter_rows([]), ILLEGAL_STATE),
        ("prefill null", "prefilled", lambda g: g.prefill(None, f32(hiddens(1, 2, 2))), INVALID_ARGUMENT),
        ("prefill rows", "prefilled", lambda g: g.prefill(i32(np.zeros((3, 2))), f32(hiddens(1, 3, 2))),
         INVALID_ARGUMENT),
        ("prefill L=0", "prefilled", lambda g: g.prefill(i32(np.zeros((2, 0))), f32(np.zeros((2, 0, h)))),
         INVALID_ARGUMENT),
        ("prefill i64 wraps", "prefilled",
         lambda g: g.prefill(Tensor.from_numpy(np.full((2, 2), (1 << 32) + 1, np.int64)), f32(hiddens(1, 2, 2))),
         INVALID_ARGUMENT),
        ("prefill float tokens", "prefilled", lambda g: g.prefill(f32(np.zeros((2, 2))), f32(hiddens(1, 2, 2))),
         INVALID_ARGUMENT),
        ("prefill ctx length", "prefilled", lambda g: g.prefill(i32(np.zeros((2, 2))), f32(hiddens(1, 2, 3))),
         INVALID_ARGUMENT),
        ("prefill bf16 nan", "prefilled",
         lambda g: g.prefill(i32(np.zeros((2, 2))), Tensor.from_numpy(np.full((2, 2, h), np.nan, np.float32), "BF16")),
         INVALID_ARGUMENT),
        ("prefill huge finite", "prefilled",
         lambda g: g.prefill(i32(np.zeros((2, 2))), f32(np.full((2, 2, h), 1e19))), INVALID_ARGUMENT),
        ("append huge hidden", "prefilled",
         lambda g: g.append([cp(hidden=f32(np.full((1, 1, h), 3e18)))]), INCOMPATIBLE_CHECKPOINT),
        ("prefill f64 ctx", "prefilled",
         lambda g: g.prefill(i32(np.zeros((2, 2))), Tensor.from_numpy(hiddens(1, 2, 2).astype(np.float64))),
         INVALID_ARGUMENT),
        ("prefill in round", "round", lambda g: g.prefill(i32(np.zeros((2, 1))), f32(hiddens(1, 2, 1))),
         ILLEGAL_STATE),
        ("prefill no rows", "empty", lambda g: g.prefill(i32(np.zeros((0, 1))), f32(np.zeros((0, 1, h)))),
         ILLEGAL_STATE),
        ("draft depth -1", "prefilled", lambda g: g.draft([0, 0], -1, [0, 0], [GREEDY] * 2), INVALID_ARGUMENT),
        ("draft depth 65", "prefilled", lambda g: g.draft([0, 0], 65, [0, 0], [GREEDY] * 2), INVALID_ARGUMENT),
        ("draft pending len", "prefilled", lambda g: g.draft([0, 0, 0], 1, [0, 0], [GREEDY] * 2), INVALID_ARGUMENT),
        ("draft pending vocab", "prefilled", lambda g: g.draft([0, 1000], 1, [0, 0], [GREEDY] * 2), INVALID_ARGUMENT),
        ("draft step -1", "prefilled", lambda g: g.draft([0, 0], 1, [0, -1], [GREEDY] * 2), INVALID_ARGUMENT),
        ("draft samplers", "prefilled", lambda g: g.draft([0, 0], 1, [0, 0], [GREEDY] * 3), INVALID_ARGUMENT),
        ("draft null", "prefilled", lambda g: g.draft(None, 1, [0, 0], [GREEDY] * 2), INVALID_ARGUMENT),
        ("draft null sampler", "prefilled", lambda g: g.draft([0, 0], 1, [0, 0], [GREEDY, None]), INVALID_ARGUMENT),
        ("draft tiny temperature", "prefilled",
         lambda g: g.draft([0, 0], 1, [0, 0], [GREEDY, RowSampler(1e-39, 0, 1.0, 3)]), INVALID_ARGUMENT),
        ("draft in round", "round", lambda g: g.draft([0, 0], 1, [0, 0], [GREEDY] * 2), ILLEGAL_STATE),
        ("draft cold row", "cold", lambda g: g.draft([0, 0, 0], 1, [0] * 3, [GREEDY] * 3), ILLEGAL_STATE),
        ("draft no rows", "empty", lambda g: g.draft([], 1, [], []), ILLEGAL_STATE),
        ("commit no round", "prefilled", lambda g: g.commit([0, 0], f32(hiddens(1, 2, 1))), ILLEGAL_STATE),
        ("commit null", "round", lambda g: g.commit(None, f32(hiddens(1, 2, 3))), INVALID_ARGUMENT),
        ("commit len", "round", lambda g: g.commit([0, 0, 0], f32(hiddens(1, 2, 3))), INVALID_ARGUMENT),
        ("commit above depth", "round", lambda g: g.commit([0, 3], f32(hiddens(1, 2, 3))), INVALID_ARGUMENT),
        ("commit width", "round", lambda g: g.commit([0, 0], f32(hiddens(1, 2, 4))), INVALID_ARGUMENT),
        ("commit f16 nan", "round",
         lambda g: g.commit([0, 0], Tensor.from_numpy(np.full((2, 3, h), np.nan, np.float16))), INVALID_ARGUMENT),
        ("capture -1", "prefilled", lambda g: g.capture(-1), INVALID_ARGUMENT),
        ("capture range", "prefilled", lambda g: g.capture(2), INVALID_ARGUMENT),
        ("capture in round", "round", lambda g: g.capture(0), ILLEGAL_STATE),
        ("capture cold", "cold", lambda g: g.capture(2), ILLEGAL_STATE),
    ]


@unittest.skipUnless(os.path.isdir(EXTERNAL), "external reference data not found")
class BadCallTest(unittest.TestCase):
    def group(self, state):
        if state == "empty":
            return model().open_rows([])
        g = prefilled(2, 3)
        if state == "round":
            g.draft([1, 2], 2, [0, 0], [GREEDY] * 2)
        if state == "cold":
            g.append([None])
        return g

    def snapshot(self, g):
        if g.round_open:
            return [(r.kv.length, r.kv.keys().tobytes(), r.drafts) for r in g.rows]
        return [None if r.hidden is None else g.capture(i) for i, r in enumerate(g.rows)]

    def test_every_bad_call_is_refused_with_its_kind_and_changes_nothing(self):
        for name, state, call, kind in bad_calls():
            g = self.group(state)
            before, rows = self.snapshot(g), g.row_count()
            with self.assertRaises(MtpError, msg=name) as caught:
                call(g)
            self.assertEqual(caught.exception.kind, kind, "%s: %s" % (name, caught.exception.message))
            self.assertRegex(caught.exception.message, r"^(append|filterRows|prefill|draft|commit|capture): ", name)
            self.assertEqual(g.row_count(), rows, name)
            after = self.snapshot(g)
            for a, b in zip(before, after):
                if isinstance(a, Checkpoint):
                    self.assertTrue(same(a, b), name)
                else:
                    self.assertEqual(a, b, name)

    def test_closed_group_refuses_every_call(self):
        cp = prefilled(1, 3).capture(0)
        for state in ("empty", "prefilled", "round", "cold"):
            g = self.group(state)
            g.close()
            g.close()
            calls = [("append", lambda: g.append([cp])), ("filterRows", lambda: g.filter_rows([])),
                     ("prefill", lambda: g.prefill(i32(np.zeros((1, 2))), f32(hiddens(1, 1, 2)))),
                     ("draft", lambda: g.draft([0], 1, [0], [GREEDY])),
                     ("commit", lambda: g.commit([0], f32(hiddens(1, 1, 2)))), ("capture", lambda: g.capture(0))]
            for op, call in calls:
                with self.assertRaises(MtpError) as caught:
                    call()
                self.assertEqual(caught.exception.kind, ILLEGAL_STATE, (state, op))
                self.assertTrue(caught.exception.message.startswith(op + ": the group is closed"), (state, op))

    def test_failed_computation_puts_lengths_back(self):
        g = prefilled(2, 3)
        before = [g.capture(r) for r in range(2)]
        real = g.m.block.forward
        calls = []

        def failing(cache, ids, hin):
            calls.append(1)
            if len(calls) == 2:
                raise FloatingPointError("injected")
            return real(cache, ids, hin)
        g.m.block.forward = failing
        try:
            with self.assertRaises(MtpError) as caught:
                g.draft([1, 2], 2, [0, 0], [GREEDY] * 2)
        finally:
            del g.m.block.forward
        self.assertEqual(caught.exception.kind, "BACKEND_FAILURE")
        self.assertFalse(caught.exception.poisoned)
        self.assertFalse(g.round_open)
        for r in range(2):
            self.assertTrue(same(g.capture(r), before[r]))


if __name__ == "__main__":
    unittest.main()
