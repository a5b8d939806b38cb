"""The row contract once (spec §5, §11.1, §11.11), the Python twin of the Java skeleton `AbstractDraftRows` and its
checks `RowContract`: a `DraftRows` whose calls validate (in the contract's order, with the same kinds and messages),
keep the round's bookkeeping, chunk prefills, publish atomically and seal checkpoints with their content digest, over
an engine that supplies only its storage of all rows and its forward/sample maths.

    class MyRows(RowsSkeleton):
        def append_rows(self, state, restored): ...          # storage plus one row per RowState (None: cold row)
        def keep_rows(self, state, keep, lengths): ...       # storage of rows keep[i] (default: a tuple per row)
        def forward(self, state, at, rows, ids, hin): ...    # (storage, outputs [B][s][H]); K/V at at[b] on
        def retain(self, state, hidden): ...                 # storage with retained hiddens [B, H]
        def sample(self, row, y, sampler, step): ...         # one draft token from output hidden y [H]
        def export(self, state, row, length): ...            # RowState(keys [nKV, length, D] | None, values, hidden [H])

Every call runs in three steps. *Validate* the group's state and every argument. *Compute* new storage from the
published one: an engine may write into buffers the published storage shares, but only at positions at or past each
row's published length, which nothing reads. *Publish* with plain assignments that cannot fail. A refused or failed
call therefore changes nothing; an exception other than MtpError raised while computing is answered BACKEND_FAILURE
with the rows unchanged (not poisoned). An engine whose device cannot be trusted after a failure calls `poison`.
"""

import collections
import math

import numpy as np

from . import errors as E
from .server import Checkpoint, DraftRows, RowSampler, checkpoint_digest
from .tensor import Tensor

SCHEMA = "qwen-mtp-v1"       # the drafter checkpoint schema (spec §6)
MAX_DEPTH = 64               # the deepest draft round a call may ask for
MAX_POSITIONS = 1 << 20      # the most drafter positions P − 1 a row may hold (spec §11.13)
MAX_ELEMENTS = 1 << 30       # the most elements one array of a call may need (spec §11.13)
MAX_HIDDEN = 2.0 ** 51       # the largest hidden magnitude a call may pass (spec §11.14)
MIN_TEMPERATURE = 1e-30      # below it f32(1/T) times a log-prob overflows (spec §7)
PREFILL_CHUNK = 2048         # prefill forwards at most this many positions at once (spec §5.4)
FLOATS = ("F32", "F16", "BF16")

RowState = collections.namedtuple("RowState", "keys values hidden")
RowState.__doc__ = """One row's drafter state as numpy: keys, values [nKV, P−1, D] (None when P = 1), hidden [H]."""


