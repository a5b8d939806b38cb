// The target row contract once (spec §13.3, §11.1, §11.11), the TypeScript twin of the Java skeleton AbstractTargetRows
// and its checks TargetContract: a TargetRows whose calls validate (in the contract's order, with the same kinds and
// messages), keep the round's bookkeeping, chunk prefills, publish atomically and seal checkpoints with their content
// digest (WIRE.md §5.3), over an engine that supplies only its storage S of all rows and its forward maths.
//
// Every call runs in three steps. Validate the group's state and every argument. Compute new storage from the
// published one without changing anything a published row reads (replace a recurrent state, never update it in
// place). Publish with plain assignments that cannot fail. A refused or failed call therefore changes nothing;
// anything but an MtpError thrown while computing is answered BACKEND_FAILURE with the rows unchanged (not
// poisoned). An engine whose device cannot be trusted after a failure calls poison().

import {
  type Engine, type HelloResult, MtpError, Tensor, illegalState, incompatibleCheckpoint, invalidArgument,
} from "./mtp_wire.js";
import {
  type CapturedTargetCheckpoint, type LoadTargetArgs, TARGET_SCHEMA, type TargetCheckpoint, type TargetModel,
  type TargetOutput, type TargetRouterChoice, type TargetRows, targetCheckpointDigest,
} from "./target.js";

export const TARGET_MAX_DEPTH = 64;            // api RowContract.MAX_DEPTH
export const MAX_WIDTH = TARGET_MAX_DEPTH + 1; // the widest verify: the pending token and 64 drafts
const MAX_POSITIONS = 1 << 20;                 // api RowContract.MAX_POSITIONS (spec §11.13)
const MAX_ELEMENTS = 2 ** 30;                  // api RowContract.MAX_ELEMENTS (spec §11.13)
export const TARGET_PREFILL_CHUNK = 2048;      // a prefill forwards at most this many positions at once
const QUOTE_CHARS = 200;                       // api UntrustedText.MAX_CHARS

/** What the checks need of a target (spec §13.1): identity, V, H, nKV, D, the layer kinds, the GDN dimensions and
 * the widest per-token array of one forward (api TargetContract.forwardSize: 2·nH·D, conv_dim + Hv·Dv, I, H). */
export class TargetShape {
  readonly nGdn: number;
  readonly nFull: number;
  readonly convDim: number;
  readonly widest: number;
  readonly maxPositions: number;

  constructor(readonly identity: string, readonly vocab: number, readonly hidden: number, readonly heads: number,
              readonly kvHeads: number, readonly headDim: number, intermediate: number,
              readonly layerTypes: string[], readonly keyHeads: number, readonly valueHeads: number,
              readonly keyHeadDim: number, readonly valueHeadDim: number, readonly convKernel: number) {
    this.nGdn = layerTypes.filter((t) => t === "linear_attention").length;
    this.nFull = layerTypes.filter((t) => t === "full_attention").length;
    const valueDim = valueHeads * valueHeadDim;
    this.convDim = 2 * keyHeads * keyHeadDim + valueDim;
    this.widest = Math.max(2 * heads * headDim, this.convDim + valueDim, intermediate, hidden);
    this.maxPositions = Math.min(MAX_POSITIONS, Math.floor(MAX_ELEMENTS / (kvHeads * headDim)));
  }

  /** The four checkpoint tensors' shapes of a row after p tokens (WIRE.md §5.3). */
  shapes(p: number): number[][] {
    return [[this.nGdn, this.convDim, this.convKernel - 1], [this.nGdn, this.valueHeads, this.keyHeadDim, this.valueHeadDim],
      [this.nFull, this.kvHeads, p, this.headDim], [this.nFull, this.kvHeads, p, this.headDim]];
  }

