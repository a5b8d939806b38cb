"""The server loop of mtp-oracle-wire/1 (conformance/WIRE.md): frames on stdin/stdout, one request at a time,
dispatched to an engine's handler objects. The engine author writes only the handler (see `Engine`, `DraftModel`,
`DraftRows` below); this module owns framing, handles, tensor decoding, error replies and poisoning."""

import hashlib
import json
import operator
import struct
import sys
import traceback

from . import errors as E
from .target import TARGET_OPS, dispatch_target
from .tensor import Tensor

PROTOCOL = "mtp-oracle-wire/1"
MAX_HEADER = 16 << 20


# ----------------------------------------------------------------------------------------------------------------
# the handler interface, mirroring org.mtporacle.api (MtpBackend, DraftModel, DraftRows, RowCheckpoint, RowSampler)

class Checkpoint:
    """One row's committed drafter state, schema qwen-mtp-v1 (spec §6). In requests the fields hold exactly what the
    runner sent (a malformed checkpoint has wrong values, None for absent fields, or non-Tensor tensors); the
    handler validates. keys/values [1, nKV, P-1, D] (None when P == 1), hidden [1, 1, H]. `digest` is the content
    digest the runner sent (None when it sent none); a handler restoring a checkpoint compares it with
    `checkpoint_digest(cp)` (spec §6). A checkpoint a handler captures may leave it None: the server fills it in."""

    __slots__ = ("schema", "processed_tokens", "draft_offset", "model_identity", "keys", "values", "hidden", "digest")

    def __init__(self, schema, processed_tokens, draft_offset, model_identity, keys, values, hidden, digest=None):
        self.schema = schema
        self.processed_tokens = processed_tokens
        self.draft_offset = draft_offset
        self.model_identity = model_identity
        self.keys = keys
        self.values = values
        self.hidden = hidden
        self.digest = digest

    def __repr__(self):
        return "Checkpoint(%s, P=%s, draftOffset=%s)" % (self.schema, self.processed_tokens, self.draft_offset)


DIGEST_MAGIC = b"mtp-oracle-checkpoint-digest/1"


def checkpoint_digest(cp):
    """The content digest of a checkpoint (spec §6, "Content digest"), lowercase hex SHA-256 over: the magic bytes;
    the schema; P and draftOffset as 8-byte little-endian two's complement; the model identity; then for keys, values
    and hidden a byte 0 when absent, else 1, the dtype name, the rank (4 bytes), each dimension (8 bytes), the byte
    count (8 bytes) and the bytes. Strings are a 4-byte UTF-8 length and the bytes; all integers little-endian. Call it
    on a checkpoint whose fields have the right types (after checking schema, identity, alignment and tensors)."""
    h = hashlib.sha256(DIGEST_MAGIC)

    def text(s):
        b = s.encode("utf-8")
        h.update(struct.pack("<I", len(b)))
        h.update(b)
    text(cp.schema)
    h.update(struct.pack("<qq", cp.processed_tokens, cp.draft_offset))
    text(cp.model_identity)
    for t in (cp.keys, cp.values, cp.hidden):
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


class RowSampler:
    """One request's draft sampler (spec §7): greedy when temperature == 0; else top-p, top-k, temperature and the
    categorical draw of SPEC.md keyed by (seed, step). seed is an unsigned 64-bit int (or what the runner sent)."""

    __slots__ = ("temperature", "top_k", "top_p", "seed")

    def __init__(self, temperature, top_k, top_p, seed):
        self.temperature = temperature
        self.top_k = top_k
        self.top_p = top_p
        self.seed = seed

    def is_greedy(self):
        return self.temperature == 0


class Engine:
    """Override `hello_result` (what the engine claims) and `load`."""

    name = "unnamed-engine"
    version = "0"

    def hello_result(self):
        """description, numerics, profiles, capabilities (WIRE.md §4); protocol and engine are filled in."""
        return {"profiles": [{"label": self.name, "options": {},
                              "tolerance": {"name": "f32", "tokenGap": 1e-4, "kvNmse": 1e-9, "hiddenNmse": 0}}],
                "capabilities": {}}

    def load(self, directory, layout, identity, options, config):
        """Returns a DraftModel. Unknown option keys: raise MtpError(INVALID_ARGUMENT)."""
        raise E.MtpError(E.UNAVAILABLE, "load: not implemented by this engine")


class DraftModel:
    numerics = None

    def open_rows(self, checkpoints):
        """checkpoints: list of Checkpoint or None (cold row); all or nothing. Returns a DraftRows."""
        raise NotImplementedError

    def close(self):
        pass