class RowShape:
    """What the checks need of a model: its identity, V, H, nKV, D and the widest per-token vector of one forward
    without the logits (spec §11.13: 2·H, 2·nH·D, nKV·D, the MLP's width; an MoE engine adds top-k·H, the expert
    count and the expert widths)."""

    def __init__(self, identity, vocab, hidden, kv_heads, head_dim, widest=0):
        self.identity, self.vocab, self.hidden = identity, int(vocab), int(hidden)
        self.kv_heads, self.head_dim = int(kv_heads), int(head_dim)
        self.widest = max(int(widest), 2 * self.hidden, self.kv_heads * self.head_dim)
        self.max_positions = min(MAX_POSITIONS, MAX_ELEMENTS // (self.kv_heads * self.head_dim))

    @staticmethod
    def of(config, identity):
        """From `load`'s `config` (WIRE.md §5): hiddenSize, numKvHeads, headDim, vocabSize; numHeads and
        intermediateSize widen the forward-size limit when present (an MoE engine, wider still, builds its own)."""
        c = config or {}
        for k in ("hiddenSize", "numKvHeads", "headDim", "vocabSize"):
            if not _is_int(c.get(k)) or c[k] <= 0:
                raise E.incompatible_model("load: config.%s = %r, expected a positive integer" % (k, c.get(k)))
        if not isinstance(identity, str):
            raise E.invalid_argument("load: identity = %r, expected a string" % (identity,))

        def more(k):   # numHeads, intermediateSize: optional, they widen the forward-size limit
            return c[k] if _is_int(c.get(k)) else 0
        widest = max(2 * more("numHeads") * c["headDim"], more("intermediateSize"))
        return RowShape(identity, c["vocabSize"], c["hiddenSize"], c["numKvHeads"], c["headDim"], widest)


class GroupPlumbing:
    """What the drafter's and the target's row skeletons share, as the Java skeletons do: the engine's lifecycle hooks
    with their defaults, poisoning, one call at a time, and a call's computation turned into BACKEND_FAILURE with the
    rows unchanged. A subclass sets `_closed`, `_poisoned_by` and `_in_progress` (False, None, None) and names what its
    groups are opened from in `OPENED_FROM`."""

    OPENED_FROM = "model"

    def release(self, state):
        """Frees `state` (the group is closing)."""

    def model_closed(self):
        """True once the model this group was opened from is closed (the wire server checks this itself)."""
        return False

    def seal(self, state):
        """Makes computed storage outlive the call that built it."""
        return state

    def discard(self, superseded, current):
        """Frees what `superseded` holds and `current` no longer uses, after a call published."""

    def reached(self, call, step):
        """A hook reached before each step of a call (tests inject faults through it)."""

    def poison(self, reason):
        """Marks the group unusable after a failure the engine cannot undo (spec §9.2); the first reason is kept."""
        if self._poisoned_by is None:
            self._poisoned_by = reason

    def is_closed(self):
        return self._closed

    def _enter(self, call):
        if self._in_progress is not None:
            raise E.illegal_state("%s: %s is in progress on this group (this call comes from inside it); a group "
                                  "serves one call at a time (spec §11.11)" % (call, self._in_progress))
        if self._closed:
            raise E.illegal_state(call + ": the group is closed")
        if self._poisoned_by is not None:
            raise E.illegal_state("%s: the group is poisoned by an earlier failure (%s); discard it and open a new "
                                  "one (spec §9.2)" % (call, self._poisoned_by))
        if self.model_closed():
            raise E.illegal_state("%s: the %s this group was opened from is closed; a group cannot outlive its %s "
                                  "(spec §11.11)" % (call, self.OPENED_FROM, self.OPENED_FROM))
        self._in_progress = call

    def _exit(self):
        self._in_progress = None

    def _computing(self, call):
        """Before a call's computation (the skeletons clear their router choices here)."""

    def _failed(self):
        """After a computation failed (the skeletons forget the call's router choices here)."""

    def _compute(self, call, work):
        """Runs one call's computation; anything but an MtpError becomes BACKEND_FAILURE with the rows unchanged."""
        self._computing(call)
        try:
            return work()
        except E.MtpError as e:
            self._failed()
            if e.poisoned:
                self.poison("a failed " + call)
            raise
        except Exception as e:  # noqa: BLE001 - the engine's own failure; nothing was published
            self._failed()
            raise E.MtpError(E.BACKEND_FAILURE, "%s: %s: %s (rows unchanged)" % (call, type(e).__name__, e))

    def _superseded(self, old, nxt):
        """After a publish: frees what the old storage held (a failure there poisons the group)."""
        if old is not nxt:
            try:
                self.discard(old, nxt)
            except Exception:
                self.poison("freeing superseded storage failed")
                raise


class RowsSkeleton(GroupPlumbing, DraftRows):
    """A group of rows over an engine's storage `S` of all rows (see the module text). Subclasses implement the six
    maths/storage methods; every contract method (append … close) is the skeleton's and should not be overridden."""

    def __init__(self, shape, empty=()):
        """A group of no rows over `empty`, the storage of zero rows."""
        self.shape = shape
        self._storage = empty
        self._lengths = []       # [B] committed drafter positions, P − 1
        self._warm = []          # [B] holds a retained hidden (restored or prefilled)
        self._round_open = False
        self._depth = 0
        self._before = None      # [B] lengths when the open round began
        self._drafts = None      # [B][depth] the open round's proposals
        self._closed = False
        self._poisoned_by = None
        self._in_progress = None
        self.router = []         # (row, position, experts) of the last call's MoE forward rows, filled by `forward`

    # ---- what an engine supplies ------------------------------------------------------------------------------

    def append_rows(self, state, restored):
        """Storage of `state`'s rows followed by one row per entry: a RowState (numpy float64, checked) or None."""
        raise NotImplementedError

    def keep_rows(self, state, keep, lengths):
        """Storage holding row keep[i] of `state` as row i (spec §5.3); `lengths` are theirs. The default serves
        storage that is a tuple or list of one entry per row."""
        if not isinstance(state, (tuple, list)):
            raise NotImplementedError("keep_rows: storage other than one tuple or list entry per row needs its own")
        return type(state)(state[i] for i in keep)

    def forward(self, state, at, rows, ids, hin):
        """One forward of s positions per row (spec §3): row b appends K/V at positions at[b] … at[b]+s−1 for token
        ids ids[b] (int64 [B, s]) and input hiddens hin[b] (float64 [B, s, H]), or, when hin is None (s = 1), its
        retained hidden. Only rows with rows[b] (all when None) count. Returns (storage, outputs): outputs[b] the
        output hiddens [s, H] of a row that counts. Never writes below a row's published length in buffers the
        published storage shares."""
        raise NotImplementedError

    def retain(self, state, hidden):
        """`state` with the retained hiddens replaced by hidden [B, H] (float64)."""
        raise NotImplementedError

    def sample(self, row, y, sampler, step):
        """One draft token of row `row` from its output hidden y [H]: logits, log-softmax and the sampler's draw at
        `step` (spec §1.7, §7). Used by the default `draft_chain`."""
        raise NotImplementedError

    def export(self, state, row, length):
        """Row `row`'s KV of its first `length` positions (None when 0) and its retained hidden, as a RowState of
        numpy arrays or Tensors (spec §6)."""
        raise NotImplementedError

    def draft_chain(self, state, at, pending, depth, steps, sampling):
        """A draft round of depth ≥ 1 (spec §5.7): returns (proposals [B][depth], storage). The default forwards the
        pending tokens from the retained hiddens, samples, and feeds each output back `depth` times."""
        b = len(at)
        ids, hin, out = np.asarray(pending, dtype=np.int64)[:, None], None, [[] for _ in range(b)]
        for t in range(depth):
            state, ys = self.forward(state, [a + t for a in at], None, ids, hin)
            toks = [int(self.sample(r, np.asarray(ys[r])[0], sampling[r], steps[r] + t)) for r in range(b)]
            for r in range(b):
                out[r].append(toks[r])
            ids, hin = np.asarray(toks, dtype=np.int64)[:, None], np.stack([np.asarray(ys[r]) for r in range(b)])
        return out, state

    # ---- the contract -----------------------------------------------------------------------------------------

    def row_count(self):
        return len(self._lengths)

    def drafter_lengths(self):
        """The drafter positions P − 1 of each row at its last committed boundary, or after the open draft."""
        return list(self._lengths)

    def router_choices(self):
        return list(self.router)

    def append(self, checkpoints):
        self._enter("append")
        try:
            _no_round("append", self._round_open)
            if checkpoints is None or not isinstance(checkpoints, (list, tuple)):
                raise E.invalid_argument("append: checkpoint list is null (use null entries for cold rows)")
            restored = [None if cp is None else self._restore("append", i, cp) for i, cp in enumerate(checkpoints)]
            if not restored:
                return
            lengths = self._lengths + [0 if r is None else (0 if r.keys is None else r.keys.shape[1])
                                       for r in restored]
            warm = self._warm + [r is not None for r in restored]
            nxt = self._compute("append", lambda: self.seal(self.append_rows(self._storage, restored)))
            self.reached("append", "publish")
            self._publish(nxt, lengths=lengths, warm=warm)
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
            lengths = [self._lengths[r] for r in kept]
            warm = [self._warm[r] for r in kept]
            nxt = self._compute("filterRows", lambda: self.seal(self.keep_rows(self._storage, kept, list(lengths))))
            self.reached("filterRows", "publish")
            self._publish(nxt, lengths=lengths, warm=warm)
        finally:
            self._exit()

    def prefill(self, tokens, context):
        self._enter("prefill")
        try:
            _no_round("prefill", self._round_open)
            b = self.row_count()
            if b == 0:
                raise E.illegal_state("prefill: the group has no rows")
            ids = _tokens("prefill", tokens, b, self.shape.vocab)
            n = ids.shape[1]
            ctx = _context("prefill", context, b, n, self.shape.hidden, "the taps at the same L positions as tokens")
            added = [(1 if w else 0) + n - 1 for w in self._warm]
            _positions("prefill", self._lengths, added, self.shape, "a prefill of L = %d" % n)
            _forward_size("prefill", b, min(n, PREFILL_CHUNK), self.shape, False,
                          "split the prefill into shorter ones (a split prefill equals one, spec §10.1.8)")
            at = list(self._lengths)
            nxt = self._compute("prefill", lambda: self._prefill_steps(ids, ctx, at))
            self.reached("prefill", "publish")
            self._publish(nxt, lengths=at, warm=[True] * b)
        finally:
            self._exit()

    def _prefill_steps(self, ids, ctx, at):
        """Prefill's computation (spec §5.4); advances `at` to the lengths after it."""
        b, n = ids.shape
        bridge = list(self._warm)
        s = self._storage
        if any(bridge):   # 1. each row with a retained hidden pairs tokens[b, 0] with it; cold rows keep nothing
            self.reached("prefill", "bridge forward")
            s, _ = self.forward(s, list(at), bridge, ids[:, :1], None)
            for r in range(b):
                at[r] += 1 if bridge[r] else 0
        for pos in range(0, n - 1, PREFILL_CHUNK):   # 2. token p+1 pairs with hidden p, in chunks
            m = min(pos + PREFILL_CHUNK, n - 1) - pos
            self.reached("prefill", "chunk forward")
            s, _ = self.forward(s, list(at), None, ids[:, pos + 1:pos + 1 + m], ctx[:, pos:pos + m])
            for r in range(b):
                at[r] += m
        self.reached("prefill", "retain hidden")   # 3. the last tap of each row
        return self.seal(self.retain(s, ctx[:, n - 1].copy()))

    def draft(self, pending, depth, steps, sampling):
        self._enter("draft")
        try:
            _no_round("draft", self._round_open)
            b = self.row_count()
            if b == 0:
                raise E.illegal_state("draft: the group has no rows")
            _draft_arguments(pending, depth, steps, sampling, b, self.shape.vocab)
            for r in range(b):
                if not self._warm[r]:
                    raise E.illegal_state("draft: row %d has no retained hidden (a cold row must be prefilled first, "
                                          "spec §5.7)" % r)
            _positions("draft", self._lengths, [max(1, depth) + (1 if depth > 0 else 0)] * b, self.shape,
                       "a round of depth %d and its commit" % depth)
            _forward_size("draft", b, 1, self.shape, True, "draft fewer rows at a time")
            frm = list(self._lengths)
            ids, at, samplers = [int(t) for t in pending], [int(s) for s in steps], list(sampling)

            def work():
                if depth == 0:   # the pending row only; no logits, no sampling (spec §5.7, §11.2)
                    self.reached("draft", "pending forward")
                    st, _ = self.forward(self._storage, list(frm), None, np.asarray(ids, dtype=np.int64)[:, None],
                                         None)
                    return [[] for _ in range(b)], self.seal(st)
                toks, st = self.draft_chain(self._storage, list(frm), list(ids), depth, list(at), samplers)
                return toks, self.seal(st)
            toks, nxt = self._compute("draft", work)
            proposals = self._proposals(toks, b, depth)
            self.reached("draft", "publish")
            self._publish(nxt, lengths=[f + max(1, depth) for f in frm])
            self._before, self._drafts, self._depth, self._round_open = frm, proposals, depth, True
            return [list(p) for p in proposals]
        finally:
            self._exit()

    def commit(self, accepted, context):
        self._enter("commit")
        try:
            if not self._round_open:
                raise E.illegal_state("commit: no draft round is open (spec §5.8)")
            b, d = self.row_count(), self._depth
            if accepted is None or not isinstance(accepted, (list, tuple)):
                raise E.invalid_argument("commit: accepted is null")
            if len(accepted) != b:
                raise E.invalid_argument("commit: accepted has %d entries, expected %d (one per row)"
                                         % (len(accepted), b))
            for r, a in enumerate(accepted):
                if not _is_int(a) or a < 0 or a > d:
                    raise E.invalid_argument("commit: accepted[%d] = %s outside [0, %d], the draft depth (spec §5.8); "
                                             "rows unchanged" % (r, a, d))
            width = d + 1
            ctx = _context("commit", context, b, width, self.shape.hidden,
                           "width = depth + 1 = %d verify taps" % width)
            acc = [int(a) for a in accepted]
            kept = [self._before[r] + min(acc[r] + 1, max(1, d)) for r in range(b)]
            full = [d > 0 and acc[r] == d for r in range(b)]
            nxt = self._compute("commit", lambda: self._commit_steps(acc, ctx, kept, full))
            self.reached("commit", "publish")
            self._publish(nxt, lengths=[kept[r] + (1 if full[r] else 0) for r in range(b)])
            self._before, self._drafts, self._depth, self._round_open = None, None, 0, False
        finally:
            self._exit()

    def _commit_steps(self, accepted, ctx, kept, full):
        """Commit's computation (spec §5.8) from the kept lengths."""
        b, d = len(kept), self._depth
        s = self._storage
        if any(full):   # full acceptance: the last proposal's row from the true hidden preceding it
            ids = np.asarray([self._drafts[r][d - 1] for r in range(b)], dtype=np.int64)[:, None]
            self.reached("commit", "full-acceptance forward")
            s, _ = self.forward(s, list(kept), full, ids, ctx[:, d - 1:d])
        self.reached("commit", "retain hidden")   # the true hidden at the last processed position
        return self.seal(self.retain(s, ctx[np.arange(b), accepted].copy()))

    def capture(self, row):
        self._enter("capture")
        try:
            _no_round("capture", self._round_open)
            if not _is_int(row) or row < 0 or row >= self.row_count():
                raise E.invalid_argument("capture: row %s outside [0, %d)" % (row, self.row_count()))
            if not self._warm[row]:
                raise E.illegal_state("capture: row %d has consumed no target token yet (a cold row must be "
                                      "prefilled first, spec §11.1)" % row)
            kept = self._lengths[row]
            t = self._compute("capture", lambda: self.export(self._storage, int(row), kept))
            c = self.shape
            keys = _f32(t[0], (1, c.kv_heads, kept, c.head_dim)) if kept else None
            values = _f32(t[1], (1, c.kv_heads, kept, c.head_dim)) if kept else None
            cp = Checkpoint(SCHEMA, kept + 1, kept, c.identity, keys, values, _f32(t[2], (1, 1, c.hidden)))
            cp.digest = checkpoint_digest(cp)
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
        self._lengths, self._warm, self._round_open, self._before, self._drafts = [], [], False, None, None
        self.router = []
        self.release(s)

    # ---- plumbing ---------------------------------------------------------------------------------------------

    def _computing(self, call):
        if call in ("prefill", "draft", "commit"):
            self.router = []

    def _failed(self):
        self.router = []

    def _publish(self, nxt, lengths, warm=None):
        """Plain assignments; then frees what the old storage held (a failure there poisons the group)."""
        old = self._storage
        self._storage, self._lengths = nxt, lengths
        if warm is not None:
            self._warm = warm
        self._superseded(old, nxt)

    def _proposals(self, tokens, b, depth):
        """The engine's proposals checked as [B][depth] ids in [0, V)."""
        v = self.shape.vocab
        if tokens is None or len(tokens) != b:
            raise E.MtpError(E.BACKEND_FAILURE, "draft: the backend returned %s, expected %d" % (
                "no proposals" if tokens is None else "%d rows of proposals" % len(tokens), b))
        out = []
        for r in range(b):
            row = tokens[r]
            if row is None or len(row) != depth:
                raise E.MtpError(E.BACKEND_FAILURE, "draft: the backend returned row %d with %s proposals, expected "
                                 "%d" % (r, "no" if row is None else len(row), depth))
            for t in range(depth):
                if not _is_int(row[t]) or not 0 <= row[t] < v:
                    raise E.MtpError(E.BACKEND_FAILURE, "draft: the backend proposed token %s for row %d position "
                                     "%d, outside [0, %d)" % (row[t], r, t, v))
            out.append([int(x) for x in row])
        return out

    def _restore(self, call, i, cp):
        """§6, §11.1: checks one checkpoint (RowContract.checkpoint's order) and returns its RowState."""
        where = "%s: checkpoint[%d]" % (call, i)
        bad = E.incompatible_checkpoint
        c = self.shape
        if not isinstance(cp, Checkpoint):
            raise bad("%s is not a checkpoint object" % where)
        if cp.schema != SCHEMA:
            raise bad("%s has schema '%s', expected '%s' (spec §6)" % (where, cp.schema, SCHEMA))
        if cp.model_identity != c.identity:
            raise bad("%s belongs to model %s, this group's model is %s" % (where, _abbrev(cp.model_identity),
                                                                          _abbrev(c.identity)))
        p, off = cp.processed_tokens, cp.draft_offset
        if not _is_int(p) or not _is_int(off) or p < 1 or off != p - 1:
            raise bad("%s has invalid paired alignment: draftOffset = %s with processedTokens = %s, expected "
                      "draftOffset = P − 1 (spec §6)" % (where, off, p))
        if p - 1 > c.max_positions:
            raise bad("%s has P − 1 = %d positions, more than the %d a row of this model may hold (spec §11.13)"
                      % (where, p - 1, c.max_positions))
        kv_shape = (1, c.kv_heads, p - 1, c.head_dim)
        keys = values = None
        if p == 1:
            if cp.keys is not None or cp.values is not None:
                raise bad("%s has P = 1 but carries keys/values (spec §6)" % where)
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
        return RowState(keys, values, hidden)


# ---- the checks (RowContract) ---------------------------------------------------------------------------------

def _is_int(v):
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def _abbrev(identity):
    s = str(identity)
    return s[:12] + "…" if len(s) > 12 else s


def _no_round(call, round_open):
    if round_open:
        raise E.illegal_state(call + ": a draft round is open; commit it first (spec §9.2)")


def _positions(call, held, added, shape, what):
    """INVALID_ARGUMENT when a row would hold more than shape.max_positions drafter positions after the call."""
    for b, (h, a) in enumerate(zip(held, added)):
        if h + a > shape.max_positions:
            raise E.invalid_argument("%s: row %d holds %d drafter positions; %s would bring it to %d, more than the "
                                     "%d a row may hold (spec §11.13)" % (call, b, h, what, h + a,
                                                                          shape.max_positions))


def _forward_size(call, rows, positions, shape, with_logits, advice):
    """INVALID_ARGUMENT when one forward of rows × positions tokens needs more than MAX_ELEMENTS in one array."""
    w = max(shape.widest, shape.vocab) if with_logits else shape.widest
    n = rows * positions * w
    if n > MAX_ELEMENTS:
        raise E.invalid_argument("%s: one forward of %d rows × %d positions × %d values per token needs %d elements "
                                 "in one array, more than %d (spec §11.13); %s" % (call, rows, positions, w, n,
                                                                                   MAX_ELEMENTS, advice))


def _tokens(call, t, rows, vocab):
    """tokens [B, L] (I32 or I64, L ≥ 1, ids in [0, V)) as int64 numpy."""
    if t is None:
        raise E.invalid_argument(call + ": tokens is null")
    if not isinstance(t, Tensor):
        raise E.invalid_argument("%s: tokens %s is not a valid tensor (its byte count does not match its dtype and "
                                 "shape)" % (call, _describe(t)))
    if t.dtype not in ("I32", "I64"):
        raise E.invalid_argument("%s: tokens dtype %s, expected I32 or I64" % (call, t.dtype))
    if t.rank != 2 or t.shape[0] != rows:
        raise E.invalid_argument("%s: tokens shape %s, expected [%d, L] (one row per group row, spec §5.4)"
                                 % (call, t.describe(), rows))
    n = t.shape[1]
    if n < 1:
        raise E.invalid_argument(call + ": tokens has L = 0 new positions, expected L ≥ 1 (spec §5.4)")
    if n > MAX_POSITIONS:
        raise E.invalid_argument("%s: tokens has L = %d positions, more than the %d a row may hold (spec §11.13)"
                                 % (call, n, MAX_POSITIONS))
    ids = t.array().astype(np.int64)
    bad = np.argwhere((ids < 0) | (ids >= vocab))
    if len(bad):
        b, p = (int(v) for v in bad[0])
        raise E.invalid_argument("%s: tokens[%d, %d] = %d outside the vocabulary [0, %d)" % (call, b, p, ids[b, p],
                                                                                             vocab))
    return ids


def _context(call, t, rows, width, hidden, rule):
    """context [B, width, H]: F32, F16 or BF16, the exact shape, finite values of magnitude ≤ 2^51; float64."""
    if t is None:
        raise E.invalid_argument(call + ": context is null")
    if not isinstance(t, Tensor):
        raise E.invalid_argument("%s: context %s is not a valid tensor (its byte count does not match its dtype and "
                                 "shape)" % (call, _describe(t)))
    if t.dtype not in FLOATS:
        raise E.invalid_argument("%s: context dtype %s, expected F32, F16 or BF16" % (call, t.dtype))
    if t.rank != 3 or tuple(t.shape) != (rows, width, hidden):
        raise E.invalid_argument("%s: context shape %s, expected [%d, %d, %d] (%s)" % (call, t.describe(), rows, width,
                                                                                       hidden, rule))
    if t.size > MAX_ELEMENTS:
        raise E.invalid_argument("%s: context has %d elements, more than the %d one call may pass (spec §11.13); "
                                 "split it into shorter calls" % (call, t.size, MAX_ELEMENTS))
    a = t.array().astype(np.float64)
    bad = np.argwhere(~np.isfinite(a) | (np.abs(a) > MAX_HIDDEN))
    if len(bad):
        i, j, k = (int(v) for v in bad[0])
        v = a[i, j, k]
        raise E.invalid_argument("%s: context[%d, %d, %d] (row %d, position %d) = %s%s" % (
            call, i, j, k, i, j, _jfloat(v), " is not finite" if not np.isfinite(v) else
            ", magnitude above 2^51, where the block's f32 RMSNorm sum of squares could overflow (spec §11.14)"))
    return a


def _draft_arguments(pending, depth, steps, sampling, rows, vocab):
    """pending ids, depth, steps and one valid sampler per row (RowContract.draftArguments, then RowSampler)."""
    if not isinstance(pending, (list, tuple)) or not isinstance(steps, (list, tuple)) \
            or not isinstance(sampling, (list, tuple)):
        raise E.invalid_argument("draft: pending, steps and sampling must not be null")
    if len(pending) != rows:
        raise E.invalid_argument("draft: pending has %d entries, expected %d (one per row)" % (len(pending), rows))
    for b, t in enumerate(pending):
        if not _is_int(t) or t < 0 or t >= vocab:
            raise E.invalid_argument("draft: pending[%d] = %s outside the vocabulary [0, %d)" % (b, t, vocab))
    if not _is_int(depth) or depth < 0 or depth > MAX_DEPTH:
        raise E.invalid_argument("draft: depth = %s outside [0, %d]" % (depth, MAX_DEPTH))
    if len(steps) != rows:
        raise E.invalid_argument("draft: steps has %d entries, expected %d" % (len(steps), rows))
    for b, s in enumerate(steps):
        if not _is_int(s) or s < 0:
            raise E.invalid_argument("draft: steps[%d] = %s is negative" % (b, s))
    if len(sampling) != rows:
        raise E.invalid_argument("draft: sampling has %d row samplers, expected %d" % (len(sampling), rows))
    for b, s in enumerate(sampling):
        _sampler(b, s)


def _sampler(r, s):
    """One row's sampler (api RowSampler's checks): temperature 0 or ≥ 1e-30, top_k ≥ 0, top_p in (0, 1]."""
    if not isinstance(s, RowSampler):
        raise E.invalid_argument("draft: sampling[%d] is not a sampler" % r)
    t, k, p, seed = s.temperature, s.top_k, s.top_p, s.seed
    if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t) or t < 0:
        raise E.invalid_argument("draft: sampling[%d] temperature = %s must be finite and ≥ 0" % (r, t))
    if 0 < t < MIN_TEMPERATURE:
        raise E.invalid_argument("draft: sampling[%d] temperature = %s is in (0, %s): f32(1/T) times a log-prob "
                                 "overflows and the draw would not be the argmax; use 0 for greedy (spec §7)"
                                 % (r, t, MIN_TEMPERATURE))
    if not _is_int(k) or k < 0:
        raise E.invalid_argument("draft: sampling[%d] top_k = %s must be ≥ 0 (0 disables it)" % (r, k))
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 < p <= 1:
        raise E.invalid_argument("draft: sampling[%d] top_p = %s must be in (0, 1] (1 disables it)" % (r, p))
    if not _is_int(seed) or not 0 <= seed < 1 << 64:
        raise E.invalid_argument("draft: sampling[%d] seed = %s must be an unsigned 64-bit integer" % (r, seed))


