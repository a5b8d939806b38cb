"""The target row contract once (spec §13.3, §11.1, §11.11), the Python twin of the Java skeleton `AbstractTargetRows`
and its checks `TargetContract`: a `TargetRows` whose calls validate (in the contract's order, with the same kinds
and messages), keep the round's bookkeeping, chunk prefills, publish atomically and seal checkpoints with their
content digest (WIRE.md §5.3), over an engine that supplies only its storage of all rows and its forward maths.

    class MyTargetRows(TargetRowsSkeleton):
        def append_rows(self, state, restored): ...          # storage plus one row per TargetRowState (None: empty row)
        def keep_rows(self, state, keep): ...                # storage of rows keep[i] (default: a tuple per row)
        def forward(self, state, at, ids, s, verify): ...    # Forwarded(logits, pre_norm, post_norm, storage)
        def rollback(self, verified, before, keep): ...      # the round's storage, row b keeping keep[b] tokens
        def export(self, state, row, processed): ...         # TargetRowState of row `row` (conv windows … values)

Every call runs in three steps. *Validate* the group's state and every argument. *Compute* new storage from the
published one without changing anything a published row reads (replace a recurrent state, never update it in place).
*Publish* with plain assignments that cannot fail. A refused or failed call therefore changes nothing; an exception
other than MtpError raised while computing is answered BACKEND_FAILURE with the rows unchanged (not poisoned). An
engine whose device cannot be trusted after a failure calls `poison`.
"""

import collections

import numpy as np

from . import errors as E
from .rows import (MAX_DEPTH, MAX_ELEMENTS, MAX_POSITIONS, PREFILL_CHUNK, GroupPlumbing, _abbrev, _describe, _is_int,
                   _tokens)
from .target import TARGET_SCHEMA, TargetCheckpoint, TargetRows, target_checkpoint_digest
from .tensor import Tensor

MAX_WIDTH = MAX_DEPTH + 1    # the widest verify: the pending token and 64 drafts (api TargetContract.MAX_WIDTH)
QUOTE_CHARS = 200            # api UntrustedText.MAX_CHARS

TargetRowState = collections.namedtuple("TargetRowState", "processed conv_windows recurrent_states keys values")
TargetRowState.__doc__ = """One row's target state (spec §13.3 shapes without the row axis), numpy: conv_windows
[nGDN, conv_dim, K−1], recurrent_states [nGDN, Hv, Dk, Dv], keys and values [nFull, nKV, P, D]. Restored rows hold
float64 arrays, with a leading 0 for a kind of layer the target lacks; an engine's `export` may return None there."""

Forwarded = collections.namedtuple("Forwarded", "logits pre_norm post_norm state")
Forwarded.__doc__ = """One forward's results (array-likes) and the storage after it: logits [B, n, V] (every position
of a verify, the last of a prefill), pre_norm and post_norm [B, s, H] (the two taps at every position fed)."""