class DraftRows:
    """One group of rows (spec §5). Every method validates first and raises MtpError; a failure leaves the rows
    unchanged (raise with poisoned=True when it cannot)."""

    def row_count(self):
        raise NotImplementedError

    def append(self, checkpoints):
        raise NotImplementedError

    def filter_rows(self, keep):
        raise NotImplementedError

    def prefill(self, tokens, context):
        raise NotImplementedError

    def draft(self, pending, depth, steps, sampling):
        """Returns B lists of `depth` token ids."""
        raise NotImplementedError

    def commit(self, accepted, context):
        raise NotImplementedError

    def capture(self, row):
        """Returns a Checkpoint whose tensors are Tensor objects."""
        raise NotImplementedError

    def close(self):
        raise NotImplementedError

    def router_choices(self):
        """Optional (a MoE engine whose hello claims `routerChoices`, WIRE.md §4-5, spec §12.5): the experts its router
        chose in the last successful prefill, draft or commit, one `(row, position, [expert, …])` per MoE forward row
        (position: the KV position the row wrote; experts in slot order, descending probability). None (the
        default) or an empty list sends nothing."""
        return None


# ----------------------------------------------------------------------------------------------------------------
# framing

class ProtocolError(Exception):
    pass


def read_frame(inp):
    """(header dict, list of Tensor) or None at end of input."""
    line = inp.readline(MAX_HEADER + 1)
    if not line:
        return None
    if not line.endswith(b"\n"):
        raise ProtocolError("header longer than 16 MiB or truncated")
    header = json.loads(line)
    if not isinstance(header, dict):
        raise ProtocolError("header is not a JSON object")
    tensors = []
    for i, d in enumerate(header.get("tensors") or []):
        dtype, shape, nbytes = d.get("dtype"), d.get("shape"), d.get("nbytes")
        buf = bytearray(nbytes)
        view = memoryview(buf)
        got = 0
        while got < nbytes:
            n = inp.readinto(view[got:])
            if not n:
                raise ProtocolError("payload truncated: tensor %d has %d of %d bytes" % (i, got, nbytes))
            got += n
        tensors.append(_tensor_or_raw(dtype, shape, buf))
    return header, tensors


class RawTensor:
    """A payload whose descriptor names no valid dtype/shape combination (kept so the handler can refuse it)."""

    def __init__(self, dtype, shape, data):
        self.dtype, self.shape, self.data = dtype, tuple(shape or ()), data
        self.rank = len(self.shape)

    def describe(self):
        return "%s %s" % (self.dtype, list(self.shape))


def _tensor_or_raw(dtype, shape, buf):
    try:
        return Tensor(dtype, shape, buf)
    except (ValueError, TypeError):
        return RawTensor(dtype, shape or (), buf)


def _resolve(value, tensors):
    """Replaces every {"tensor": i} by the decoded tensor."""
    if isinstance(value, dict):
        if len(value) == 1 and "tensor" in value and isinstance(value["tensor"], int):
            return tensors[value["tensor"]]
        return {k: _resolve(v, tensors) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolve(v, tensors) for v in value]
    return value


