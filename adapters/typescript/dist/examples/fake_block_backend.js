// The row lifecycle of spec §5 (with the decisions of §11) over a FAKE block (spec §1.9's seam: a module whose "K" is
// built from the embedded token and "V" is the hidden). Every bookkeeping rule is real: per-row KV lengths, the
// bridge row of restored rows, depth-0 rounds, commit keeping accepted + 1 rows and building the last proposal's row
// at full acceptance from the tap before it, retained hiddens, checkpoints, filterRows, validation in the contract's
// order, atomic failures. The numbers are not the Qwen block's, so the lockstep rules (which compare drafts and
// checkpoints with the reference) are expected to fail; every rule that checks the engine against itself or the
// contract is expected to pass. See ../README.md for the list.
//
//   node adapters/typescript/dist/examples/fake_block_backend.js      (or: bun adapters/typescript/examples/...ts)
import { checkpointDigest, MtpError, Tensor, illegalState, incompatibleCheckpoint, invalidArgument, serve, } from "../src/mtp_wire.js";
const SCHEMA = "qwen-mtp-v1";
const MAX_DEPTH = 64;
const MAX_HIDDEN = 2 ** 51; // spec §11.14
/** The fake block: position-aware, deterministic, a function of (token, hidden, position) only. */
class FakeBlock {
    s;
    constructor(s) {
        this.s = s;
    }
    /** Appends one position to `kv` and returns the output hidden. */
    forward(kv, token, hin) {
        const { hidden, kvHeads, headDim } = this.s;
        const pos = kv.length;
        const width = kvHeads * headDim;
        const k = new Float64Array(width);
        const v = new Float64Array(width);
        let mean = 0;
        for (let i = 0; i < hidden; i++)
            mean += hin[i];
        mean /= hidden;
        for (let i = 0; i < width; i++) {
            k[i] = Math.sin(0.37 * token + 0.11 * i + 0.05 * pos); // "K" is the embedded token (at its position)
            v[i] = hin[i % hidden]; // "V" is the hidden
        }
        kv.push(k, v);
        const y = new Float64Array(hidden);
        for (let i = 0; i < hidden; i++)
            y[i] = Math.tanh(0.8 * hin[i] + 0.3 * Math.cos(token + i) + 0.1 * mean);
        return y;
    }
    /** Greedy draft from a fake logit of every token: the lowest index wins ties. */
    argmax(y) {
        let best = 0;
        let bestValue = -Infinity;
        for (let t = 0; t < this.s.vocab; t++) {
            const value = y[t % this.s.hidden] + 0.001 * ((t * 7919) % 101);
            if (value > bestValue) {
                bestValue = value;
                best = t;
            }
        }
        return best;
    }
}
/** One row's unpadded KV: positions of [nKV*D] keys and values; `length` is what is valid. */
class RowKv {
    keys = [];
    values = [];
    get length() {
        return this.keys.length;
    }
    set length(n) {
        this.keys.length = n;
        this.values.length = n;
    }
    push(k, v) {
        this.keys.push(k);
        this.values.push(v);
    }
    /** [1, nKV, T, D] as the checkpoint lays it out. */
    export(which, s) {
        const rows = which === "keys" ? this.keys : this.values;
        const t = rows.length;
        const out = new Float32Array(s.kvHeads * t * s.headDim);
        for (let p = 0; p < t; p++) {
            for (let h = 0; h < s.kvHeads; h++) {
                for (let d = 0; d < s.headDim; d++)
                    out[(h * t + p) * s.headDim + d] = rows[p][h * s.headDim + d];
            }
        }
        return Tensor.f32(out, [1, s.kvHeads, t, s.headDim]);
    }
    static restore(keys, values, s) {
        const kv = new RowKv();
        const t = keys.shape[2];
        const k = keys.floats();
        const v = values.floats();
        for (let p = 0; p < t; p++) {
            const kr = new Float64Array(s.kvHeads * s.headDim);
            const vr = new Float64Array(s.kvHeads * s.headDim);
            for (let h = 0; h < s.kvHeads; h++) {
                for (let d = 0; d < s.headDim; d++) {
                    kr[h * s.headDim + d] = k[(h * t + p) * s.headDim + d];
                    vr[h * s.headDim + d] = v[(h * t + p) * s.headDim + d];
                }
            }
            kv.push(kr, vr);
        }
        return kv;
    }
}
const isInt = (x) => typeof x === "number" && Number.isInteger(x);
class FakeRows {
    s;
    identity;
    block;
    rows = [];
    roundOpen = false;
    depth = 0;
    closed = false;
    constructor(s, identity, block) {
        this.s = s;
        this.identity = identity;
        this.block = block;
    }
    usable(call) {
        if (this.closed)
            throw illegalState(`${call}: the group is closed`);
    }
    noRound(call) {
        if (this.roundOpen)
            throw illegalState(`${call}: a draft round is open; commit it first (spec §9.2)`);
    }
    hasRows(call) {
        if (this.rows.length === 0)
            throw illegalState(`${call}: the group has no rows`);
    }
    rowCount() {
        return this.rows.length;
    }
    append(checkpoints) {
        this.usable("append");
        this.noRound("append");
        if (!Array.isArray(checkpoints)) {
            throw invalidArgument("append: checkpoint list is null (use null entries for cold rows)");
        }
        const added = checkpoints.map((cp, i) => (cp === null ? this.cold() : this.restore(i, cp)));
        this.rows.push(...added);
    }
    cold() {
        return { kv: new RowKv(), hidden: null, prefilled: false, drafts: [], before: 0 };
    }
    restore(i, cp) {
        const where = `append: checkpoint[${i}]`;
        if (cp === null || typeof cp !== "object")
            throw incompatibleCheckpoint(`${where} is not a checkpoint`);
        if (cp.schema !== SCHEMA)
            throw incompatibleCheckpoint(`${where} has schema '${cp.schema}', expected '${SCHEMA}'`);
        if (cp.modelIdentity !== this.identity) {
            throw incompatibleCheckpoint(`${where} belongs to model ${String(cp.modelIdentity).slice(0, 12)}, this group's `
                + `model is ${this.identity.slice(0, 12)}`);
        }
        const p = cp.processedTokens;
        if (!isInt(p) || !isInt(cp.draftOffset) || p < 1 || cp.draftOffset !== p - 1) {
            throw incompatibleCheckpoint(`${where} has invalid paired alignment: draftOffset = ${cp.draftOffset} with `
                + `processedTokens = ${p}, expected draftOffset = P − 1 (spec §6)`);
        }
        const s = this.s;
        let kv = new RowKv();
        if (p === 1) {
            if (cp.keys != null || cp.values != null) {
                throw incompatibleCheckpoint(`${where} has P = 1 but carries keys/values (spec §6)`);
            }
        }
        else {
            const shape = [1, s.kvHeads, p - 1, s.headDim];
            const keys = checked(where, "keys", cp.keys, shape);
            const values = checked(where, "values", cp.values, shape);
            kv = RowKv.restore(keys, values, s);
        }
        const hidden = checked(where, "hidden", cp.hidden, [1, 1, s.hidden]).floats();
        if (cp.digest == null) {
            throw incompatibleCheckpoint(`${where} carries no content digest; a checkpoint comes from a capture, or from a `
                + "file or peer that kept its digest (spec §6)");
        }
        if (cp.digest !== checkpointDigest(cp)) {
            throw incompatibleCheckpoint(`${where} does not match its content digest: its label (schema, P, draftOffset, `
                + "model identity) or its tensors were changed after capture (spec §6)");
        }
        return { kv, hidden, prefilled: true, drafts: [], before: 0 };
    }
    filterRows(keep) {
        this.usable("filterRows");
        this.noRound("filterRows");
        if (!Array.isArray(keep))
            throw invalidArgument("filterRows: keep is null");
        const seen = new Set();
        keep.forEach((r, i) => {
            if (!isInt(r) || r < 0 || r >= this.rows.length) {
                throw invalidArgument(`filterRows: keep[${i}] = ${r} outside [0, ${this.rows.length})`);
            }
            if (seen.has(r))
                throw invalidArgument(`filterRows: keep[${i}] = ${r} repeats a row`);
            seen.add(r);
        });
        this.rows = keep.map((r) => this.rows[r]);
    }
    prefill(tokens, context) {
        this.usable("prefill");
        this.noRound("prefill");
        this.hasRows("prefill");
        const b = this.rows.length;
        const ids = this.tokens("prefill", tokens, b);
        const n = ids[0].length;
        const ctx = this.context("prefill", context, b, n, "the taps at the same L positions as tokens");
        const saved = this.lengths();
        const h = this.s.hidden;
        try {
            this.rows.forEach((row, r) => {
                if (row.prefilled)
                    this.block.forward(row.kv, ids[r][0], row.hidden); // the bridge row
                for (let p = 0; p + 1 < n; p++)
                    this.block.forward(row.kv, ids[r][p + 1], ctx.subarray((r * n + p) * h, (r * n + p + 1) * h));
            });
        }
        catch (e) {
            this.putBack(saved);
            throw e;
        }
        this.rows.forEach((row, r) => {
            row.hidden = ctx.slice((r * n + n - 1) * h, (r * n + n) * h);
            row.prefilled = true;
        });
    }
    draft(pending, depth, steps, sampling) {
        this.usable("draft");
        this.noRound("draft");
        this.hasRows("draft");
        const b = this.rows.length;
        const v = this.s.vocab;
        if (!Array.isArray(pending) || !Array.isArray(steps) || !Array.isArray(sampling)) {
            throw invalidArgument("draft: pending, steps and sampling must not be null");
        }
        if (pending.length !== b)
            throw invalidArgument(`draft: pending has ${pending.length} entries, expected ${b} (one per row)`);
        pending.forEach((t, r) => {
            if (!isInt(t) || t < 0 || t >= v)
                throw invalidArgument(`draft: pending[${r}] = ${t} outside the vocabulary [0, ${v})`);
        });
        if (!isInt(depth) || depth < 0 || depth > MAX_DEPTH) {
            throw invalidArgument(`draft: depth = ${depth} outside [0, ${MAX_DEPTH}]`);
        }
        if (steps.length !== b)
            throw invalidArgument(`draft: steps has ${steps.length} entries, expected ${b}`);
        steps.forEach((s, r) => {
            if (!isInt(s) || s < 0)
                throw invalidArgument(`draft: steps[${r}] = ${s} is negative`);
        });
        if (sampling.length !== b)
            throw invalidArgument(`draft: sampling has ${sampling.length} row samplers, expected ${b}`);
        sampling.forEach((s, r) => checkSampler(r, s));
        this.rows.forEach((row, r) => {
            if (row.hidden === null) {
                throw illegalState(`draft: row ${r} has no retained hidden (a cold row must be prefilled first, spec §5.7)`);
            }
        });
        const saved = this.lengths();
        const out = [];
        try {
            this.rows.forEach((row, r) => {
                let tok = pending[r];
                let hin = row.hidden;
                if (depth === 0)
                    this.block.forward(row.kv, tok, hin); // the pending row only
                const drafted = [];
                for (let t = 0; t < depth; t++) {
                    const y = this.block.forward(row.kv, tok, hin);
                    tok = this.block.argmax(y);
                    drafted.push(tok);
                    hin = y;
                }
                out.push(drafted);
            });
        }
        catch (e) {
            this.putBack(saved);
            throw e;
        }
        this.rows.forEach((row, r) => {
            row.before = saved[r];
            row.drafts = out[r].slice();
            row.hidden = null;
        });
        this.depth = depth;
        this.roundOpen = true;
        return out;
    }
    commit(accepted, context) {
        this.usable("commit");
        if (!this.roundOpen)
            throw illegalState("commit: no draft round is open (spec §5.8)");
        const b = this.rows.length;
        const d = this.depth;
        if (!Array.isArray(accepted))
            throw invalidArgument("commit: accepted is null");
        if (accepted.length !== b)
            throw invalidArgument(`commit: accepted has ${accepted.length} entries, expected ${b} (one per row)`);
        accepted.forEach((a, r) => {
            if (!isInt(a) || a < 0 || a > d) {
                throw invalidArgument(`commit: accepted[${r}] = ${a} outside [0, ${d}], the draft depth (spec §5.8)`);
            }
        });
        const w = d + 1;
        const h = this.s.hidden;
        const ctx = this.context("commit", context, b, w, `width = depth + 1 = ${w} verify taps`);
        const appended = Math.max(1, d);
        this.rows.forEach((row, r) => {
            row.kv.length = row.before + Math.min(accepted[r] + 1, appended);
            if (d > 0 && accepted[r] === d) {
                // full acceptance: the last proposal's row, from the true hidden preceding it
                this.block.forward(row.kv, row.drafts[d - 1], ctx.subarray((r * w + d - 1) * h, (r * w + d) * h));
            }
        });
        this.rows.forEach((row, r) => {
            row.hidden = ctx.slice((r * w + accepted[r]) * h, (r * w + accepted[r] + 1) * h);
            row.drafts = [];
        });
        this.roundOpen = false;
        this.depth = 0;
    }
    capture(row) {
        this.usable("capture");
        this.noRound("capture");
        if (!isInt(row) || row < 0 || row >= this.rows.length) {
            throw invalidArgument(`capture: row ${row} outside [0, ${this.rows.length})`);
        }
        const r = this.rows[row];
        if (r.hidden === null) {
            throw illegalState(`capture: row ${row} has consumed no target token yet (a cold row must be prefilled first, `
                + "spec §11.1)");
        }
        const t = r.kv.length;
        const cp = {
            schema: SCHEMA, processedTokens: t + 1, draftOffset: t, modelIdentity: this.identity,
            keys: t ? r.kv.export("keys", this.s) : null, values: t ? r.kv.export("values", this.s) : null,
            hidden: Tensor.f32(r.hidden, [1, 1, this.s.hidden]),
        };
        cp.digest = checkpointDigest(cp);
        return cp;
    }
    close() {
        this.closed = true;
        this.rows = [];
        this.roundOpen = false;
    }
    lengths() {
        return this.rows.map((r) => r.kv.length);
    }
    putBack(saved) {
        this.rows.forEach((r, i) => {
            r.kv.length = saved[i];
        });
    }
    tokens(call, t, rows) {
        if (t === null || t === undefined)
            throw invalidArgument(`${call}: tokens is null`);
        if (!(t instanceof Tensor) || !t.valid)
            throw invalidArgument(`${call}: tokens is not a valid tensor`);
        if (t.dtype !== "I32" && t.dtype !== "I64")
            throw invalidArgument(`${call}: tokens dtype ${t.dtype}, expected I32 or I64`);
        if (t.rank !== 2 || t.shape[0] !== rows) {
            throw invalidArgument(`${call}: tokens shape ${t.describe()}, expected [${rows}, L] (one row per group row, spec §5.4)`);
        }
        const len = t.shape[1];
        if (len < 1)
            throw invalidArgument(`${call}: tokens has L = 0 new positions, expected L ≥ 1 (spec §5.4)`);
        const ids = t.ints();
        const out = [];
        for (let b = 0; b < rows; b++) {
            const row = [];
            for (let p = 0; p < len; p++) {
                const id = ids[b * len + p];
                if (id < 0n || id >= BigInt(this.s.vocab)) {
                    throw invalidArgument(`${call}: tokens[${b}, ${p}] = ${id} outside the vocabulary [0, ${this.s.vocab})`);
                }
                row.push(Number(id));
            }
            out.push(row);
        }
        return out;
    }
    context(call, t, rows, width, rule) {
        const h = this.s.hidden;
        if (t === null || t === undefined)
            throw invalidArgument(`${call}: context is null`);
        if (!(t instanceof Tensor) || !t.valid)
            throw invalidArgument(`${call}: context is not a valid tensor`);
        if (!["F32", "F16", "BF16"].includes(t.dtype)) {
            throw invalidArgument(`${call}: context dtype ${t.dtype}, expected F32, F16 or BF16`);
        }
        if (t.rank !== 3 || t.shape[0] !== rows || t.shape[1] !== width || t.shape[2] !== h) {
            throw invalidArgument(`${call}: context shape ${t.describe()}, expected [${rows}, ${width}, ${h}] (${rule})`);
        }
        const a = t.floats();
        const bad = a.findIndex((x) => !Number.isFinite(x) || Math.abs(x) > MAX_HIDDEN);
        if (bad >= 0) {
            throw invalidArgument(`${call}: context element ${bad} = ${a[bad]} ${Number.isFinite(a[bad]) ? "has magnitude "
                + "above 2^51, where an f32 RMSNorm sum of squares could overflow (spec §11.14)" : "is not finite"}`);
        }
        return a;
    }
}
/** A row sampler's values (spec §7): temperature 0 (greedy) or ≥ 1e-30, top_k ≥ 0, top_p in (0, 1]. */
function checkSampler(r, s) {
    if (s === null || typeof s !== "object")
        throw invalidArgument(`draft: sampling[${r}] is not a sampler`);
    const { temperature: t, topK: k, topP: p } = s;
    if (typeof t !== "number" || !Number.isFinite(t) || t < 0) {
        throw invalidArgument(`draft: sampling[${r}] temperature = ${t} must be finite and ≥ 0`);
    }
    if (t > 0 && t < 1e-30)
        throw invalidArgument(`draft: sampling[${r}] temperature = ${t} is in (0, 1e-30); use 0 for greedy`);
    if (!isInt(k) || k < 0)
        throw invalidArgument(`draft: sampling[${r}] top_k = ${k} must be ≥ 0`);
    if (typeof p !== "number" || !(p > 0 && p <= 1))
        throw invalidArgument(`draft: sampling[${r}] top_p = ${p} must be in (0, 1]`);
}
function checked(where, name, t, shape) {
    if (t === null || t === undefined)
        throw incompatibleCheckpoint(`${where} has no ${name} tensor`);
    if (!(t instanceof Tensor) || !t.valid)
        throw incompatibleCheckpoint(`${where} ${name} is not a valid tensor`);
    if (!["F32", "F16", "BF16"].includes(t.dtype)) {
        throw incompatibleCheckpoint(`${where} ${name} dtype ${t.dtype}, expected F32, F16 or BF16`);
    }
    if (t.shape.length !== shape.length || t.shape.some((s, i) => s !== shape[i])) {
        throw incompatibleCheckpoint(`${where} ${name} shape ${t.describe()}, expected [${shape.join(", ")}]`);
    }
    if (t.floats().some((x) => !Number.isFinite(x)))
        throw incompatibleCheckpoint(`${where} ${name} has a non-finite element`);
    if (name === "hidden" && t.floats().some((x) => Math.abs(x) > MAX_HIDDEN)) {
        throw incompatibleCheckpoint(`${where} hidden has an element of magnitude above 2^51 (spec §11.14)`);
    }
    return t;
}
class FakeModel {
    s;
    identity;
    numerics = "fake block (spec §1.9 seam), float64 bookkeeping";
    constructor(s, identity) {
        this.s = s;
        this.identity = identity;
    }
    openRows(checkpoints) {
        const rows = new FakeRows(this.s, this.identity, new FakeBlock(this.s));
        rows.append(checkpoints);
        return rows;
    }
}
class FakeEngine {
    name = "ts-fake-block";
    version = "1.0";
    hello() {
        return {
            description: "TypeScript row lifecycle over a fake block (the bookkeeping is real, the numbers are not)",
            numerics: "fake block, float64",
            profiles: [{ label: "ts-fake", options: {}, tolerance: { name: "f32", tokenGap: 1e-4, kvNmse: 1e-9, hiddenNmse: 0 } }],
            capabilities: { seededSampling: false, tapDtypes: ["F32", "F16", "BF16"], maxRows: 64, maxDepth: MAX_DEPTH },
        };
    }
    load(a) {
        if (Object.keys(a.options).length)
            throw invalidArgument(`load: unknown option(s) ${Object.keys(a.options).join(", ")}`);
        const c = a.config ?? {};
        const need = (k) => {
            const v = c[k];
            if (!isInt(v) || v <= 0)
                throw new MtpError("INCOMPATIBLE_MODEL", `load: config.${k} = ${v}, expected a positive integer`);
            return v;
        };
        if (typeof a.identity !== "string")
            throw invalidArgument("load: identity is missing");
        return new FakeModel({ hidden: need("hiddenSize"), kvHeads: need("numKvHeads"), headDim: need("headDim"),
            vocab: need("vocabSize") }, a.identity);
    }
}
// Run by hand, the engine would wait silently for a request on standard input: say what it is waiting for.
if (process.stdin.isTTY) {
    process.stderr.write("fake_block_backend: an MTP wire-protocol engine, waiting for requests on standard input; "
        + "run it through mtp, e.g. ./mtp tck --backend exec:'node adapters/typescript/dist/examples/fake_block_backend.js'\n");
}
serve(new FakeEngine());
