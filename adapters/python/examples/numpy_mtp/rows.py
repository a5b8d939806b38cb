"""The row lifecycle (spec §5 with the decisions of §11): every call validates first, in the contract's order
(§11.1), then computes, then publishes with plain assignments; a failed computation puts the KV lengths back, and
a group whose put-back fails is poisoned (§9.2). Checkpoints are schema qwen-mtp-v1 (§6), F32."""

import hashlib
import math
import os

import numpy as np

import mtp_wire
from mtp_wire import errors as E
from mtp_wire.server import Checkpoint, checkpoint_digest
from mtp_wire.tensor import Tensor

from .block import Block, RowCache
from .modelfiles import load_model
from .sampling import sample_row

SCHEMA = "qwen-mtp-v1"
MAX_DEPTH = 64           # the deepest round a call may ask for (api RowContract.MAX_DEPTH)
MIN_TEMPERATURE = 1e-30  # below it f32(1/T) times a log-prob overflows (api RowSampler.MIN_TEMPERATURE)


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
        self.choices = []        # (row, KV position, experts) of the last prefill/draft/commit's MoE forward rows

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
        if cp.digest is None:
            raise bad("%s carries no content digest; a checkpoint comes from a capture, or from a file or peer that "
                      "kept its digest (spec §6)" % where)
        if cp.digest != checkpoint_digest(cp):
            raise bad("%s does not match its content digest: its label (schema, P, draftOffset, model identity) or "
                      "its tensors were changed after capture (spec §6)" % where)
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
        self.choices = []
        try:
            for r, row in enumerate(self.rows):
                if row.prefilled:   # bridge: tokens[r, 0] with the retained hidden, then token p+1 with hidden p
                    step_ids = ids[r]
                    hin = np.concatenate([row.hidden[None, :], ctx[r, :n - 1]], axis=0)
                else:               # a cold row keeps nothing for tokens[r, 0]
                    step_ids = ids[r, 1:]
                    hin = ctx[r, :n - 1]
                if len(step_ids):
                    self._forward(r, row, step_ids, hin)
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
        self.choices = []
        out = [[0] * depth for _ in range(b)]
        try:
            for r, row in enumerate(self.rows):
                tok, hin = pending[r], row.hidden
                if depth == 0:   # the pending row only: no logits, no sampling (§5.7, §11.2)
                    self._forward(r, row, np.array([tok]), hin[None, :])
                s = samplers[r]
                for t in range(depth):
                    y = self._forward(r, row, np.array([tok]), hin[None, :])[0]
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
        self.choices = []
        appended = max(1, d)
        try:
            for r, row in enumerate(self.rows):
                row.kv.length = row.before + min(accepted[r] + 1, appended)
                if d > 0 and accepted[r] == d:   # full acceptance: the last proposal's row, from the true hidden
                    self._forward(r, row, np.array([row.drafts[d - 1]]), ctx[r, d - 1][None, :])
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
        cp = Checkpoint(SCHEMA, t + 1, t, self.m.identity, keys, values, hidden)
        cp.digest = checkpoint_digest(cp)
        return cp

    def close(self):
        self.closed = True
        self.rows = []
        self.round_open = False

    # -- helpers
    def _forward(self, r, row, ids, hin):
        """The block over row r's cache, keeping the router's choices of each MoE forward row (spec §12.5)."""
        y = self.m.block.forward(row.kv, ids, hin)
        self.choices.extend((r, p, e) for p, e in getattr(self.m.block, "last_experts", ()))
        return y

    def _lengths(self):
        return [row.kv.length for row in self.rows]

    def _put_back(self, call, saved, error):
        """A failed computation: KV lengths go back; if even that fails the group is poisoned (§9.2)."""
        self.choices = []
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
        bad = np.argwhere(~np.isfinite(a) | (np.abs(a) > MAX_HIDDEN))
        if len(bad):
            i, j, k = (int(v) for v in bad[0])
            raise E.invalid_argument("%s: context[%d, %d, %d] (row %d, position %d) = %r %s" % (
                call, i, j, k, i, j, a[i, j, k], "is not finite" if not np.isfinite(a[i, j, k]) else
                "has magnitude above 2^51, where an f32 RMSNorm sum of squares could overflow (spec §11.14)"))
        return a


MAX_HIDDEN = 2.0 ** 51  # spec §11.14: the largest hidden magnitude a call may pass

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
    if name == "hidden" and np.any(np.abs(a) > MAX_HIDDEN):
        raise E.incompatible_checkpoint("%s hidden element %d has magnitude above 2^51 (spec §11.14)" % (
            where, int(np.flatnonzero(np.abs(a) > MAX_HIDDEN)[0])))
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

    def __init__(self, path, identity=None, router="float32"):
        """`router`: the MoE router's precision (spec §12.3 says float32; float64 for comparing with a float64
        reference)."""
        self.cfg, self.weights = load_model(path)
        self.block = Block(self.cfg, self.weights, router)
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