def write_frame(out, header, tensors=()):
    descs = []
    for t in tensors:
        descs.append({"dtype": t.dtype, "shape": list(t.shape), "nbytes": t.nbytes})
    if descs:
        header["tensors"] = descs
    line = json.dumps(header, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")
    out.write(line + b"\n")
    for t in tensors:
        out.write(t.data)
    out.flush()


# ----------------------------------------------------------------------------------------------------------------
# decoding arguments and encoding results

def _checkpoint_in(cp):
    if cp is None or not isinstance(cp, dict):
        return cp
    return Checkpoint(cp.get("schema"), cp.get("processedTokens"), cp.get("draftOffset"), cp.get("modelIdentity"),
                      cp.get("keys"), cp.get("values"), cp.get("hidden"), cp.get("digest"))


def _checkpoints_in(lst):
    if lst is None or not isinstance(lst, list):
        return lst
    return [_checkpoint_in(cp) for cp in lst]


def _sampler_in(s):
    if not isinstance(s, dict):
        return s
    seed = s.get("seed")
    if isinstance(seed, str):
        try:
            seed = int(seed, 10)
        except ValueError:
            pass
    return RowSampler(s.get("temperature"), s.get("topK"), s.get("topP"), seed)


def _checkpoint_out(cp, tensors):
    def ref(t):
        if t is None:
            return None
        tensors.append(t)
        return {"tensor": len(tensors) - 1}
    digest = cp.digest if cp.digest is not None else checkpoint_digest(cp)
    return {"schema": cp.schema, "processedTokens": int(cp.processed_tokens), "draftOffset": int(cp.draft_offset),
            "modelIdentity": cp.model_identity, "keys": ref(cp.keys), "values": ref(cp.values),
            "hidden": ref(cp.hidden), "digest": digest}


# ----------------------------------------------------------------------------------------------------------------
# the loop

class Server:
    def __init__(self, engine, inp, out, log):
        self.engine = engine
        self.inp, self.out, self.log = inp, out, log
        self.models = {}
        self.groups = {}
        self.poisoned = {}      # group -> reason, for groups whose handler raised something unexpected
        self.model_of = {}      # group -> the model handle it was opened from
        self.closed = set()     # groups closed (their handler answers for them)
        self.next_handle = 1

    def _handle(self):
        h = self.next_handle
        self.next_handle += 1
        return h

    def run(self):
        while True:
            try:
                frame = read_frame(self.inp)
            except (ProtocolError, ValueError, TypeError, AttributeError) as e:
                self.log.write("mtp_wire: unreadable request: %s\n" % e)
                self.log.flush()
                return 2
            if frame is None:
                return 0
            header, tensors = frame
            rid, op = header.get("id"), header.get("op")
            args = header.get("args") or {}
            try:
                args = _resolve(args, tensors)
                result, out_tensors = self.dispatch(op, args)
                write_frame(self.out, {"id": rid, "ok": True, "result": result}, out_tensors)
            except E.MtpError as e:
                write_frame(self.out, {"id": rid, "ok": False, "error": {
                    "kind": e.kind, "message": _one_line(e.message), "poisoned": e.poisoned}})
            except Exception as e:  # noqa: BLE001 - a malformed request or result: answer, log, keep serving
                traceback.print_exc(file=self.log)
                self.log.flush()
                write_frame(self.out, {"id": rid, "ok": False, "error": {
                    "kind": E.BACKEND_FAILURE, "message": _one_line("%s: %s: %s" % (op, type(e).__name__, e)),
                    "poisoned": False}})
            if op == "shutdown":
                return 0

    def _group(self, op, args):
        """The group's handler, after the checks the SDK makes for every engine, in the contract's order: a closed
        group is the handler's to refuse; then poisoned; then a group whose model was unloaded (spec §11.11)."""
        g = args.get("group")
        if g not in self.groups:
            raise E.invalid_argument("%s: unknown group %r" % (op, g))
        if g not in self.closed and op != "close":
            if g in self.poisoned:
                raise E.illegal_state("%s: the group is poisoned by an earlier failure (%s); discard it and open a "
                                      "new one (spec §9.2)" % (op, self.poisoned[g]))
            if self.model_of.get(g) not in self.models and op != "rowCount":
                raise E.illegal_state("%s: the model this group was opened from is closed; a group cannot outlive "
                                      "its model (spec §11.11)" % op)
        return g, self.groups[g]

    def _guard(self, op, g, fn):
        """Runs a handler call; an unexpected exception poisons the group (its state is unknown)."""
        try:
            return fn()
        except E.MtpError as e:
            if e.poisoned and g is not None:
                self.poisoned[g] = "a failed %s" % op
            raise
        except Exception as e:  # noqa: BLE001 - anything else is the engine's own failure
            traceback.print_exc(file=self.log)
            self.log.flush()
            if g is not None:
                self.poisoned[g] = "a failed %s: %s" % (op, type(e).__name__)
            raise E.MtpError(E.BACKEND_FAILURE, "%s: %s: %s" % (op, type(e).__name__, e), poisoned=g is not None)

    def _experts(self, op, g, rows, result):
        """Adds the handler's router choices of the call just made as `experts` (WIRE.md §5). The call has already
        run, so a malformed list fails it as BACKEND_FAILURE and poisons the group, like any handler failure."""
        choices = self._guard(op, g, lambda: _experts_out(op, rows.router_choices()))
        if choices:
            result["experts"] = choices
        return result

    def dispatch(self, op, a):
        if op == "hello":
            offered = a.get("protocols") or []
            if PROTOCOL not in offered:
                raise E.MtpError(E.UNAVAILABLE, "hello: this engine speaks %s; the runner offers %s"
                                 % (PROTOCOL, ", ".join(map(str, offered)) or "nothing"))
            r = dict(self.engine.hello_result())
            r["protocol"] = PROTOCOL
            r["engine"] = {"name": self.engine.name, "version": self.engine.version}
            return r, ()
        if op == "ping" or op == "shutdown":
            return {}, ()
        if op == "load":
            model = self._guard("load", None, lambda: self.engine.load(
                a.get("directory"), a.get("layout"), a.get("identity"), a.get("options") or {}, a.get("config")))
            m = self._handle()
            self.models[m] = model
            r = {"model": m}
            if getattr(model, "numerics", None):
                r["numerics"] = model.numerics
            return r, ()
        if op == "unload":
            model = self.models.pop(a.get("model"), None)
            if model is None:
                raise E.invalid_argument("unload: unknown model %r" % a.get("model"))
            self._guard("unload", None, model.close)
            return {}, ()
        if op == "openRows":
            model = self.models.get(a.get("model"))
            if model is None:
                raise E.invalid_argument("openRows: unknown model %r" % a.get("model"))
            rows = self._guard("openRows", None, lambda: model.open_rows(_checkpoints_in(a.get("checkpoints"))))
            g = self._handle()
            self.groups[g] = rows
            self.model_of[g] = a.get("model")
            return {"group": g}, ()
        if op in ("append", "filterRows", "prefill", "draft", "commit", "capture", "rowCount", "close"):
            g, rows = self._group(op, a)
            if op == "append":
                self._guard(op, g, lambda: rows.append(_checkpoints_in(a.get("checkpoints"))))
            elif op == "filterRows":
                self._guard(op, g, lambda: rows.filter_rows(a.get("keep")))
            elif op == "prefill":
                self._guard(op, g, lambda: rows.prefill(a.get("tokens"), a.get("context")))
                return self._experts(op, g, rows, {}), ()
            elif op == "draft":
                sampling = a.get("sampling")
                if isinstance(sampling, list):
                    sampling = [_sampler_in(s) for s in sampling]
                proposals = self._guard(op, g, lambda: rows.draft(a.get("pending"), a.get("depth"), a.get("steps"),
                                                                  sampling))
                return self._experts(op, g, rows, {"proposals": [[int(t) for t in p] for p in proposals]}), ()
            elif op == "commit":
                self._guard(op, g, lambda: rows.commit(a.get("accepted"), a.get("context")))
                return self._experts(op, g, rows, {}), ()
            elif op == "capture":
                cp = self._guard(op, g, lambda: rows.capture(a.get("row")))
                tensors = []
                return {"checkpoint": _checkpoint_out(cp, tensors)}, tensors
            elif op == "rowCount":
                return {"rows": int(self._guard(op, g, rows.row_count))}, ()
            elif op == "close":
                self._guard(op, None, rows.close)
                self.poisoned.pop(g, None)
                self.closed.add(g)
            return {}, ()
        if op in TARGET_OPS:   # WIRE.md §5.2, the target capability
            return dispatch_target(self, op, a)
        raise E.MtpError(E.UNAVAILABLE, "%s: unknown op (this engine speaks %s)" % (op, PROTOCOL))


def _experts_out(op, choices, keys=("row", "position")):
    """`[[row, position, e_0, ...], ...]` from the handler's (row, position, experts) triples, checked: row and
    position integers in [0, 2^31), at least one expert, each a 32-bit integer (WIRE.md §5). The target's entries
    (WIRE.md §5.2) carry a third key, `keys` = ("row", "position", "layer"): (row, position, layer, experts)."""
    if not choices:
        return []
    out = []
    shape = "(%s, experts)" % ", ".join(keys)
    for i, c in enumerate(choices):
        try:
            *head, experts = c
            experts = list(experts)
        except (TypeError, ValueError):
            raise TypeError("%s: router_choices()[%d] is not %s" % (op, i, shape)) from None
        if len(head) != len(keys):
            raise TypeError("%s: router_choices()[%d] is not %s" % (op, i, shape))
        ints = [_integer(v, 0, 2 ** 31) for v in head]
        if None in ints:
            raise ValueError("%s: router_choices()[%d] has %s, expected integers in [0, 2^31)"
                             % (op, i, " and ".join("%s %r" % kv for kv in zip(keys, head))))
        if not experts:
            raise ValueError("%s: router_choices()[%d] lists no experts" % (op, i))
        ids = [_integer(e, -2 ** 31, 2 ** 31) for e in experts]
        if None in ids:
            raise ValueError("%s: router_choices()[%d] has an expert that is not a 32-bit integer: %r"
                             % (op, i, experts[ids.index(None)]))
        out.append(ints + ids)
    return out


def _integer(v, lo, hi):
    """v as an int when it is an integer (Python or numpy, not bool) in [lo, hi), else None."""
    if isinstance(v, bool):
        return None
    try:
        x = operator.index(v)
    except TypeError:
        return None
    return x if lo <= x < hi else None


def _one_line(s):
    return " ".join(str(s).splitlines())


def serve(engine, inp=None, out=None):
    """Serves `engine` on stdin/stdout until end of input or `shutdown`; returns the exit status. Python's own
    sys.stdout is redirected to stderr first, so a stray print cannot break the framing."""
    if out is None:
        out = sys.stdout.buffer
        sys.stdout = sys.stderr
    if inp is None:
        inp = sys.stdin.buffer
    return Server(engine, inp, out, sys.stderr).run()