def _checked(where, name, t, shape):
    """A checkpoint tensor: present, F32/F16/BF16, the exact shape, finite (hidden: magnitude ≤ 2^51); float64."""
    if t is None:
        raise E.incompatible_checkpoint("%s has no %s tensor" % (where, name))
    if not isinstance(t, Tensor):
        raise E.incompatible_checkpoint("%s %s %s is not a valid tensor (its byte count does not match its dtype and "
                                        "shape)" % (where, name, _describe(t)))
    if t.dtype not in FLOATS:
        raise E.incompatible_checkpoint("%s %s dtype %s, expected F32, F16 or BF16" % (where, name, t.dtype))
    if tuple(t.shape) != tuple(shape):
        raise E.incompatible_checkpoint("%s %s shape %s, expected %s" % (where, name, t.describe(), list(shape)))
    a = t.array().astype(np.float64)
    flat = a.reshape(-1)
    bad = np.flatnonzero(~np.isfinite(flat))
    if len(bad):
        raise E.incompatible_checkpoint("%s %s element %d is not finite" % (where, name, int(bad[0])))
    if name == "hidden":
        huge = np.flatnonzero(np.abs(flat) > MAX_HIDDEN)
        if len(huge):
            i = int(huge[0])
            raise E.incompatible_checkpoint("%s hidden element %d = %s, magnitude above 2^51, where the block's f32 "
                                            "RMSNorm sum of squares could overflow (spec §11.14)"
                                            % (where, i, _jfloat(flat[i])))
    return a


