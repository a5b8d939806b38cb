// The hybrid target over mtp-oracle-wire/1 (conformance/WIRE.md §5.2-5.3, spec §13): the handler interfaces an engine
// implements to run its target under `mtp tck` and `mtp conform --target`, the target checkpoint (schema
// qwen-target-v1) and its content digest, and the dispatch of the target ops. An engine claims
// `capabilities.target` in hello() and gives its Engine a loadTarget() returning a TargetModel.
import { createHash } from "node:crypto";
import { MtpError, expertsOut, illegalState, invalidArgument } from "./mtp_wire.js";
export const TARGET_SCHEMA = "qwen-target-v1";
const TARGET_DIGEST_MAGIC = "mtp-oracle-target-checkpoint-digest/1";
export const TARGET_OPS = ["loadTarget", "targetUnload", "targetOpenRows", "targetAppend",
    "targetFilterRows", "targetPrefill", "targetVerify", "targetCommit", "targetCapture", "targetProcessed",
    "targetClose"];
/** WIRE.md §5.3: lowercase hex SHA-256 over the magic, the schema, P (8 bytes), the identity, then the four tensors
 * (0 when absent, else 1, dtype name, rank (4 bytes), dims (8 bytes each), byte count (8 bytes), bytes); strings are
 * a 4-byte UTF-8 length and the bytes; integers little-endian. */
export function targetCheckpointDigest(cp) {
    const h = createHash("sha256");
    const enc = new TextEncoder();
    const u32 = (n) => { const b = new Uint8Array(4); new DataView(b.buffer).setUint32(0, n, true); return b; };
    const i64 = (n) => {
        const b = new Uint8Array(8);
        new DataView(b.buffer).setBigInt64(0, BigInt(n), true);
        return b;
    };
    const text = (s) => { const b = enc.encode(s); h.update(u32(b.length)); h.update(b); };
    h.update(enc.encode(TARGET_DIGEST_MAGIC));
    text(cp.schema);
    h.update(i64(cp.processedTokens));
    text(cp.modelIdentity);
    for (const t of [cp.convWindows, cp.recurrentStates, cp.keys, cp.values]) {
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
/** The target ops of one server: its own tables, the server's handle counter, guard and poisoned groups. */
export class TargetDispatch {
    engine;
    handleFor;
    guard;
    poisoned;
    routed;
    log;
    models = new Map();
    groups = new Map();
    modelOf = new Map();
    closed = new Set();
    unclaimedWarned = false;
    /** `routed()`: whether the handshake claimed targetRouterChoices; `log` tells the engine's author once when a
     * handler reports choices that the handshake did not claim (they are not sent). */
    constructor(engine, handleFor, guard, poisoned, routed = () => false, log = () => { }) {
        this.engine = engine;
        this.handleFor = handleFor;
        this.guard = guard;
        this.poisoned = poisoned;
        this.routed = routed;
        this.log = log;
    }
    /** The handler's router choices of the call just made as `experts` (WIRE.md §5.2) when the handshake claimed
     * targetRouterChoices. A throwing or malformed list fails the call BACKEND_FAILURE and poisons the group: the call
     * itself ran, so the rows are no longer where the runner believes them. */
    experts(op, g, rows, result) {
        if (typeof rows.routerChoices !== "function")
            return result;
        if (!this.routed()) {
            if (!this.unclaimedWarned) {
                this.unclaimedWarned = true;
                this.log("mtp_wire: the target rows handler has routerChoices() but hello() does not claim "
                    + "capabilities.targetRouterChoices, so no experts are sent (WIRE.md §4)");
            }
            return result;
        }
        const experts = this.guard(op, g, () => {
            try {
                return expertsOut(rows.routerChoices(), ["row", "position", "layer"]);
            }
            catch (e) {
                throw e instanceof MtpError ? new Error(e.message) : e;
            }
        });
        return experts ? { ...result, experts } : result;
    }
    dispatch(op, a) {
        switch (op) {
            case "loadTarget": {
                const load = this.engine.loadTarget;
                if (typeof load !== "function") {
                    throw new MtpError("UNAVAILABLE", "loadTarget: this engine runs the drafter only (no target capability, "
                        + "WIRE.md §4)");
                }
                const model = this.guard(op, null, () => load.call(this.engine, {
                    directory: a.directory, layout: a.layout, identity: a.identity,
                    options: (a.options ?? {}), config: (a.config ?? null),
                }));
                const m = this.handleFor();
                this.models.set(m, model);
                return [model.numerics ? { model: m, numerics: model.numerics } : { model: m }, []];
            }
            case "targetUnload": {
                const model = this.models.get(a.model);
                if (!model)
                    throw invalidArgument(`targetUnload: unknown target ${JSON.stringify(a.model)}`);
                this.models.delete(a.model);
                this.guard(op, null, () => model.close?.());
                return [{}, []];
            }
            case "targetOpenRows": {
                const model = this.models.get(a.model);
                if (!model)
                    throw invalidArgument(`targetOpenRows: unknown target ${JSON.stringify(a.model)}`);
                const rows = this.guard(op, null, () => model.openRows(a.checkpoints));
                const g = this.handleFor();
                this.groups.set(g, rows);
                this.modelOf.set(g, a.model);
                return [{ group: g }, []];
            }
            default:
                break;
        }
        const g = a.group;
        const rows = this.groups.get(g);
        if (!rows)
            throw invalidArgument(`${op}: unknown target group ${JSON.stringify(a.group)}`);
        if (!this.closed.has(g) && op !== "targetClose") {
            if (this.poisoned.has(g)) {
                throw illegalState(`${op}: the group is poisoned by an earlier failure (${this.poisoned.get(g)}); discard `
                    + "it and open a new one (spec §9.2)");
            }
            if (!this.models.has(this.modelOf.get(g)) && op !== "targetProcessed") {
                throw illegalState(`${op}: the target this group was opened from is closed; a group cannot outlive its `
                    + "target (spec §11.11)");
            }
        }
        switch (op) {
            case "targetAppend":
                this.guard(op, g, () => rows.append(a.checkpoints));
                return [{}, []];
            case "targetFilterRows":
                this.guard(op, g, () => rows.filterRows(a.keep));
                return [{}, []];
            case "targetPrefill":
            case "targetVerify": {
                const o = this.guard(op, g, () => (op === "targetPrefill" ? rows.prefill(a.tokens) : rows.verify(a.tokens)));
                return [this.experts(op, g, rows, { logits: { tensor: 0 }, preNorm: { tensor: 1 }, postNorm: { tensor: 2 } }),
                    [o.logits, o.preNorm, o.postNorm]];
            }
            case "targetCommit":
                this.guard(op, g, () => rows.commit(a.accepted));
                return [{}, []];
            case "targetCapture": {
                const cp = this.guard(op, g, () => rows.capture(a.row));
                const tensors = [];
                const ref = (t) => (t === null ? null : { tensor: tensors.push(t) - 1 });
                return [{ checkpoint: { schema: cp.schema, processedTokens: cp.processedTokens,
                            modelIdentity: cp.modelIdentity, convWindows: ref(cp.convWindows),
                            recurrentStates: ref(cp.recurrentStates), keys: ref(cp.keys), values: ref(cp.values),
                            digest: cp.digest ?? targetCheckpointDigest(cp) } }, tensors];
            }
            case "targetProcessed":
                return [{ processed: this.guard(op, g, () => rows.processedTokens()).map(Number) }, []];
            default: // targetClose
                this.guard(op, null, () => rows.close());
                this.poisoned.delete(g);
                this.closed.add(g);
                return [{}, []];
        }
    }
}