class TargetShape:
    """What the checks need of a target (spec §13.1): identity, V, H, nKV, D, the layer kinds, the GDN dimensions,
    and the widest per-token array of one forward (api TargetContract.forwardSize: 2·nH·D, conv_dim + Hv·Dv, I, H)."""

    def __init__(self, identity, vocab, hidden, heads, kv_heads, head_dim, intermediate, layer_types, key_heads,
                 value_heads, key_head_dim, value_head_dim, conv_kernel):
        self.identity, self.vocab, self.hidden = identity, int(vocab), int(hidden)
        self.heads, self.kv_heads, self.head_dim = int(heads), int(kv_heads), int(head_dim)
        self.layer_types = list(layer_types)
        self.n_gdn = sum(1 for t in self.layer_types if t == "linear_attention")
        self.n_full = sum(1 for t in self.layer_types if t == "full_attention")
        self.key_heads, self.value_heads = int(key_heads), int(value_heads)
        self.key_head_dim, self.value_head_dim, self.conv_kernel = int(key_head_dim), int(value_head_dim), int(conv_kernel)
        value_dim = self.value_heads * self.value_head_dim
        self.conv_dim = 2 * self.key_heads * self.key_head_dim + value_dim
        self.widest = max(2 * self.heads * self.head_dim, self.conv_dim + value_dim, int(intermediate), self.hidden)
        self.max_positions = min(MAX_POSITIONS, MAX_ELEMENTS // (self.kv_heads * self.head_dim))

    def shapes(self, p):
        """The four checkpoint tensors' shapes of a row after p tokens."""
        return ((self.n_gdn, self.conv_dim, self.conv_kernel - 1),
                (self.n_gdn, self.value_heads, self.key_head_dim, self.value_head_dim),
                (self.n_full, self.kv_heads, p, self.head_dim), (self.n_full, self.kv_heads, p, self.head_dim))

    @staticmethod
    def of(config, identity):
        """From `loadTarget`'s `config` (WIRE.md §5.2): load's keys, `layerTypes` and `gdn`."""
        c = config or {}

        def need(d, k, where):
            if not _is_int(d.get(k)) or d[k] <= 0:
                raise E.incompatible_model("loadTarget: config.%s%s = %r, expected a positive integer"
                                           % (where, k, d.get(k)))
            return d[k]
        h, nh, nkv, d, v = (need(c, k, "") for k in ("hiddenSize", "numHeads", "numKvHeads", "headDim", "vocabSize"))
        types = c.get("layerTypes")
        if not isinstance(types, list) or any(t not in ("linear_attention", "full_attention") for t in types):
            raise E.incompatible_model("loadTarget: config.layerTypes = %r, expected a list of 'linear_attention' and "
                                       "'full_attention'" % (types,))
        g = c.get("gdn") if isinstance(c.get("gdn"), dict) else {}
        gdn = [need(g, k, "gdn.") for k in ("numKeyHeads", "numValueHeads", "keyHeadDim", "valueHeadDim",
                                             "convKernel")]
        if not isinstance(identity, str):
            raise E.invalid_argument("loadTarget: identity = %r, expected a string" % (identity,))
        inter = c["intermediateSize"] if _is_int(c.get("intermediateSize")) else 0
        return TargetShape(identity, v, h, nh, nkv, d, inter, types, *gdn)


class TargetRowsSkeleton(GroupPlumbing, TargetRows):
    """A group of target rows over an engine's storage `S` of all rows (see the module text). Subclasses implement
    the storage and maths methods; every contract method (append … close) is the skeleton's."""

    PREFILL, VERIFY = False, True   # forward's `verify` argument
    OPENED_FROM = "target"

    def __init__(self, shape, empty=()):
        """A group of no rows over `empty`, the storage of zero rows."""
        self.shape = shape
        self._storage = empty
        self._processed = []     # [B] P
        self._round_open = False
        self._width = 0
        self._before = None      # [B] P when the open round began
        self._closed = False
        self._poisoned_by = None
        self._in_progress = None
        # (row, position, layer, experts) per MoE router decision of the last prefill or verify, filled by `forward`
        self.router = []

    # ---- what an engine supplies ------------------------------------------------------------------------------

    def append_rows(self, state, restored):
        """Storage of `state`'s rows followed by one per entry: a TargetRowState (float64, checked) or None (an
        empty row, P = 0)."""
        raise NotImplementedError

    def keep_rows(self, state, keep):
        """Storage holding row keep[i] of `state` as row i. The default serves a tuple or list of one entry per row."""
        if not isinstance(state, (tuple, list)):
            raise NotImplementedError("keep_rows: storage other than one tuple or list entry per row needs its own")
        return type(state)(state[i] for i in keep)

    def forward(self, state, at, ids, s, verify):
        """One forward of s tokens per row (spec §13.1): row b, having processed at[b] tokens, consumes ids[b]
        (int64 [B, s]). A prefill (verify False) returns storage with the tokens committed and the logits of each
        row's last position [B, 1, V]; a verify returns the round's storage, from which `rollback` keeps any prefix,
        and the logits of every position [B, s, V]. Both return the taps [B, s, H]. Never changes what `state`'s
        published rows read. A MoE engine appends `(b, at[b] + i, layer, experts)` to `self.router` for each token i
        of row b and each MoE layer, in the order it computes them (the experts in slot order, spec §12.3)."""
        raise NotImplementedError

    def rollback(self, verified, before, keep):
        """The open round's storage `verified` rolled back: row b keeps its first keep[b] verified tokens
        (1 ≤ keep[b] ≤ W) after the before[b] it had processed; its state is exactly the state after them."""
        raise NotImplementedError

    def export(self, state, row, processed):
        """Row `row`'s state after its processed ≥ 1 tokens as a TargetRowState of numpy arrays or F32 Tensors in
        the checkpoint's orientation (WIRE.md §5.3; None for a kind of layer the target lacks)."""
        raise NotImplementedError

    # ---- the contract -----------------------------------------------------------------------------------------

    def row_count(self):
        return len(self._processed)

    def processed_tokens(self):
        """P per row at the last committed boundary or, during a round, through the open verify."""
        return list(self._processed)

    def round_open(self):
        return self._round_open

    def router_choices(self):
        """The router choices of the last prefill or verify (WIRE.md §5.2 `experts`); empty after a commit, a failed
        call, or for a dense target."""
        return list(self.router)

    def append(self, checkpoints):
        self._enter("append")
        try:
            _no_round("append", self._round_open)
            if checkpoints is None or not isinstance(checkpoints, (list, tuple)):
                raise E.invalid_argument("append: checkpoint list is null (use null entries for empty rows)")
            restored = [None if cp is None else self._restore("append", i, cp) for i, cp in enumerate(checkpoints)]
            if not restored:
                return
            after = self._processed + [0 if r is None else r.processed for r in restored]
            nxt = self._compute("append", lambda: self.seal(self.append_rows(self._storage, restored)))
            self.reached("append", "publish")
            self._publish(nxt, after)
        finally:
            self._exit()

    def filter_rows(self, keep):
        self._enter("filterRows")
        try:
            _no_round("filterRows", self._round_open)
            b = self.row_count()
            if keep is None or not isinstance(keep, (list, tuple)):
                raise E.invalid_argument("filterRows: keep is null")
            seen = set()
            for i, r in enumerate(keep):
                if not _is_int(r) or r < 0 or r >= b:
                    raise E.invalid_argument("filterRows: keep[%d] = %s outside [0, %d)" % (i, r, b))
                if r in seen:
                    raise E.invalid_argument("filterRows: keep[%d] = %d repeats a row" % (i, r))
                seen.add(r)
            kept = [int(r) for r in keep]
            after = [self._processed[r] for r in kept]
            nxt = self._compute("filterRows", lambda: self.seal(self.keep_rows(self._storage, kept)))
            self.reached("filterRows", "publish")
            self._publish(nxt, after)
        finally:
            self._exit()

    def prefill(self, tokens):
        self._enter("prefill")
        try:
            _no_round("prefill", self._round_open)
            b = self._has_rows("prefill")
            ids = _tokens("prefill", tokens, b, self.shape.vocab)
            n = ids.shape[1]
            _positions("prefill", self._processed, n, self.shape)
            _forward_size("prefill", b, min(n, PREFILL_CHUNK), self.shape, "split the prefill into shorter ones")
            at = list(self._processed)
            f = self._compute("prefill", lambda: self._prefill_chunks(ids, at))
            self._reached_publish("prefill")
            self._publish(f.state, [p + n for p in at])
            return _outputs(f)
        finally:
            self._exit()

    def _prefill_chunks(self, ids, at):
        """Prefill's forwards of at most PREFILL_CHUNK positions; the logits are the last chunk's."""
        b, n = ids.shape
        s, pre, post, logits, cursor = self._storage, [], [], None, list(at)
        for pos in range(0, n, PREFILL_CHUNK):
            m = min(PREFILL_CHUNK, n - pos)
            self.reached("prefill", "chunk forward")
            f = self._checked_forward("prefill", s, list(cursor), ids[:, pos:pos + m], m, False)
            s, logits = f.state, f.logits
            pre.append(f.pre_norm)
            post.append(f.post_norm)
            cursor = [c + m for c in cursor]
        return Forwarded(logits, np.concatenate(pre, axis=1), np.concatenate(post, axis=1), self.seal(s))

    def verify(self, tokens):
        self._enter("verify")
        try:
            _no_round("verify", self._round_open)
            b = self._has_rows("verify")
            ids = _tokens("verify", tokens, b, self.shape.vocab)
            w = ids.shape[1]
            if w > MAX_WIDTH:
                raise E.invalid_argument("verify: width W = %d tokens per row, more than the %d a verify may take (the "
                                         "pending token and at most %d drafts, spec §13.3)" % (w, MAX_WIDTH, MAX_DEPTH))
            for r, p in enumerate(self._processed):
                if p == 0:
                    raise E.illegal_state("verify: row %d has processed no token; prefill it first: a verify "
                                          "continues from the pending token (spec §13.3)" % r)
            _positions("verify", self._processed, w, self.shape)
            _forward_size("verify", b, w, self.shape, "verify fewer rows at a time")
            frm = list(self._processed)

            def work():
                self.reached("verify", "forward")
                f = self._checked_forward("verify", self._storage, list(frm), ids, w, True)
                return f._replace(state=self.seal(f.state))
            f = self._compute("verify", work)
            self._reached_publish("verify")
            self._publish(f.state, [p + w for p in frm])
            self._before, self._width, self._round_open = frm, w, True
            return _outputs(f)
        finally:
            self._exit()

    def commit(self, accepted):
        self._enter("commit")
        try:
            if not self._round_open:
                raise E.illegal_state("commit: no verify round is open (spec §13.3)")
            b, w = self.row_count(), self._width
            if accepted is None or not isinstance(accepted, (list, tuple)):
                raise E.invalid_argument("commit: accepted is null")
            if len(accepted) != b:
                raise E.invalid_argument("commit: accepted has %d entries, expected %d (one per row)"
                                         % (len(accepted), b))
            for r, a in enumerate(accepted):
                if not _is_int(a) or a < 0 or a > w - 1:
                    raise E.invalid_argument("commit: accepted[%d] = %s outside [0, %d], the drafts of a verify of "
                                             "width %d (spec §13.3); rows unchanged" % (r, a, w - 1, w))
            keep = [int(a) + 1 for a in accepted]
            before = list(self._before)

            def work():
                self.reached("commit", "rollback")
                return self.seal(self.rollback(self._storage, list(before), list(keep)))
            nxt = self._compute("commit", work)
            self.reached("commit", "publish")
            self._publish(nxt, [p + k for p, k in zip(before, keep)])
            self._before, self._width, self._round_open = None, 0, False
        finally:
            self._exit()

    def capture(self, row):
        self._enter("capture")
        try:
            _no_round("capture", self._round_open)
            if not _is_int(row) or row < 0 or row >= self.row_count():
                raise E.invalid_argument("capture: row %s outside [0, %d)" % (row, self.row_count()))
            p = self._processed[row]
            if p == 0:
                raise E.illegal_state("capture: row %d has processed no token yet (an empty row must be prefilled "
                                      "first, spec §13.3)" % row)
            t = self._compute("capture", lambda: self.export(self._storage, int(row), p))
            layers = (self.shape.n_gdn, self.shape.n_gdn, self.shape.n_full, self.shape.n_full)
            tensors = [None if n == 0 else _f32(x, shape)
                       for x, n, shape in zip(tuple(t)[1:], layers, self.shape.shapes(p))]
            cp = TargetCheckpoint(TARGET_SCHEMA, p, self.shape.identity, *tensors)
            cp.digest = target_checkpoint_digest(cp)
            return cp
        finally:
            self._exit()

    def close(self):
        if self._in_progress is not None:
            raise E.illegal_state("close: called from inside %s on this group (spec §11.11)" % self._in_progress)
        if self._closed:
            return
        self._closed = True
        s, self._storage = self._storage, None
        self._processed, self._round_open, self._before = [], False, None
        self.router = []
        self.release(s)

    # ---- plumbing ---------------------------------------------------------------------------------------------

    def _enter(self, call):
        super()._enter(call)
        if call in ("prefill", "verify", "commit"):   # cleared before each of them, refused ones included
            self.router = []

    def _failed(self):
        self.router = []

    def _reached_publish(self, call):
        """The publish hook of a call that reports router choices: a failure there reports none."""
        try:
            self.reached(call, "publish")
        except BaseException:
            self.router = []
            raise

    def _has_rows(self, call):
        if not self._processed:
            raise E.illegal_state(call + ": the group has no rows")
        return len(self._processed)

    def _checked_forward(self, call, state, at, ids, s, verify):
        """The engine's forward, its outputs checked as [B, n, V] logits and [B, s, H] taps (float arrays)."""
        f = self.forward(state, at, ids, s, verify)
        if not isinstance(f, tuple) or len(f) != 4:
            raise E.MtpError(E.BACKEND_FAILURE, "%s: the backend's forward returned %s, expected Forwarded(logits, "
                                                "pre_norm, post_norm, state)" % (call, type(f).__name__))
        b, c = len(at), self.shape
        out = []
        for name, x, shape in (("logits", f[0], (b, s if verify else 1, c.vocab)), ("pre_norm", f[1], (b, s, c.hidden)),
                               ("post_norm", f[2], (b, s, c.hidden))):
            a = x.array() if isinstance(x, Tensor) else np.asarray(x)
            if a.shape != shape:
                raise E.MtpError(E.BACKEND_FAILURE, "%s: the backend's forward returned %s of shape %s, expected %s"
                                 % (call, name, list(a.shape), list(shape)))
            out.append(a)
        return Forwarded(out[0], out[1], out[2], f[3])

    def _publish(self, nxt, after):
        """Plain assignments; then frees what the old storage held (a failure there poisons the group)."""
        old = self._storage
        self._storage, self._processed = nxt, after
        self._superseded(old, nxt)

    def _restore(self, call, i, cp):
        """§13.3: checks one checkpoint (TargetContract.checkpoint's order) and returns its TargetRowState."""
        where = "%s: checkpoint[%d]" % (call, i)
        bad = E.incompatible_checkpoint
        c = self.shape
        if not isinstance(cp, TargetCheckpoint):
            raise bad("%s is not a target checkpoint object" % where)
        if cp.schema != TARGET_SCHEMA:
            raise bad("%s has schema %s, expected '%s' (spec §13.3)" % (where, _quote(cp.schema), TARGET_SCHEMA))
        if cp.model_identity != c.identity:
            raise bad("%s belongs to target %s, this group's target is %s"
                      % (where, _quote(_abbrev(cp.model_identity)), _abbrev(c.identity)))
        p = cp.processed_tokens
        if not _is_int(p) or p < 1 or p > c.max_positions:
            raise bad("%s has P = %s processed tokens, outside [1, %d] (spec §13.3)" % (where, p, c.max_positions))
        names = ("convWindows", "recurrentStates", "keys", "values")
        layers = (c.n_gdn, c.n_gdn, c.n_full, c.n_full)
        raw = (cp.conv_windows, cp.recurrent_states, cp.keys, cp.values)
        arrays = [_checked(where, name, t, n, shape) for name, t, n, shape in zip(names, raw, layers, c.shapes(p))]
        if cp.digest is None:
            raise bad("%s carries no content digest; a checkpoint comes from a capture, or from a file or peer that "
                      "kept its digest (spec §13.3)" % where)
        if cp.digest != target_checkpoint_digest(cp):
            raise bad("%s does not match its content digest: its label (schema, P, model identity) or its tensors "
                      "were changed after capture (spec §13.3)" % where)
        return TargetRowState(int(p), *arrays)


# ---- the checks (TargetContract) ------------------------------------------------------------------------------

def _no_round(call, round_open):
    if round_open:
        raise E.illegal_state(call + ": a verify round is open; commit it first (spec §13.3)")


def _positions(call, held, added, shape):
    """INVALID_ARGUMENT when a row would process more than shape.max_positions tokens."""
    for b, h in enumerate(held):
        if h + added > shape.max_positions:
            raise E.invalid_argument("%s: row %d has processed %d tokens; %d more would bring it to %d, more than the "
                                     "%d a row may hold (spec §11.13)" % (call, b, h, added, h + added,
                                                                          shape.max_positions))


def _forward_size(call, rows, positions, shape, advice):
    """INVALID_ARGUMENT when one forward of rows × positions tokens needs more than MAX_ELEMENTS in one array."""
    n = rows * positions * shape.widest
    if n > MAX_ELEMENTS:
        raise E.invalid_argument("%s: one forward of %d rows × %d positions × %d values per token needs %d elements "
                                 "in one array, more than %d (spec §11.13); %s" % (call, rows, positions,
                                                                                   shape.widest, n, MAX_ELEMENTS,
                                                                                   advice))


def _checked(where, name, t, layers, shape):
    """A checkpoint tensor: absent when layers == 0, else F32 of `shape`, every element finite; float64."""
    bad = E.incompatible_checkpoint
    if layers == 0:
        if t is not None:
            raise bad("%s carries %s but the target has no layer that holds them" % (where, name))
        return np.zeros(shape)
    if t is None:
        raise bad("%s has no %s tensor" % (where, name))
    if not isinstance(t, Tensor):
        raise bad("%s %s %s is not a valid tensor (its byte count does not match its dtype and shape)"
                  % (where, name, _describe(t)))
    if t.dtype != "F32":
        raise bad("%s %s dtype %s, expected F32" % (where, name, t.dtype))
    if tuple(t.shape) != tuple(shape):
        raise bad("%s %s shape %s, expected %s" % (where, name, t.describe(), list(shape)))
    a = t.array().astype(np.float64)
    nonfinite = np.flatnonzero(~np.isfinite(a.reshape(-1)))
    if len(nonfinite):
        raise bad("%s %s element %d is not finite" % (where, name, int(nonfinite[0])))
    return a


def _quote(s):
    """api UntrustedText.quote: quoted, backslash and quote escaped, control characters written out, cut at 200."""
    if s is None:
        return "null"
    s = str(s)
    body = s[:QUOTE_CHARS]
    esc = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
    body = "".join(esc.get(ch, ch if ch >= " " and ch != "\x7f" else "\\u%04x" % ord(ch))
                   for ch in body.replace("\\", "\\\\").replace("'", "\\'"))
    return "'" + body + "'" + ("… (%d chars)" % len(s) if len(s) > QUOTE_CHARS else "")


def _f32(x, shape):
    """An exported array (or Tensor) as an F32 Tensor of `shape`."""
    if isinstance(x, Tensor):
        if x.dtype != "F32" or tuple(x.shape) != tuple(shape):
            raise E.MtpError(E.BACKEND_FAILURE, "capture: the backend exported %s, expected F32 %s"
                             % (x.describe(), list(shape)))
        return x
    a = np.asarray(x, dtype=np.float32)
    if a.size != int(np.prod(shape)):
        raise E.MtpError(E.BACKEND_FAILURE, "capture: the backend exported %d values, expected %s"
                         % (a.size, list(shape)))
    return Tensor.from_numpy(np.ascontiguousarray(a.reshape(shape)))


def _outputs(f):
    """The caller's copy of a forward's results: logits [B, n, V], taps [B, s, H], F32."""
    return tuple(Tensor.from_numpy(np.ascontiguousarray(np.asarray(x, dtype=np.float32))) for x in f[:3])