  /** From loadTarget's `config` (WIRE.md §5.2): load's keys, `layerTypes` and `gdn`. */
  static of(config: Record<string, unknown> | null, identity: unknown): TargetShape {
    const c = config ?? {};
    const need = (d: Record<string, unknown>, k: string, where: string): number => {
      const v = d[k];
      if (!isInt(v) || v <= 0) throw new MtpError("INCOMPATIBLE_MODEL", `loadTarget: config.${where}${k} = ${v}, expected a positive integer`);
      return v;
    };
    const [h, nh, nkv, d, v] = ["hiddenSize", "numHeads", "numKvHeads", "headDim", "vocabSize"].map((k) => need(c, k, ""));
    const types = c.layerTypes;
    if (!Array.isArray(types) || types.some((t) => t !== "linear_attention" && t !== "full_attention")) {
      throw new MtpError("INCOMPATIBLE_MODEL", `loadTarget: config.layerTypes = ${JSON.stringify(types)}, expected a list `
        + "of 'linear_attention' and 'full_attention'");
    }
    const g = (typeof c.gdn === "object" && c.gdn !== null ? c.gdn : {}) as Record<string, unknown>;
    const [hk, hv, dk, dv, k] = ["numKeyHeads", "numValueHeads", "keyHeadDim", "valueHeadDim", "convKernel"].map((x) => need(g, x, "gdn."));
    if (typeof identity !== "string") throw invalidArgument(`loadTarget: identity = ${identity}, expected a string`);
    const inter = isInt(c.intermediateSize) ? c.intermediateSize as number : 0;
    return new TargetShape(identity, v, h, nh, nkv, d, inter, types as string[], hk, hv, dk, dv, k);
  }
}

/** One row's target state as flat row-major arrays in the checkpoint's orientation (WIRE.md §5.3, without the row
 * axis): convWindows [nGDN, conv_dim, K−1], recurrentStates [nGDN, Hv, Dk, Dv], keys and values [nFull, nKV, P, D].
 * Restored rows hold the checkpoint's values (empty arrays for a kind of layer the target lacks). */
export interface TargetRowState {
  processed: number;
  convWindows: Float64Array;
  recurrentStates: Float64Array;
  keys: Float64Array;
  values: Float64Array;
}

/** What export returns: the four arrays of a TargetRowState, or F32 Tensors of the checkpoint's shapes; null for a
 * kind of layer the target lacks. */
export interface ExportedTargetRow {
  convWindows: ArrayLike<number> | Tensor | null;
  recurrentStates: ArrayLike<number> | Tensor | null;
  keys: ArrayLike<number> | Tensor | null;
  values: ArrayLike<number> | Tensor | null;
}

/** One forward's results, flat row-major: logits [B, n, V] (every position of a verify, the last of a prefill),
 * preNorm and postNorm [B, s, H] (the two taps at every position fed), and the storage after it. */
export interface Forwarded<S> {
  logits: ArrayLike<number>;
  preNorm: ArrayLike<number>;
  postNorm: ArrayLike<number>;
  state: S;
}

/** A group of target rows over an engine's storage S. Subclasses implement the storage and maths methods; every
 * contract method (append … close) is the skeleton's. */
export abstract class TargetRowsSkeleton<S> implements TargetRows {
  private storage: S;
  private processed: number[] = [];   // [B] P
  private open = false;
  private width = 0;
  private before: number[] | null = null;   // [B] P when the open round began
  private closed = false;
  private poisonedBy: string | null = null;
  private inProgress: string | null = null;
  /** The (row, position, layer, experts) of the last prefill's or verify's MoE router decisions; `forward` pushes
   * them (WIRE.md §5.2 `experts`). Cleared when prefill, verify or commit starts, and when one fails. */
  router: TargetRouterChoice[] = [];

  constructor(readonly shape: TargetShape, empty: S) {
    this.storage = empty;
  }

  // ---- what an engine supplies ------------------------------------------------------------------------------

  /** Storage of `state`'s rows followed by one per entry: a checked TargetRowState, or null (an empty row, P = 0). */
  protected abstract appendRows(state: S, restored: (TargetRowState | null)[]): S;

