// mtp_wire for TypeScript: write an MTP engine and have the MTP Oracle kit (mtp tck, mtp conform, mtp replay) drive
// it over mtp-oracle-wire/1 (conformance/WIRE.md). Runs on Node 20 and Bun; no dependencies.
//
// The engine author implements Engine (hello, load), DraftModel (openRows) and DraftRows (the contract calls) and
// calls serve(engine). The SDK owns framing, the handshake, handles, tensor decoding, error replies and poisoning of
// a group whose handler threw something other than an MtpError.
import { createHash } from "node:crypto";
import { TARGET_OPS, TargetDispatch } from "./target.js";
export * from "./target.js";
export const PROTOCOL = "mtp-oracle-wire/1";
export const KINDS = [
    "INVALID_ARGUMENT", "ILLEGAL_STATE", "INCOMPATIBLE_CHECKPOINT", "INCOMPATIBLE_MODEL", "MALFORMED_FILE",
    "UNAVAILABLE", "BACKEND_FAILURE",
];
/** A contract failure: a kind, a one-line message `call: what is wrong, actual vs expected`, and poisoning. */
export class MtpError extends Error {
    kind;
    poisoned;
    constructor(kind, message, poisoned = false) {
        super(message);
        this.kind = kind;
        this.poisoned = poisoned;
    }
}
export const invalidArgument = (m) => new MtpError("INVALID_ARGUMENT", m);
export const illegalState = (m) => new MtpError("ILLEGAL_STATE", m);
export const incompatibleCheckpoint = (m) => new MtpError("INCOMPATIBLE_CHECKPOINT", m);
export const SIZES = {
    F64: 8, F32: 4, F16: 2, BF16: 2, I64: 8, I32: 4, I16: 2, I8: 1, U32: 4, U16: 2, U8: 1, BOOL: 1,
};
function f16ToF32(h) {
    const s = h & 0x8000 ? -1 : 1;
    const e = (h >> 10) & 0x1f;
    const f = h & 0x3ff;
    if (e === 0)
        return s * f * 2 ** -24;
    if (e === 31)
        return f ? NaN : s * Infinity;
    return s * (1 + f / 1024) * 2 ** (e - 15);
}
/** A tensor as it crossed the wire: dtype, shape, little-endian row-major bytes. `valid` is false when the
 * descriptor's nbytes did not match its dtype and shape (the handler should refuse it). */
export class Tensor {
    dtype;
    shape;
    data;
    valid;
    constructor(dtype, shape, data) {
        this.dtype = dtype;
        this.shape = shape;
        this.data = data;
        this.valid = dtype in SIZES && shape.every((s) => Number.isInteger(s) && s >= 0)
            && data.byteLength === shape.reduce((a, b) => a * b, 1) * SIZES[dtype];
    }
    get rank() {
        return this.shape.length;
    }
    get size() {
        return this.shape.reduce((a, b) => a * b, 1);
    }
    describe() {
        return `${this.dtype}[${this.shape.join(", ")}]`;
    }
    view() {
        return new DataView(this.data.buffer, this.data.byteOffset, this.data.byteLength);
    }
    /** Floats widened exactly to float64 (F32, F16, BF16, F64). */
    floats() {
        const v = this.view();
        const n = this.size;
        const out = new Float64Array(n);
        for (let i = 0; i < n; i++) {
            switch (this.dtype) {
                case "F64":
                    out[i] = v.getFloat64(8 * i, true);
                    break;
                case "F32":
                    out[i] = v.getFloat32(4 * i, true);
                    break;
                case "F16":
                    out[i] = f16ToF32(v.getUint16(2 * i, true));
                    break;
                case "BF16": {
                    const b = new DataView(new ArrayBuffer(4));
                    b.setUint32(0, v.getUint16(2 * i, true) << 16, true);
                    out[i] = b.getFloat32(0, true);
                    break;
                }
                default: throw new Error(`tensor: ${this.dtype} is not a float dtype`);
            }
        }
        return out;
    }
    /** Integers as bigint (I64 exactly, I32 and narrower widened). */
    ints() {
        const v = this.view();
        const out = [];
        for (let i = 0; i < this.size; i++) {
            switch (this.dtype) {
                case "I64":
                    out.push(v.getBigInt64(8 * i, true));
                    break;
                case "I32":
                    out.push(BigInt(v.getInt32(4 * i, true)));
                    break;
                case "I16":
                    out.push(BigInt(v.getInt16(2 * i, true)));
                    break;
                case "I8":
                    out.push(BigInt(v.getInt8(i)));
                    break;
                case "U32":
                    out.push(BigInt(v.getUint32(4 * i, true)));
                    break;
                case "U16":
                    out.push(BigInt(v.getUint16(2 * i, true)));
                    break;
                case "U8":
                    out.push(BigInt(v.getUint8(i)));
                    break;
                default: throw new Error(`tensor: ${this.dtype} is not an integer dtype`);
            }
        }
        return out;
    }
    static f32(values, shape) {
        const a = Float32Array.from(values);
        return new Tensor("F32", shape, new Uint8Array(a.buffer));
    }
    static i32(values, shape) {
        const a = Int32Array.from(values);
        return new Tensor("I32", shape, new Uint8Array(a.buffer));
    }
}
const DIGEST_MAGIC = "mtp-oracle-checkpoint-digest/1";
/** The content digest of a checkpoint (spec §6, "Content digest"): lowercase hex SHA-256 over the magic bytes; the
 * schema; P and draftOffset as 8-byte little-endian two's complement; the model identity; then for keys, values and
 * hidden a byte 0 when absent, else 1, the dtype name, the rank (4 bytes), each dimension (8 bytes), the byte count
 * (8 bytes) and the bytes. Strings are a 4-byte UTF-8 length and the bytes; all integers little-endian. Call it on a
 * checkpoint whose fields have the right types (after checking schema, identity, alignment and tensors). */
