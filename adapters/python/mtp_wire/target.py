"""The hybrid target over mtp-oracle-wire/1 (conformance/WIRE.md §5.2-5.3, spec §13): the handler interface an engine
implements to run its target under `mtp tck` and `mtp conform --target`, the target checkpoint (schema
qwen-target-v1) and its content digest, and the dispatch of the target ops. An engine claims the `target` capability
in its hello result and gives its Engine a `load_target` method returning a `TargetModel`."""

import hashlib
import struct

from . import errors as E

TARGET_SCHEMA = "qwen-target-v1"
TARGET_DIGEST_MAGIC = b"mtp-oracle-target-checkpoint-digest/1"
TARGET_OPS = ("loadTarget", "targetUnload", "targetOpenRows", "targetAppend", "targetFilterRows", "targetPrefill",
              "targetVerify", "targetCommit", "targetCapture", "targetProcessed", "targetClose")


class TargetCheckpoint:
    """One row's committed target state, schema qwen-target-v1 (WIRE.md §5.3): every tensor F32 in the reference's
    orientation: conv_windows [nGDN, conv_dim, K-1], recurrent_states [nGDN, Hv, Dk, Dv], keys/values
    [nFull, nKV, P, D]; None for a kind of layer the target lacks. In requests the fields hold exactly what the
    runner sent (the handler validates, digest last); a captured one may leave `digest` None: the SDK fills it in."""

    __slots__ = ("schema", "processed_tokens", "model_identity", "conv_windows", "recurrent_states", "keys",
                 "values", "digest")

    def __init__(self, schema, processed_tokens, model_identity, conv_windows, recurrent_states, keys, values,
                 digest=None):
        self.schema = schema
        self.processed_tokens = processed_tokens
        self.model_identity = model_identity
        self.conv_windows = conv_windows
        self.recurrent_states = recurrent_states
        self.keys = keys
        self.values = values
        self.digest = digest

    def __repr__(self):
        return "TargetCheckpoint(%s, P=%s)" % (self.schema, self.processed_tokens)


def target_checkpoint_digest(cp):
    """WIRE.md §5.3: lowercase hex SHA-256 over the magic, the schema, P (8 bytes), the identity, then the four
    tensors (0 when absent, else 1, dtype name, rank (4 bytes), dims (8 bytes each), byte count (8 bytes), bytes);
    strings are a 4-byte UTF-8 length and the bytes; integers little-endian."""
    h = hashlib.sha256(TARGET_DIGEST_MAGIC)

    def text(s):
        b = s.encode("utf-8")
        h.update(struct.pack("<I", len(b)))
        h.update(b)
    text(cp.schema)
    h.update(struct.pack("<q", cp.processed_tokens))
    text(cp.model_identity)
    for t in (cp.conv_windows, cp.recurrent_states, cp.keys, cp.values):
        if t is None:
            h.update(b"\x00")
            continue
        h.update(b"\x01")
        text(t.dtype)
        h.update(struct.pack("<I", len(t.shape)))
        for d in t.shape:
            h.update(struct.pack("<q", d))
        data = bytes(t.data) if isinstance(t.data, memoryview) else t.data
        h.update(struct.pack("<q", len(data)))
        h.update(data)
    return h.hexdigest()


class TargetModel:
    """A loaded target (Java `LoadedTarget`)."""
    numerics = None

    def open_rows(self, checkpoints):
        """checkpoints: list of TargetCheckpoint or None (empty row); all or nothing. Returns a TargetRows."""
        raise NotImplementedError

    def close(self):
        pass


class TargetRows:
    """One group of target rows (spec §13.3, Java `TargetRows`). Every method validates first, in the order of
    WIRE.md §5.2, and raises MtpError; a failure leaves the rows unchanged (raise with poisoned=True when it cannot).
    prefill/verify return (logits, pre_norm, post_norm) as Tensor objects (F32)."""

    def processed_tokens(self):
        raise NotImplementedError

    def append(self, checkpoints):
        raise NotImplementedError

    def filter_rows(self, keep):
        raise NotImplementedError

    def prefill(self, tokens):
        raise NotImplementedError

    def verify(self, tokens):
        raise NotImplementedError

    def commit(self, accepted):
        raise NotImplementedError

    def capture(self, row):
        """Returns a TargetCheckpoint whose tensors are Tensor objects."""
        raise NotImplementedError

    def close(self):
        raise NotImplementedError

    def router_choices(self):
        """Optional (a MoE target whose hello claims `targetRouterChoices`, WIRE.md §4, §5.2; spec §12.5): the experts
        its routers chose in the last successful prefill or verify, one `(row, position, layer, [expert, …])` per
        (row, token, MoE layer) the call computed, in the order computed: the contract row, the token's position in
        its row (its RoPE position: P, P+1, … for a row that had processed P tokens), the decoder layer index
        (0-based) and the experts in slot order (descending probability, ties to the lower index, spec §12.3). A
        commit computes nothing and reports nothing. None (the default) or an empty list sends nothing."""
        return None