  /** Storage holding row keep[i] of `state` as row i. The default serves an array of one entry per row. */
  protected keepRows(state: S, keep: number[]): S {
    if (!Array.isArray(state)) throw new Error("keepRows: storage other than an array of one entry per row needs its own");
    return keep.map((i) => state[i]) as S;
  }

  /** One forward of s tokens per row (spec §13.1): row b, having processed at[b] tokens, consumes ids[b] ([s]). A
   * prefill (verify false) returns storage with the tokens committed and each row's last logits [B, 1, V]; a verify
   * returns the round's storage, from which rollback keeps any prefix, and every position's logits [B, s, V]. Never
   * changes what `state`'s published rows read. A MoE engine pushes { row: b, position: at[b] + i, layer, experts }
   * onto `this.router` for each token i of row b and each MoE layer, in the order computed (experts in slot order,
   * spec §12.3). */
  protected abstract forward(state: S, at: number[], ids: number[][], s: number, verify: boolean): Forwarded<S>;

  /** The open round's storage rolled back: row b keeps its first keep[b] verified tokens (1 ≤ keep[b] ≤ W) after the
   * before[b] it had processed; its state is exactly the state after them. */
  protected abstract rollback(verified: S, before: number[], keep: number[]): S;

  /** Row `row`'s state after its processed ≥ 1 tokens, in the checkpoint's orientation (WIRE.md §5.3). */
  protected abstract export(state: S, row: number, processed: number): ExportedTargetRow;

  /** Frees `state` (the group is closing). */
  protected release(_state: S): void {}

  /** True once the target this group was opened from is closed (the wire server checks this itself). */
  protected modelClosed(): boolean {
    return false;
  }

  /** Frees what `superseded` holds and `current` no longer uses, after a call published. */
  protected discard(_superseded: S, _current: S): void {}

  /** A hook reached before each step of a call (tests inject faults through it). */
  protected reached(_call: string, _step: string): void {}

  /** Marks the group unusable after a failure the engine cannot undo (spec §9.2); the first reason is kept. */
  protected poison(reason: string): void {
    if (this.poisonedBy === null) this.poisonedBy = reason;
  }

  // ---- the contract -----------------------------------------------------------------------------------------

  rowCount(): number {
    return this.processed.length;
  }

  /** P per row at the last committed boundary or, during a round, through the open verify. */
  processedTokens(): number[] {
    return this.processed.slice();
  }

  roundOpen(): boolean {
    return this.open;
  }

  /** The router choices of the last prefill or verify; empty after a commit, a failed call, or for a dense target. */
  routerChoices(): readonly TargetRouterChoice[] {
    return this.router.slice();
  }

  append(checkpoints: unknown): void {
    this.call("append", () => {
      noRound("append", this.open);
      if (!Array.isArray(checkpoints)) throw invalidArgument("append: checkpoint list is null (use null entries for empty rows)");
      const restored = checkpoints.map((cp, i) => (cp === null || cp === undefined ? null : this.restore("append", i, cp)));
      if (restored.length === 0) return;
      const after = this.processed.concat(restored.map((r) => (r === null ? 0 : r.processed)));
      const next = this.compute("append", () => this.appendRows(this.storage, restored));
      this.reached("append", "publish");
      this.publish(next, after);
    });
  }

  filterRows(keep: unknown): void {
    this.call("filterRows", () => {
      noRound("filterRows", this.open);
      const b = this.rowCount();
      if (!Array.isArray(keep)) throw invalidArgument("filterRows: keep is null");
      const seen = new Set<number>();
      keep.forEach((r, i) => {
        if (!isInt(r) || r < 0 || r >= b) throw invalidArgument(`filterRows: keep[${i}] = ${r} outside [0, ${b})`);
        if (seen.has(r)) throw invalidArgument(`filterRows: keep[${i}] = ${r} repeats a row`);
        seen.add(r);
      });
      const kept = (keep as number[]).slice();
      const after = kept.map((r) => this.processed[r]);
      const next = this.compute("filterRows", () => this.keepRows(this.storage, kept.slice()));
      this.reached("filterRows", "publish");
      this.publish(next, after);
    });
  }