export function checkpointDigest(cp) {
    const h = createHash("sha256");
    const enc = new TextEncoder();
    const u32 = (n) => { const b = new Uint8Array(4); new DataView(b.buffer).setUint32(0, n, true); return b; };
    const i64 = (n) => {
        const b = new Uint8Array(8);
        new DataView(b.buffer).setBigInt64(0, BigInt(n), true);
        return b;
    };
    const text = (s) => { const b = enc.encode(s); h.update(u32(b.length)); h.update(b); };
    h.update(enc.encode(DIGEST_MAGIC));
    text(cp.schema);
    h.update(i64(cp.processedTokens));
    h.update(i64(cp.draftOffset));
    text(cp.modelIdentity);
    for (const t of [cp.keys, cp.values, cp.hidden]) {
        if (t === null) {
            h.update(Uint8Array.of(0));
            continue;
        }
        h.update(Uint8Array.of(1));
        text(t.dtype);
        h.update(u32(t.shape.length));
        for (const d of t.shape)
            h.update(i64(d));
        h.update(i64(t.data.byteLength));
        h.update(t.data);
    }
    return h.digest("hex");
}
/** Reads frames from a byte stream: a JSON header line, then the payload bytes its `tensors` list. */
class FrameReader {
    chunks = [];
    length = 0;
    push(chunk) {
        this.chunks.push(chunk);
        this.length += chunk.byteLength;
    }
    concat() {
        if (this.chunks.length === 1)
            return this.chunks[0];
        const all = new Uint8Array(this.length);
        let at = 0;
        for (const c of this.chunks) {
            all.set(c, at);
            at += c.byteLength;
        }
        this.chunks = [all];
        return all;
    }
    next() {
        if (this.length === 0)
            return null;
        const buf = this.concat();
        const nl = buf.indexOf(10);
        if (nl < 0)
            return null;
        const header = JSON.parse(new TextDecoder().decode(buf.subarray(0, nl)));
        const descs = header.tensors ?? [];
        const total = descs.reduce((a, d) => a + d.nbytes, 0);
        if (buf.byteLength < nl + 1 + total)
            return null;
        const tensors = [];
        let at = nl + 1;
        for (const d of descs) {
            tensors.push(new Tensor(d.dtype, d.shape ?? [], buf.slice(at, at + d.nbytes)));
            at += d.nbytes;
        }
        const rest = buf.subarray(at);
        this.chunks = rest.byteLength ? [rest.slice()] : [];
        this.length = rest.byteLength;
        return { header, tensors };
    }
}
function resolve(value, tensors) {
    if (Array.isArray(value))
        return value.map((v) => resolve(v, tensors));
    if (value !== null && typeof value === "object") {
        const o = value;
        const keys = Object.keys(o);
        if (keys.length === 1 && keys[0] === "tensor" && Number.isInteger(o.tensor))
            return tensors[o.tensor];
        const out = {};
        for (const k of keys)
            out[k] = resolve(o[k], tensors);
        return out;
    }
    return value;
}
function encode(header, tensors) {
    if (tensors.length) {
        header.tensors = tensors.map((t) => ({ dtype: t.dtype, shape: t.shape, nbytes: t.data.byteLength }));
    }
    const line = new TextEncoder().encode(JSON.stringify(header) + "\n");
    const total = line.byteLength + tensors.reduce((a, t) => a + t.data.byteLength, 0);
    const out = new Uint8Array(total);
    out.set(line, 0);
    let at = line.byteLength;
    for (const t of tensors) {
        out.set(t.data, at);
        at += t.data.byteLength;
    }
    return out;
}
const INT32_MAX = 2 ** 31 - 1;
const isInt32 = (x) => Number.isInteger(x) && x >= -INT32_MAX - 1
    && x <= INT32_MAX;