def _checkpoint_in(cp):
    if cp is None or not isinstance(cp, dict):
        return cp
    return TargetCheckpoint(cp.get("schema"), cp.get("processedTokens"), cp.get("modelIdentity"),
                            cp.get("convWindows"), cp.get("recurrentStates"), cp.get("keys"), cp.get("values"),
                            cp.get("digest"))


def _checkpoints_in(lst):
    if lst is None or not isinstance(lst, list):
        return lst
    return [_checkpoint_in(cp) for cp in lst]


def _checkpoint_out(cp, tensors):
    def ref(t):
        if t is None:
            return None
        tensors.append(t)
        return {"tensor": len(tensors) - 1}
    digest = cp.digest if cp.digest is not None else target_checkpoint_digest(cp)
    return {"schema": cp.schema, "processedTokens": int(cp.processed_tokens), "modelIdentity": cp.model_identity,
            "convWindows": ref(cp.conv_windows), "recurrentStates": ref(cp.recurrent_states),
            "keys": ref(cp.keys), "values": ref(cp.values), "digest": digest}


class _State:
    """The server's target tables (kept apart from the drafter's)."""

    def __init__(self):
        self.models = {}
        self.groups = {}
        self.model_of = {}
        self.poisoned = {}
        self.closed = set()


def dispatch_target(server, op, a):
    """One target op (WIRE.md §5.2) on `server` (mtp_wire.server.Server): (result, tensors)."""
    st = getattr(server, "_target", None)
    if st is None:
        st = server._target = _State()
    if op == "loadTarget":
        load = getattr(server.engine, "load_target", None)
        if load is None:
            raise E.MtpError(E.UNAVAILABLE, "loadTarget: this engine runs the drafter only (no target capability, "
                                            "WIRE.md §4)")
        model = server._guard(op, None, lambda: load(a.get("directory"), a.get("layout"), a.get("identity"),
                                                     a.get("options") or {}, a.get("config")))
        m = server._handle()
        st.models[m] = model
        r = {"model": m}
        if getattr(model, "numerics", None):
            r["numerics"] = model.numerics
        return r, ()
    if op == "targetUnload":
        model = st.models.pop(a.get("model"), None)
        if model is None:
            raise E.invalid_argument("targetUnload: unknown target %r" % a.get("model"))
        server._guard(op, None, model.close)
        return {}, ()
    if op == "targetOpenRows":
        model = st.models.get(a.get("model"))
        if model is None:
            raise E.invalid_argument("targetOpenRows: unknown target %r" % a.get("model"))
        rows = server._guard(op, None, lambda: model.open_rows(_checkpoints_in(a.get("checkpoints"))))
        g = server._handle()
        st.groups[g] = rows
        st.model_of[g] = a.get("model")
        return {"group": g}, ()
    g = a.get("group")
    if g not in st.groups:
        raise E.invalid_argument("%s: unknown target group %r" % (op, g))
    rows = st.groups[g]
    if g not in st.closed and op != "targetClose":
        if g in st.poisoned:
            raise E.illegal_state("%s: the group is poisoned by an earlier failure (%s); discard it and open a new "
                                  "one (spec §9.2)" % (op, st.poisoned[g]))
        if st.model_of.get(g) not in st.models and op != "targetProcessed":
            raise E.illegal_state("%s: the target this group was opened from is closed; a group cannot outlive its "
                                  "target (spec §11.11)" % op)

    def guard(fn):
        try:
            return server._guard(op, g, fn)
        finally:
            if g in server.poisoned:   # the SDK's guard records poisoning in the drafter table; move it here
                st.poisoned[g] = server.poisoned.pop(g)

    if op == "targetAppend":
        guard(lambda: rows.append(_checkpoints_in(a.get("checkpoints"))))
    elif op == "targetFilterRows":
        guard(lambda: rows.filter_rows(a.get("keep")))
    elif op in ("targetPrefill", "targetVerify"):
        fn = rows.prefill if op == "targetPrefill" else rows.verify
        logits, pre, post = guard(lambda: fn(a.get("tokens")))
        result = {"logits": {"tensor": 0}, "preNorm": {"tensor": 1}, "postNorm": {"tensor": 2}}
        # the call has run: a malformed list fails it as BACKEND_FAILURE and poisons the group, like the drafter's
        from .server import _experts_out   # here: server imports this module
        choices = getattr(rows, "router_choices", None)
        experts = guard(lambda: _experts_out(op, choices(), ("row", "position", "layer"))) if choices else None
        if experts:
            result["experts"] = experts
        return result, [logits, pre, post]
    elif op == "targetCommit":
        guard(lambda: rows.commit(a.get("accepted")))
    elif op == "targetCapture":
        cp = guard(lambda: rows.capture(a.get("row")))
        tensors = []
        return {"checkpoint": _checkpoint_out(cp, tensors)}, tensors
    elif op == "targetProcessed":
        return {"processed": [int(p) for p in guard(rows.processed_tokens)]}, ()
    elif op == "targetClose":
        server._guard(op, None, rows.close)
        st.poisoned.pop(g, None)
        st.closed.add(g)
    return {}, ()