  prefill(tokens: unknown): TargetOutput {
    return this.call("prefill", () => {
      noRound("prefill", this.open);
      const b = this.hasRows("prefill");
      const ids = tokensOf("prefill", tokens, b, this.shape.vocab);
      const n = ids[0].length;
      positions("prefill", this.processed, n, this.shape);
      forwardSize("prefill", b, Math.min(n, TARGET_PREFILL_CHUNK), this.shape, "split the prefill into shorter ones");
      const at = this.processed.slice();
      const f = this.compute("prefill", () => this.prefillChunks(ids, at));
      this.reached("prefill", "publish");
      this.publish(f.state, at.map((p) => p + n));
      return this.outputs(f, b, 1, n);
    });
  }

  /** Prefill's forwards of at most TARGET_PREFILL_CHUNK positions; the logits are the last chunk's. */
  private prefillChunks(ids: number[][], at: number[]): Forwarded<S> {
    const b = ids.length;
    const n = ids[0].length;
    const h = this.shape.hidden;
    const pre = new Float64Array(b * n * h);
    const post = new Float64Array(b * n * h);
    let s = this.storage;
    let logits: Float64Array = new Float64Array(0);
    const cursor = at.slice();
    for (let pos = 0; pos < n; pos += TARGET_PREFILL_CHUNK) {
      const m = Math.min(TARGET_PREFILL_CHUNK, n - pos);
      this.reached("prefill", "chunk forward");
      const f = this.checkedForward("prefill", s, cursor.slice(), ids.map((r) => r.slice(pos, pos + m)), m, false);
      s = f.state;
      logits = f.logits;
      for (let r = 0; r < b; r++) {
        pre.set(f.preNorm.subarray(r * m * h, (r + 1) * m * h), (r * n + pos) * h);
        post.set(f.postNorm.subarray(r * m * h, (r + 1) * m * h), (r * n + pos) * h);
        cursor[r] += m;
      }
    }
    return { logits, preNorm: pre, postNorm: post, state: s };
  }

  verify(tokens: unknown): TargetOutput {
    return this.call("verify", () => {
      noRound("verify", this.open);
      const b = this.hasRows("verify");
      const ids = tokensOf("verify", tokens, b, this.shape.vocab);
      const w = ids[0].length;
      if (w > MAX_WIDTH) {
        throw invalidArgument(`verify: width W = ${w} tokens per row, more than the ${MAX_WIDTH} a verify may take (the `
          + `pending token and at most ${TARGET_MAX_DEPTH} drafts, spec §13.3)`);
      }
      this.processed.forEach((p, r) => {
        if (p === 0) {
          throw illegalState(`verify: row ${r} has processed no token; prefill it first: a verify continues from the `
            + "pending token (spec §13.3)");
        }
      });
      positions("verify", this.processed, w, this.shape);
      forwardSize("verify", b, w, this.shape, "verify fewer rows at a time");
      const from = this.processed.slice();
      const f = this.compute("verify", () => {
        this.reached("verify", "forward");
        return this.checkedForward("verify", this.storage, from.slice(), ids, w, true);
      });
      this.reached("verify", "publish");
      this.publish(f.state, from.map((p) => p + w));
      this.before = from;
      this.width = w;
      this.open = true;
      return this.outputs(f, b, w, w);
    });
  }