def _f32(x, shape):
    """An exported array (or Tensor) as an F32 Tensor of `shape`."""
    if isinstance(x, Tensor):
        return x
    return Tensor.from_numpy(np.asarray(x, dtype=np.float32).reshape(shape))


def _describe(t):
    d = getattr(t, "describe", None)
    return d() if callable(d) else repr(t)


def _jfloat(v):
    """A float as Java prints one in messages (NaN, Infinity)."""
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    return repr(float(v))


# ---- serving a skeleton engine --------------------------------------------------------------------------------

LoadArgs = collections.namedtuple("LoadArgs", "directory layout identity options config")
LoadArgs.__doc__ = """`load`'s arguments exactly as the runner sent them (WIRE.md §5)."""

F32_TOLERANCE = {"name": "f32", "tokenGap": 1e-4, "kvNmse": 1e-9, "hiddenNmse": 0}


class RowsEngine:
    """An Engine over a RowsSkeleton subclass: `load(args)` returns the engine's model (args: LoadArgs, options
    already refused when not empty), `rows(model, args)` a group of no rows, to which the checkpoints of `openRows`
    are appended (all or nothing). `capabilities` adds to or replaces the defaults (greedy only, F32/F16/BF16 taps,
    64 rows, depth 64); `seededSampling=True` claims SPEC.md's seeded draw. With `load_target` and `target_rows`
    (the same for the target's loadTarget and a TargetRowsSkeleton subclass, target_rows.py) the engine claims the
    `target` capability and runs the hybrid target too (WIRE.md §5.2)."""

    def __init__(self, name, version, load, rows, description=None, numerics=None, tolerance=None, load_target=None,
                 target_rows=None, **capabilities):
        self.name, self.version = name, version
        self._load, self._rows = load, rows
        self._load_target, self._target_rows = load_target, target_rows
        self.description, self.numerics = description, numerics
        self.tolerance = tolerance or F32_TOLERANCE
        self.capabilities = {"seededSampling": False, "tapDtypes": list(FLOATS), "maxRows": 64,
                             "maxDepth": MAX_DEPTH}
        if (load_target is None) != (target_rows is None):
            raise ValueError("RowsEngine: load_target and target_rows go together")
        if target_rows is not None:
            self.capabilities["target"] = True
        self.capabilities.update(capabilities)

    def hello_result(self):
        r = {"profiles": [{"label": self.name, "options": {}, "tolerance": dict(self.tolerance)}],
             "capabilities": dict(self.capabilities)}
        if self.description:
            r["description"] = self.description
        if self.numerics:
            r["numerics"] = self.numerics
        return r

    def load(self, directory, layout, identity, options, config):
        if options:
            raise E.invalid_argument("load: unknown option(s) %s; this engine takes none"
                                     % ", ".join(sorted(map(str, options))))
        if not isinstance(directory, str):
            raise E.invalid_argument("load: directory = %r, expected a path" % (directory,))
        args = LoadArgs(directory, layout, identity, options, config)
        return _RowsModel(self._load(args), args, self._rows, self.numerics)

    def load_target(self, directory, layout, identity, options, config):
        if self._target_rows is None:
            raise E.MtpError(E.UNAVAILABLE, "loadTarget: this engine runs the drafter only (no target capability, "
                                            "WIRE.md §4)")
        if options:
            raise E.invalid_argument("loadTarget: unknown option(s) %s; this engine takes none"
                                     % ", ".join(sorted(map(str, options))))
        if not isinstance(directory, str):
            raise E.invalid_argument("loadTarget: directory = %r, expected a path" % (directory,))
        args = LoadArgs(directory, layout, identity, options, config)
        return _RowsModel(self._load_target(args), args, self._target_rows, self.numerics)


class _RowsModel:
    def __init__(self, model, args, rows, numerics):
        self.model, self.args, self.rows, self.numerics = model, args, rows, numerics

    def open_rows(self, checkpoints):
        g = self.rows(self.model, self.args)
        g.append(checkpoints)
        return g

    def close(self):
        pass


def serve_rows(name, version, load, rows, **kwargs):
    """serve(RowsEngine(name, version, load, rows, **kwargs)): the whole main of a skeleton engine."""
    from .server import serve
    return serve(RowsEngine(name, version, load, rows, **kwargs))