/** A handler's router choices as WIRE.md §5's `experts`, `[[row, position, e_0, …], …]`, or null when there are
 * none; the target's (§5.2) name a third key, `keys` = ["row", "position", "layer"]: `[[row, position, layer, e_0,
 * …], …]`. Throws (an engine failure) on anything else: the runner must never read a malformed list. */
export function expertsOut(choices, keys = ["row", "position"]) {
    const shape = `{ ${keys.join(", ")}, experts }`;
    if (choices === null || choices === undefined)
        return null;
    if (!Array.isArray(choices)) {
        throw new Error(`routerChoices() returned ${typeof choices}, expected an array of ${shape} `
            + "or null (WIRE.md §5)");
    }
    const out = [];
    choices.forEach((c, i) => {
        const at = `routerChoices()[${i}]`;
        if (c === null || typeof c !== "object") {
            throw new Error(`${at} is ${String(c)}, expected ${shape} (WIRE.md §5)`);
        }
        const o = c;
        for (const name of keys) {
            const v = o[name];
            if (!isInt32(v) || v < 0) {
                throw new Error(`${at}.${name} is ${String(v)}, expected an integer in [0, 2^31) (WIRE.md §5)`);
            }
        }
        const list = o.experts;
        if (!(Array.isArray(list) || (ArrayBuffer.isView(list) && !(list instanceof DataView))) || list.length < 1) {
            throw new Error(`${at}.experts is ${Array.isArray(list) ? "[]" : String(list)}, expected at least one expert `
                + "(WIRE.md §5)");
        }
        const entry = keys.map((k) => o[k]);
        for (let k = 0; k < list.length; k++) {
            if (!isInt32(list[k])) {
                throw new Error(`${at}.experts[${k}] is ${String(list[k])}, expected a 32-bit integer (WIRE.md §5)`);
            }
            entry.push(list[k]);
        }
        out.push(entry);
    });
    return out.length ? out : null;
}
function samplerIn(s) {
    if (s === null || typeof s !== "object")
        return s;
    const o = s;
    let seed = o.seed;
    if (typeof seed === "string" && /^[0-9]+$/.test(seed))
        seed = BigInt(seed);
    return { temperature: o.temperature, topK: o.topK, topP: o.topP, seed };
}
// ---------------------------------------------------------------------------------------------------------------
// the loop
export class Server {
    engine;
    log;
    models = new Map();
    groups = new Map();
    poisoned = new Map();
    modelOf = new Map(); // group -> the model handle it was opened from
    closed = new Set(); // groups closed (their handler answers for them)
    nextHandle = 1;
    routed = false; // the handshake claimed routerChoices
    targetRouted = false; // the handshake claimed targetRouterChoices
    unclaimedWarned = false;
    target;
    constructor(engine, log) {
        this.engine = engine;
        this.log = log;
        this.target = new TargetDispatch(engine, () => this.handleFor(), (op, g, fn) => this.guard(op, g, fn), this.poisoned, () => this.targetRouted, (line) => this.log(line));
    }
    /** Answers one request frame with one reply frame (bytes). */
    handle(frame) {
        const { header } = frame;
        const id = header.id;
        const op = String(header.op);
        try {
            const args = (resolve(header.args ?? {}, frame.tensors) ?? {});
            const [result, tensors] = this.dispatch(op, args);
            return { reply: encode({ id, ok: true, result }, tensors), exit: op === "shutdown" };
        }
        catch (e) {
            const err = e instanceof MtpError ? e : new MtpError("BACKEND_FAILURE", `${op}: ${String(e)}`);
            const message = err.message.replace(/[\r\n]+/g, " ");
            return { reply: encode({ id, ok: false, error: { kind: err.kind, message, poisoned: err.poisoned } }, []),
                exit: false };
        }
    }
    handleFor() {
        return this.nextHandle++;
    }
    guard(op, group, fn) {
        try {
            return fn();
        }
        catch (e) {
            if (e instanceof MtpError) {
                if (e.poisoned && group !== null)
                    this.poisoned.set(group, `a failed ${op}`);
                throw e;
            }
            this.log(`mtp_wire: ${op} threw ${e instanceof Error ? e.stack ?? e.message : String(e)}`);
            if (group !== null)
                this.poisoned.set(group, `a failed ${op}`);
            throw new MtpError("BACKEND_FAILURE", `${op}: ${e instanceof Error ? e.message : String(e)}`, group !== null);
        }
    }
    /** Adds the handler's router choices of the call just made as `experts` (WIRE.md §5) when the handshake claimed
     * routerChoices. A throwing or malformed routerChoices() fails the call BACKEND_FAILURE and poisons the group: the
     * call itself ran, so the rows are no longer where the runner believes them. */
    experts(op, g, rows, result) {
        if (typeof rows.routerChoices !== "function")
            return result;
        if (!this.routed) {
            if (!this.unclaimedWarned) {
                this.unclaimedWarned = true;
                this.log("mtp_wire: the rows handler has routerChoices() but hello() does not claim "
                    + "capabilities.routerChoices, so no experts are sent (WIRE.md §4)");
            }
            return result;
        }
        const experts = this.guard(op, g, () => {
            try {
                return expertsOut(rows.routerChoices());
            }
            catch (e) {
                throw e instanceof MtpError ? new Error(e.message) : e;
            }
        });
        return experts ? { ...result, experts } : result;
    }
    dispatch(op, a) {
        switch (op) {
            case "hello": {
                const offered = Array.isArray(a.protocols) ? a.protocols : [];
                if (!offered.includes(PROTOCOL)) {
                    throw new MtpError("UNAVAILABLE", `hello: this engine speaks ${PROTOCOL}; the runner offers `
                        + (offered.join(", ") || "nothing"));
                }
                const r = this.engine.hello();
                this.routed = r.capabilities?.routerChoices === true;
                this.targetRouted = r.capabilities?.targetRouterChoices === true;
                return [{ ...r, protocol: PROTOCOL, engine: { name: this.engine.name, version: this.engine.version } }, []];
            }
            case "ping":
            case "shutdown":
                return [{}, []];
            case "load": {
                const model = this.guard("load", null, () => this.engine.load({
                    directory: a.directory, layout: a.layout, identity: a.identity,
                    options: (a.options ?? {}), config: (a.config ?? null),
                }));
                const m = this.handleFor();
                this.models.set(m, model);
                return [model.numerics ? { model: m, numerics: model.numerics } : { model: m }, []];
            }
            case "unload": {
                const model = this.models.get(a.model);
                if (!model)
                    throw invalidArgument(`unload: unknown model ${JSON.stringify(a.model)}`);
                this.models.delete(a.model);
                this.guard("unload", null, () => model.close?.());
                return [{}, []];
            }
            case "openRows": {
                const model = this.models.get(a.model);
                if (!model)
                    throw invalidArgument(`openRows: unknown model ${JSON.stringify(a.model)}`);
                const rows = this.guard("openRows", null, () => model.openRows(a.checkpoints));
                const g = this.handleFor();
                this.groups.set(g, rows);
                this.modelOf.set(g, a.model);
                return [{ group: g }, []];
            }
            default:
                break;
        }
        if (TARGET_OPS.includes(op))
            return this.target.dispatch(op, a); // WIRE.md §5.2, the target capability
        const groupOps = ["append", "filterRows", "prefill", "draft", "commit", "capture", "rowCount", "close"];
        if (!groupOps.includes(op))
            throw new MtpError("UNAVAILABLE", `${op}: unknown op (this engine speaks ${PROTOCOL})`);
        const g = a.group;
        const rows = this.groups.get(g);
        if (!rows)
            throw invalidArgument(`${op}: unknown group ${JSON.stringify(a.group)}`);
        // the checks the SDK makes for every engine, in the contract's order: a closed group is the handler's to refuse;
        // then poisoned; then a group whose model was unloaded (spec §11.11)
        if (!this.closed.has(g) && op !== "close") {
            if (this.poisoned.has(g)) {
                throw illegalState(`${op}: the group is poisoned by an earlier failure (${this.poisoned.get(g)}); discard `
                    + "it and open a new one (spec §9.2)");
            }
            if (!this.models.has(this.modelOf.get(g)) && op !== "rowCount") {
                throw illegalState(`${op}: the model this group was opened from is closed; a group cannot outlive its model `
                    + "(spec §11.11)");
            }
        }
        switch (op) {
            case "append":
                this.guard(op, g, () => rows.append(a.checkpoints));
                return [{}, []];
            case "filterRows":
                this.guard(op, g, () => rows.filterRows(a.keep));
                return [{}, []];
            case "prefill":
                this.guard(op, g, () => rows.prefill(a.tokens, a.context));
                return [this.experts(op, g, rows, {}), []];
            case "draft": {
                const sampling = Array.isArray(a.sampling) ? a.sampling.map(samplerIn) : a.sampling;
                const p = this.guard(op, g, () => rows.draft(a.pending, a.depth, a.steps, sampling));
                return [this.experts(op, g, rows, { proposals: p }), []];
            }
            case "commit":
                this.guard(op, g, () => rows.commit(a.accepted, a.context));
                return [this.experts(op, g, rows, {}), []];
            case "capture": {
                const cp = this.guard(op, g, () => rows.capture(a.row));
                const tensors = [];
                const ref = (t) => (t === null ? null : { tensor: tensors.push(t) - 1 });
                return [{ checkpoint: { schema: cp.schema, processedTokens: cp.processedTokens, draftOffset: cp.draftOffset,
                            modelIdentity: cp.modelIdentity, keys: ref(cp.keys), values: ref(cp.values), hidden: ref(cp.hidden),
                            digest: cp.digest ?? checkpointDigest(cp) } },
                    tensors];
            }
            case "rowCount": return [{ rows: this.guard(op, g, () => rows.rowCount()) }, []];
            default: // close
                this.guard(op, null, () => rows.close());
                this.poisoned.delete(g);
                this.closed.add(g);
                return [{}, []];
        }
    }
}
/** Serves `engine` on stdin/stdout until end of input or `shutdown`. console.log/info/debug go to stderr, so a
 * stray log line cannot break the framing. */
export function serve(engine) {
    const err = (line) => process.stderr.write(line + "\n");
    console.log = console.info = console.debug = (...xs) => err(xs.map(String).join(" "));
    const server = new Server(engine, err);
    const reader = new FrameReader();
    let done = false;
    process.stdin.on("data", (chunk) => {
        if (done)
            return;
        reader.push(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
        for (;;) {
            let frame;
            try {
                frame = reader.next();
            }
            catch (e) {
                err(`mtp_wire: unreadable request: ${String(e)}`);
                process.exit(2);
            }
            if (!frame)
                break;
            const { reply, exit } = server.handle(frame);
            process.stdout.write(reply);
            if (exit) {
                done = true;
                process.stdout.write(new Uint8Array(0), () => process.exit(0));
                break;
            }
        }
    });
    process.stdin.on("end", () => process.exit(0));
}