  commit(accepted: unknown): void {
    this.call("commit", () => {
      if (!this.open) throw illegalState("commit: no verify round is open (spec §13.3)");
      const b = this.rowCount();
      const w = this.width;
      if (!Array.isArray(accepted)) throw invalidArgument("commit: accepted is null");
      if (accepted.length !== b) throw invalidArgument(`commit: accepted has ${accepted.length} entries, expected ${b} (one per row)`);
      accepted.forEach((a, r) => {
        if (!isInt(a) || a < 0 || a > w - 1) {
          throw invalidArgument(`commit: accepted[${r}] = ${a} outside [0, ${w - 1}], the drafts of a verify of width ${w} `
            + "(spec §13.3); rows unchanged");
        }
      });
      const keep = (accepted as number[]).map((a) => a + 1);
      const before = (this.before as number[]).slice();
      const next = this.compute("commit", () => {
        this.reached("commit", "rollback");
        return this.rollback(this.storage, before.slice(), keep.slice());
      });
      this.reached("commit", "publish");
      this.publish(next, before.map((p, r) => p + keep[r]));
      this.before = null;
      this.width = 0;
      this.open = false;
    });
  }

  capture(row: unknown): CapturedTargetCheckpoint {
    return this.call("capture", () => {
      noRound("capture", this.open);
      const b = this.rowCount();
      if (!isInt(row) || row < 0 || row >= b) throw invalidArgument(`capture: row ${row} outside [0, ${b})`);
      const p = this.processed[row];
      if (p === 0) {
        throw illegalState(`capture: row ${row} has processed no token yet (an empty row must be prefilled first, spec §13.3)`);
      }
      const t = this.compute("capture", () => this.export(this.storage, row, p));
      const c = this.shape;
      const shapes = c.shapes(p);
      const layers = [c.nGdn, c.nGdn, c.nFull, c.nFull];
      const [conv, states, keys, values] = [t.convWindows, t.recurrentStates, t.keys, t.values]
        .map((x, i) => (layers[i] === 0 ? null : f32(x, shapes[i])));
      const cp: CapturedTargetCheckpoint = { schema: TARGET_SCHEMA, processedTokens: p, modelIdentity: c.identity,
        convWindows: conv, recurrentStates: states, keys, values };
      cp.digest = targetCheckpointDigest(cp);
      return cp;
    });
  }

  isClosed(): boolean {
    return this.closed;
  }

  close(): void {
    if (this.inProgress !== null) throw illegalState(`close: called from inside ${this.inProgress} on this group (spec §11.11)`);
    if (this.closed) return;
    this.closed = true;
    const s = this.storage;
    this.processed = [];
    this.open = false;
    this.before = null;
    this.router = [];
    this.release(s);
  }

  // ---- plumbing ---------------------------------------------------------------------------------------------

  private call<T>(call: string, body: () => T): T {
    if (this.inProgress !== null) {
      throw illegalState(`${call}: ${this.inProgress} is in progress on this group (this call comes from inside it); a `
        + "group serves one call at a time (spec §11.11)");
    }
    if (this.closed) throw illegalState(`${call}: the group is closed`);
    if (this.poisonedBy !== null) {
      throw illegalState(`${call}: the group is poisoned by an earlier failure (${this.poisonedBy}); discard it and open `
        + "a new one (spec §9.2)");
    }
    if (this.modelClosed()) {
      throw illegalState(`${call}: the target this group was opened from is closed; a group cannot outlive its target (spec §11.11)`);
    }
    this.inProgress = call;
    const routing = call === "prefill" || call === "verify" || call === "commit";
    if (routing) this.router = [];
    try {
      return body();
    } catch (e) {
      if (routing) this.router = [];   // a failed call reports no router choices
      throw e;
    } finally {
      this.inProgress = null;
    }
  }

  private hasRows(call: string): number {
    if (this.processed.length === 0) throw illegalState(`${call}: the group has no rows`);
    return this.processed.length;
  }

  /** Runs one call's computation; anything but an MtpError becomes BACKEND_FAILURE with the rows unchanged. */
  private compute<T>(call: string, work: () => T): T {
    try {
      return work();
    } catch (e) {
      if (e instanceof MtpError) {
        if (e.poisoned) this.poison(`a failed ${call}`);
        throw e;
      }
      throw new MtpError("BACKEND_FAILURE", `${call}: ${e instanceof Error ? `${e.name}: ${e.message}` : String(e)} (rows unchanged)`);
    }
  }

  /** The engine's forward, its outputs checked as [B, n, V] logits and [B, s, H] taps. */
  private checkedForward(call: string, state: S, at: number[], ids: number[][], s: number, verify: boolean):
      Forwarded<S> & { logits: Float64Array; preNorm: Float64Array; postNorm: Float64Array } {
    const f = this.forward(state, at, ids, s, verify);
    const b = at.length;
    const want: [string, ArrayLike<number> | undefined, number][] = [
      ["logits", f?.logits, b * (verify ? s : 1) * this.shape.vocab],
      ["preNorm", f?.preNorm, b * s * this.shape.hidden], ["postNorm", f?.postNorm, b * s * this.shape.hidden]];
    const out = want.map(([name, x, n]) => {
      if (x === undefined || x === null || x.length !== n) {
        throw new MtpError("BACKEND_FAILURE", `${call}: the backend's forward returned ${name} of ${x?.length ?? "no"} `
          + `values, expected ${n}`);
      }
      return Float64Array.from(x);
    });
    return { logits: out[0], preNorm: out[1], postNorm: out[2], state: f.state };
  }

  private publish(next: S, after: number[]): void {
    const old = this.storage;
    this.storage = next;
    this.processed = after;
    if (old !== next) {
      try {
        this.discard(old, next);
      } catch (e) {
        this.poison("freeing superseded storage failed");
        throw e;
      }
    }
  }

  /** The caller's copy of a forward's results: logits [B, n, V], taps [B, s, H], F32. */
  private outputs(f: Forwarded<S>, b: number, n: number, s: number): TargetOutput {
    const c = this.shape;
    return { logits: Tensor.f32(f.logits, [b, n, c.vocab]), preNorm: Tensor.f32(f.preNorm, [b, s, c.hidden]),
      postNorm: Tensor.f32(f.postNorm, [b, s, c.hidden]) };
  }

  /** §13.3: checks one checkpoint (TargetContract.checkpoint's order) and returns its TargetRowState. */
  private restore(call: string, i: number, raw: unknown): TargetRowState {
    const where = `${call}: checkpoint[${i}]`;
    const c = this.shape;
    if (typeof raw !== "object" || raw === null) throw incompatibleCheckpoint(`${where} is not a target checkpoint object`);
    const cp = raw as TargetCheckpoint;
    if (cp.schema !== TARGET_SCHEMA) {
      throw incompatibleCheckpoint(`${where} has schema ${quote(cp.schema)}, expected '${TARGET_SCHEMA}' (spec §13.3)`);
    }
    if (cp.modelIdentity !== c.identity) {
      throw incompatibleCheckpoint(`${where} belongs to target ${quote(abbrev(cp.modelIdentity))}, this group's target is ${abbrev(c.identity)}`);
    }
    const p = cp.processedTokens;
    if (!isInt(p) || p < 1 || p > c.maxPositions) {
      throw incompatibleCheckpoint(`${where} has P = ${p} processed tokens, outside [1, ${c.maxPositions}] (spec §13.3)`);
    }
    const shapes = c.shapes(p);
    const layers = [c.nGdn, c.nGdn, c.nFull, c.nFull];
    const [conv, states, keys, values] = (["convWindows", "recurrentStates", "keys", "values"] as const)
      .map((name, k) => checked(where, name, cp[name], layers[k], shapes[k]));
    if (cp.digest == null) {
      throw incompatibleCheckpoint(`${where} carries no content digest; a checkpoint comes from a capture, or from a `
        + "file or peer that kept its digest (spec §13.3)");
    }
    if (cp.digest !== targetCheckpointDigest(cp as CapturedTargetCheckpoint)) {
      throw incompatibleCheckpoint(`${where} does not match its content digest: its label (schema, P, model identity) `
        + "or its tensors were changed after capture (spec §13.3)");
    }
    return { processed: p, convWindows: conv, recurrentStates: states, keys, values };
  }
}

// ---- the checks (TargetContract) ------------------------------------------------------------------------------

const isInt = (x: unknown): x is number => typeof x === "number" && Number.isInteger(x);

function abbrev(identity: unknown): string {
  const s = String(identity);
  return s.length > 12 ? s.slice(0, 12) + "…" : s;
}

/** api UntrustedText.quote: quoted, backslash and quote escaped, control characters written out, cut at 200. */
function quote(x: unknown): string {
  if (x === null || x === undefined) return "null";
  const s = String(x);
  const body = s.slice(0, QUOTE_CHARS).replace(/\\/g, "\\\\").replace(/'/g, "\\'").replace(/[\u0000-\u001f\u007f]/g, (ch) =>
    ({ "\n": "\\n", "\r": "\\r", "\t": "\\t" } as Record<string, string>)[ch] ?? `\\u${ch.charCodeAt(0).toString(16).padStart(4, "0")}`);
  return `'${body}'` + (s.length > QUOTE_CHARS ? `… (${s.length} chars)` : "");
}

function noRound(call: string, open: boolean): void {
  if (open) throw illegalState(`${call}: a verify round is open; commit it first (spec §13.3)`);
}

function positions(call: string, held: number[], added: number, c: TargetShape): void {
  held.forEach((h, b) => {
    if (h + added > c.maxPositions) {
      throw invalidArgument(`${call}: row ${b} has processed ${h} tokens; ${added} more would bring it to ${h + added}, `
        + `more than the ${c.maxPositions} a row may hold (spec §11.13)`);
    }
  });
}

function forwardSize(call: string, rows: number, positions: number, c: TargetShape, advice: string): void {
  const n = rows * positions * c.widest;
  if (n > MAX_ELEMENTS) {
    throw invalidArgument(`${call}: one forward of ${rows} rows × ${positions} positions × ${c.widest} values per token `
      + `needs ${n} elements in one array, more than ${MAX_ELEMENTS} (spec §11.13); ${advice}`);
  }
}

function describe(t: unknown): string {
  return t instanceof Tensor ? t.describe() : String(t);
}

/** tokens [B, L] (I32 or I64, L ≥ 1, ids in [0, V)), as RowContract.tokens checks them. */
function tokensOf(call: string, t: unknown, rows: number, vocab: number): number[][] {
  if (t === null || t === undefined) throw invalidArgument(`${call}: tokens is null`);
  if (!(t instanceof Tensor) || !t.valid) {
    throw invalidArgument(`${call}: tokens ${describe(t)} is not a valid tensor (its byte count does not match its dtype and shape)`);
  }
  if (t.dtype !== "I32" && t.dtype !== "I64") throw invalidArgument(`${call}: tokens dtype ${t.dtype}, expected I32 or I64`);
  if (t.rank !== 2 || t.shape[0] !== rows) {
    throw invalidArgument(`${call}: tokens shape ${t.describe()}, expected [${rows}, L] (one row per group row, spec §5.4)`);
  }
  const n = t.shape[1];
  if (n < 1) throw invalidArgument(`${call}: tokens has L = 0 new positions, expected L ≥ 1 (spec §5.4)`);
  if (n > MAX_POSITIONS) {
    throw invalidArgument(`${call}: tokens has L = ${n} positions, more than the ${MAX_POSITIONS} a row may hold (spec §11.13)`);
  }
  const ids = t.ints();
  const out: number[][] = [];
  for (let b = 0; b < rows; b++) {
    const row: number[] = [];
    for (let p = 0; p < n; p++) {
      const id = ids[b * n + p];
      if (id < 0n || id >= BigInt(vocab)) throw invalidArgument(`${call}: tokens[${b}, ${p}] = ${id} outside the vocabulary [0, ${vocab})`);
      row.push(Number(id));
    }
    out.push(row);
  }
  return out;
}

/** A checkpoint tensor: absent when layers = 0, else F32 of `shape`, every element finite. */
function checked(where: string, name: string, t: unknown, layers: number, shape: number[]): Float64Array {
  if (layers === 0) {
    if (t !== null && t !== undefined) throw incompatibleCheckpoint(`${where} carries ${name} but the target has no layer that holds them`);
    return new Float64Array(0);
  }
  if (t === null || t === undefined) throw incompatibleCheckpoint(`${where} has no ${name} tensor`);
  if (!(t instanceof Tensor) || !t.valid) {
    throw incompatibleCheckpoint(`${where} ${name} ${describe(t)} is not a valid tensor (its byte count does not match its dtype and shape)`);
  }
  if (t.dtype !== "F32") throw incompatibleCheckpoint(`${where} ${name} dtype ${t.dtype}, expected F32`);
  if (t.shape.length !== shape.length || t.shape.some((s, i) => s !== shape[i])) {
    throw incompatibleCheckpoint(`${where} ${name} shape ${t.describe()}, expected [${shape.join(", ")}]`);
  }
  const a = t.floats();
  const bad = a.findIndex((x) => !Number.isFinite(x));
  if (bad >= 0) throw incompatibleCheckpoint(`${where} ${name} element ${bad} is not finite`);
  return a;
}

function f32(x: ArrayLike<number> | Tensor | null, shape: number[]): Tensor {
  const n = shape.reduce((a, b) => a * b, 1);
  if (x instanceof Tensor) {
    if (x.dtype !== "F32" || x.describe() !== `F32[${shape.join(", ")}]`) {
      throw new MtpError("BACKEND_FAILURE", `capture: the backend exported ${x.describe()}, expected F32[${shape.join(", ")}]`);
    }
    return x;
  }
  if (x === null || x.length !== n) {
    throw new MtpError("BACKEND_FAILURE", `capture: the backend exported ${x === null ? "nothing" : `${x.length} values`}, expected [${shape.join(", ")}]`);
  }
  return Tensor.f32(x, shape);
}

// ---- serving a target skeleton --------------------------------------------------------------------------------

export interface TargetOptions<T> {
  /** The engine's target from loadTarget's arguments (options already refused when not empty). */
  load(args: LoadTargetArgs): T;
  /** A group of no rows over `target`; targetOpenRows appends its checkpoints to it (all or nothing). */
  rows(target: T, args: LoadTargetArgs): TargetRowsSkeleton<unknown>;
  numerics?: string;
  /** true for a MoE target whose forward pushes its router choices onto `router`: the hello claims
   * `capabilities.targetRouterChoices` and prefill/verify replies carry them as `experts` (WIRE.md §4, §5.2). */
  routerChoices?: boolean;
}

/** `engine` (e.g. rowsEngine(…), or an instance of your own Engine class) that also runs the hybrid target on a
 * TargetRowsSkeleton subclass: its hello claims `capabilities.target` (and `targetRouterChoices` with
 * `o.routerChoices`) and its loadTarget opens groups of `o.rows` (WIRE.md §5.2). */
export function withTarget<T>(engine: Engine, o: TargetOptions<T>): Engine {
  return {
    name: engine.name,
    version: engine.version,
    hello(): HelloResult {
      const r = engine.hello();
      const routed = o.routerChoices ? { targetRouterChoices: true } : {};
      return { ...r, capabilities: { ...(r.capabilities ?? {}), target: true, ...routed } };
    },
    load: engine.load.bind(engine),
    loadTarget(a: LoadTargetArgs): TargetModel {
      const keys = Object.keys(a.options ?? {});
      if (keys.length) throw invalidArgument(`loadTarget: unknown option(s) ${keys.sort().join(", ")}; this engine takes none`);
      if (typeof a.directory !== "string") throw invalidArgument(`loadTarget: directory = ${a.directory}, expected a path`);
      const target = o.load(a);
      return {
        numerics: o.numerics,
        openRows(checkpoints: unknown): TargetRows {
          const g = o.rows(target, a);
          g.append(checkpoints);
          return g;
        },
      };
    },
  };
}
