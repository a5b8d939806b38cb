// The row contract once (spec §5, §11.1, §11.11), the TypeScript twin of the Java skeleton AbstractDraftRows and its
// checks RowContract: a DraftRows whose calls validate (in the contract's order, with the same kinds and messages),
// keep the round's bookkeeping, chunk prefills, publish atomically and seal checkpoints with their content digest,
// over an engine that supplies only its storage S of all rows and its forward/sample maths.
//
// Every call runs in three steps. Validate the group's state and every argument. Compute new storage from the
// published one: an engine may write into buffers the published storage shares, but only at positions at or past
// each row's published length, which nothing reads. Publish with plain assignments that cannot fail. A refused or
// failed call therefore changes nothing; anything but an MtpError thrown while computing is answered
// BACKEND_FAILURE with the rows unchanged (not poisoned). An engine whose device cannot be trusted after a failure
// calls poison().

import {
  type CapturedCheckpoint, type Checkpoint, checkpointDigest, type DraftModel, type DraftRows, type Engine,
  type HelloResult, type LoadArgs, MtpError, type RouterChoice, type RowSampler, type Tolerance, Tensor, illegalState,
  incompatibleCheckpoint, invalidArgument, serve,
} from "./mtp_wire.js";

export const SCHEMA = "qwen-mtp-v1";      // the drafter checkpoint schema (spec §6)
export const MAX_DEPTH = 64;              // the deepest draft round a call may ask for
export const MAX_POSITIONS = 1 << 20;     // the most drafter positions P − 1 a row may hold (spec §11.13)
export const MAX_ELEMENTS = 2 ** 30;      // the most elements one array of a call may need (spec §11.13)
export const MAX_HIDDEN = 2 ** 51;        // the largest hidden magnitude a call may pass (spec §11.14)
export const MIN_TEMPERATURE = 1e-30;     // below it f32(1/T) times a log-prob overflows (spec §7)
export const PREFILL_CHUNK = 2048;        // prefill forwards at most this many positions at once (spec §5.4)
const FLOATS = ["F32", "F16", "BF16"];

/** What the checks need of a model (spec §11.13): identity, V, H, nKV, D, and the widest per-token vector of one
 * forward without the logits (2·H, 2·nH·D, nKV·D, the MLP's width; an MoE engine adds its expert widths). */
export class RowShape {
  readonly widest: number;
  readonly maxPositions: number;

  constructor(readonly identity: string, readonly vocab: number, readonly hidden: number, readonly kvHeads: number,
              readonly headDim: number, widest = 0) {
    this.widest = Math.max(widest, 2 * hidden, kvHeads * headDim);
    this.maxPositions = Math.min(MAX_POSITIONS, Math.floor(MAX_ELEMENTS / (kvHeads * headDim)));
  }

  /** From load's `config` (WIRE.md §5): hiddenSize, numKvHeads, headDim, vocabSize; numHeads and intermediateSize
   * widen the forward-size limit when present. */
  static of(config: Record<string, unknown> | null, identity: unknown, widest = 0): RowShape {
    const c = config ?? {};
    const need = (k: string): number => {
      const v = c[k];
      if (!isInt(v) || v <= 0) throw new MtpError("INCOMPATIBLE_MODEL", `load: config.${k} = ${v}, expected a positive integer`);
      return v;
    };
    const [h, nkv, d, v] = ["hiddenSize", "numKvHeads", "headDim", "vocabSize"].map(need);
    if (typeof identity !== "string") throw invalidArgument(`load: identity = ${identity}, expected a string`);
    const more = (k: string) => (isInt(c[k]) ? c[k] as number : 0); // numHeads, intermediateSize: optional
    return new RowShape(identity, v, h, nkv, d, Math.max(widest, 2 * more("numHeads") * d, more("intermediateSize")));
  }
}

/** One row's drafter state: keys, values [nKV, P−1, D] row-major (null when P = 1), hidden [H]. */
export interface RowState {
  keys: Float64Array | null;
  values: Float64Array | null;
  hidden: Float64Array;
}

/** What export returns: a RowState, or the same as Tensors (keys, values [1, nKV, P−1, D], hidden [1, 1, H]). */
export interface ExportedRow {
  keys: ArrayLike<number> | Tensor | null;
  values: ArrayLike<number> | Tensor | null;
  hidden: ArrayLike<number> | Tensor;
}

/** A group of rows over an engine's storage S. Subclasses implement the six storage/maths methods; every contract
 * method (append … close) is the skeleton's. */
export abstract class RowsSkeleton<S> implements DraftRows {
  private storage: S;
  private lengths: number[] = [];   // [B] committed drafter positions, P − 1
  private warm: boolean[] = [];     // [B] holds a retained hidden (restored or prefilled)
  private roundOpen = false;
  private depth = 0;
  private before: number[] | null = null;    // [B] lengths when the open round began
  private drafts: number[][] | null = null;  // [B][depth] the open round's proposals
  private closed = false;
  private poisonedBy: string | null = null;
  private inProgress: string | null = null;
  /** The (row, position, experts) of the last prefill/draft/commit's MoE forward rows; `forward` pushes them. */
  router: RouterChoice[] = [];

  constructor(readonly shape: RowShape, empty: S) {
    this.storage = empty;
  }

  // ---- what an engine supplies ------------------------------------------------------------------------------

  /** Storage of `state`'s rows followed by one row per entry: a checked RowState, or null for a cold row. */
  protected abstract appendRows(state: S, restored: (RowState | null)[]): S;

  /** Storage holding row keep[i] of `state` as row i (spec §5.3); `lengths` are theirs. The default serves storage
   * that is an array of one entry per row. */
  protected keepRows(state: S, keep: number[], _lengths: number[]): S {
    if (!Array.isArray(state)) throw new Error("keepRows: storage other than an array of one entry per row needs its own");
    return keep.map((i) => state[i]) as S;
  }

  /** One forward of s positions per row (spec §3): row b appends K/V at at[b] … at[b]+s−1 for ids[b] ([s] token
   * ids) and hin[b] ([s·H] input hiddens), or, when hin is null (s = 1), its retained hidden. Only rows with rows[b]
   * (all when null) count. Returns the storage and each counted row's output hiddens [s·H]. */
  protected abstract forward(state: S, at: number[], rows: boolean[] | null, ids: number[][],
                             hin: Float64Array[] | null): [S, (Float64Array | null)[]];

  /** `state` with the retained hiddens replaced by hidden[b] ([H]). */
  protected abstract retain(state: S, hidden: Float64Array[]): S;

  /** One draft token of row `row` from its output hidden y [H] at `step` (spec §1.7, §7); used by draftChain. */
  protected abstract sample(row: number, y: Float64Array, sampler: RowSampler, step: bigint): number;

  /** Row `row`'s KV of its first `length` positions (null when 0) and retained hidden (spec §6). */
  protected abstract export(state: S, row: number, length: number): ExportedRow;

  /** A draft round of depth ≥ 1 (spec §5.7): the default forwards the pending tokens from the retained hiddens,
   * samples, and feeds each output back `depth` times. */
  protected draftChain(state: S, at: number[], pending: number[], depth: number, steps: bigint[],
                       sampling: RowSampler[]): [number[][], S] {
    const b = at.length;
    let ids = pending.map((t) => [t]);
    let hin: Float64Array[] | null = null;
    const out: number[][] = pending.map(() => []);
    for (let t = 0; t < depth; t++) {
      const [next, ys] = this.forward(state, at.map((a) => a + t), null, ids, hin);
      state = next;
      const toks = ys.map((y, r) => this.sample(r, y as Float64Array, sampling[r], steps[r] + BigInt(t)));
      for (let r = 0; r < b; r++) out[r].push(toks[r]);
      ids = toks.map((x) => [x]);
      hin = ys as Float64Array[];
    }
    return [out, state];
  }

  /** Frees `state` (the group is closing). */
  protected release(_state: S): void {}

  /** True once the model this group was opened from is closed (the wire server checks this itself). */
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
    return this.lengths.length;
  }

  /** The drafter positions P − 1 of each row at its last committed boundary, or after the open draft. */
  drafterLengths(): number[] {
    return this.lengths.slice();
  }

  routerChoices(): readonly RouterChoice[] {
    return this.router.slice();
  }

  append(checkpoints: unknown): void {
    this.call("append", () => {
      noRound("append", this.roundOpen);
      if (!Array.isArray(checkpoints)) throw invalidArgument("append: checkpoint list is null (use null entries for cold rows)");
      const restored = checkpoints.map((cp, i) => (cp === null || cp === undefined ? null : this.restore("append", i, cp)));
      if (restored.length === 0) return;
      const c = this.shape;
      const lengths = this.lengths.concat(restored.map((r) => (r === null || r.keys === null ? 0 : r.keys.length / (c.kvHeads * c.headDim))));
      const warm = this.warm.concat(restored.map((r) => r !== null));
      const next = this.compute("append", () => this.appendRows(this.storage, restored));
      this.reached("append", "publish");
      this.publish(next, lengths, warm);
    });
  }

  filterRows(keep: unknown): void {
    this.call("filterRows", () => {
      noRound("filterRows", this.roundOpen);
      const b = this.rowCount();
      if (!Array.isArray(keep)) throw invalidArgument("filterRows: keep is null");
      const seen = new Set<number>();
      keep.forEach((r, i) => {
        if (!isInt(r) || r < 0 || r >= b) throw invalidArgument(`filterRows: keep[${i}] = ${r} outside [0, ${b})`);
        if (seen.has(r)) throw invalidArgument(`filterRows: keep[${i}] = ${r} repeats a row`);
        seen.add(r);
      });
      const kept = (keep as number[]).slice();
      const lengths = kept.map((r) => this.lengths[r]);
      const warm = kept.map((r) => this.warm[r]);
      const next = this.compute("filterRows", () => this.keepRows(this.storage, kept, lengths.slice()));
      this.reached("filterRows", "publish");
      this.publish(next, lengths, warm);
    });
  }

  prefill(tokens: unknown, context: unknown): void {
    this.call("prefill", () => {
      noRound("prefill", this.roundOpen);
      const b = this.rowCount();
      if (b === 0) throw illegalState("prefill: the group has no rows");
      const ids = tokensOf("prefill", tokens, b, this.shape.vocab);
      const n = ids[0].length;
      const ctx = contextOf("prefill", context, b, n, this.shape.hidden, "the taps at the same L positions as tokens");
      positions("prefill", this.lengths, this.warm.map((w) => (w ? 1 : 0) + n - 1), this.shape, `a prefill of L = ${n}`);
      forwardSize("prefill", b, Math.min(n, PREFILL_CHUNK), this.shape, false,
        "split the prefill into shorter ones (a split prefill equals one, spec §10.1.8)");
      const at = this.lengths.slice();
      const next = this.compute("prefill", () => this.prefillSteps(ids, ctx, at));
      this.reached("prefill", "publish");
      this.publish(next, at, this.warm.map(() => true));
    });
  }

  private prefillSteps(ids: number[][], ctx: Float64Array, at: number[]): S {
    const b = ids.length;
    const n = ids[0].length;
    const h = this.shape.hidden;
    const bridge = this.warm.slice();
    let s = this.storage;
    if (bridge.some((x) => x)) { // 1. each row with a retained hidden pairs tokens[b, 0] with it; cold rows keep nothing
      this.reached("prefill", "bridge forward");
      [s] = this.forward(s, at.slice(), bridge, ids.map((r) => [r[0]]), null);
      for (let r = 0; r < b; r++) at[r] += bridge[r] ? 1 : 0;
    }
    for (let pos = 0; pos + 1 < n; pos += PREFILL_CHUNK) { // 2. token p+1 pairs with hidden p, in chunks
      const m = Math.min(pos + PREFILL_CHUNK, n - 1) - pos;
      this.reached("prefill", "chunk forward");
      [s] = this.forward(s, at.slice(), null, ids.map((r) => r.slice(pos + 1, pos + 1 + m)),
        ids.map((_, r) => ctx.slice((r * n + pos) * h, (r * n + pos + m) * h)));
      for (let r = 0; r < b; r++) at[r] += m;
    }
    this.reached("prefill", "retain hidden"); // 3. the last tap of each row
    return this.retain(s, ids.map((_, r) => ctx.slice((r * n + n - 1) * h, (r * n + n) * h)));
  }

  draft(pending: unknown, depth: unknown, steps: unknown, sampling: unknown): number[][] {
    return this.call("draft", () => {
      noRound("draft", this.roundOpen);
      const b = this.rowCount();
      if (b === 0) throw illegalState("draft: the group has no rows");
      draftArguments(pending, depth, steps, sampling, b, this.shape.vocab);
      const d = depth as number;
      this.warm.forEach((w, r) => {
        if (!w) throw illegalState(`draft: row ${r} has no retained hidden (a cold row must be prefilled first, spec §5.7)`);
      });
      positions("draft", this.lengths, this.lengths.map(() => Math.max(1, d) + (d > 0 ? 1 : 0)), this.shape,
        `a round of depth ${d} and its commit`);
      forwardSize("draft", b, 1, this.shape, true, "draft fewer rows at a time");
      const from = this.lengths.slice();
      const ids = (pending as number[]).slice();
      const at = (steps as unknown[]).map((x) => BigInt(x as number | bigint));
      const samplers = (sampling as RowSampler[]).slice();
      const [toks, next] = this.compute("draft", (): [number[][], S] => {
        if (d === 0) { // the pending row only; no logits, no sampling (spec §5.7, §11.2)
          this.reached("draft", "pending forward");
          return [ids.map(() => []), this.forward(this.storage, from.slice(), null, ids.map((t) => [t]), null)[0]];
        }
        return this.draftChain(this.storage, from.slice(), ids.slice(), d, at.slice(), samplers);
      });
      const proposals = this.proposals(toks, b, d);
      this.reached("draft", "publish");
      this.publish(next, from.map((f) => f + Math.max(1, d)), this.warm);
      this.before = from;
      this.drafts = proposals;
      this.depth = d;
      this.roundOpen = true;
      return proposals.map((p) => p.slice());
    });
  }

  commit(accepted: unknown, context: unknown): void {
    this.call("commit", () => {
      if (!this.roundOpen) throw illegalState("commit: no draft round is open (spec §5.8)");
      const b = this.rowCount();
      const d = this.depth;
      if (!Array.isArray(accepted)) throw invalidArgument("commit: accepted is null");
      if (accepted.length !== b) throw invalidArgument(`commit: accepted has ${accepted.length} entries, expected ${b} (one per row)`);
      accepted.forEach((a, r) => {
        if (!isInt(a) || a < 0 || a > d) {
          throw invalidArgument(`commit: accepted[${r}] = ${a} outside [0, ${d}], the draft depth (spec §5.8); rows unchanged`);
        }
      });
      const w = d + 1;
      const h = this.shape.hidden;
      const ctx = contextOf("commit", context, b, w, h, `width = depth + 1 = ${w} verify taps`);
      const acc = (accepted as number[]).slice();
      const before = this.before as number[];
      const kept = acc.map((a, r) => before[r] + Math.min(a + 1, Math.max(1, d)));
      const full = acc.map((a) => d > 0 && a === d);
      const next = this.compute("commit", () => {
        let s = this.storage;
        if (full.some((x) => x)) { // full acceptance: the last proposal's row from the true hidden preceding it
          this.reached("commit", "full-acceptance forward");
          [s] = this.forward(s, kept.slice(), full, (this.drafts as number[][]).map((p) => [p[d - 1]]),
            acc.map((_, r) => ctx.slice((r * w + d - 1) * h, (r * w + d) * h)));
        }
        this.reached("commit", "retain hidden"); // the true hidden at the last processed position
        return this.retain(s, acc.map((a, r) => ctx.slice((r * w + a) * h, (r * w + a + 1) * h)));
      });
      this.reached("commit", "publish");
      this.publish(next, kept.map((k, r) => k + (full[r] ? 1 : 0)), this.warm);
      this.before = null;
      this.drafts = null;
      this.depth = 0;
      this.roundOpen = false;
    });
  }

  capture(row: unknown): CapturedCheckpoint {
    return this.call("capture", () => {
      noRound("capture", this.roundOpen);
      const b = this.rowCount();
      if (!isInt(row) || row < 0 || row >= b) throw invalidArgument(`capture: row ${row} outside [0, ${b})`);
      if (!this.warm[row]) {
        throw illegalState(`capture: row ${row} has consumed no target token yet (a cold row must be prefilled first, spec §11.1)`);
      }
      const kept = this.lengths[row];
      const t = this.compute("capture", () => this.export(this.storage, row, kept));
      const c = this.shape;
      const kv = [1, c.kvHeads, kept, c.headDim];
      const cp: CapturedCheckpoint = {
        schema: SCHEMA, processedTokens: kept + 1, draftOffset: kept, modelIdentity: c.identity,
        keys: kept ? f32(t.keys, kv) : null, values: kept ? f32(t.values, kv) : null, hidden: f32(t.hidden, [1, 1, c.hidden]),
      };
      cp.digest = checkpointDigest(cp);
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
    this.lengths = [];
    this.warm = [];
    this.roundOpen = false;
    this.before = null;
    this.drafts = null;
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
      throw illegalState(`${call}: the model this group was opened from is closed; a group cannot outlive its model (spec §11.11)`);
    }
    this.inProgress = call;
    try {
      return body();
    } finally {
      this.inProgress = null;
    }
  }

  /** Runs one call's computation; anything but an MtpError becomes BACKEND_FAILURE with the rows unchanged. */
  private compute<T>(call: string, work: () => T): T {
    if (call === "prefill" || call === "draft" || call === "commit") this.router = [];
    try {
      return work();
    } catch (e) {
      if (e instanceof MtpError) {
        if (e.poisoned) this.poison(`a failed ${call}`);
        throw e;
      }
      this.router = [];
      throw new MtpError("BACKEND_FAILURE", `${call}: ${e instanceof Error ? `${e.name}: ${e.message}` : String(e)} (rows unchanged)`);
    }
  }

  private publish(next: S, lengths: number[], warm: boolean[]): void {
    const old = this.storage;
    this.storage = next;
    this.lengths = lengths;
    this.warm = warm;
    if (old !== next) {
      try {
        this.discard(old, next);
      } catch (e) {
        this.poison("freeing superseded storage failed");
        throw e;
      }
    }
  }

  private proposals(tokens: unknown, b: number, depth: number): number[][] {
    const v = this.shape.vocab;
    if (!Array.isArray(tokens) || tokens.length !== b) {
      throw new MtpError("BACKEND_FAILURE", `draft: the backend returned ${Array.isArray(tokens) ? `${tokens.length} rows of proposals` : "no proposals"}, expected ${b}`);
    }
    return tokens.map((row: unknown, r) => {
      if (!Array.isArray(row) || row.length !== depth) {
        throw new MtpError("BACKEND_FAILURE", `draft: the backend returned row ${r} with ${Array.isArray(row) ? row.length : "no"} proposals, expected ${depth}`);
      }
      row.forEach((t, i) => {
        if (!isInt(t) || t < 0 || t >= v) {
          throw new MtpError("BACKEND_FAILURE", `draft: the backend proposed token ${t} for row ${r} position ${i}, outside [0, ${v})`);
        }
      });
      return row.slice() as number[];
    });
  }

  /** §6, §11.1: checks one checkpoint (RowContract.checkpoint's order) and returns its RowState. */
  private restore(call: string, i: number, raw: unknown): RowState {
    const where = `${call}: checkpoint[${i}]`;
    const c = this.shape;
    if (typeof raw !== "object" || raw === null) throw incompatibleCheckpoint(`${where} is not a checkpoint object`);
    const cp = raw as Checkpoint;
    if (cp.schema !== SCHEMA) throw incompatibleCheckpoint(`${where} has schema '${cp.schema}', expected '${SCHEMA}' (spec §6)`);
    if (cp.modelIdentity !== c.identity) {
      throw incompatibleCheckpoint(`${where} belongs to model ${abbrev(cp.modelIdentity)}, this group's model is ${abbrev(c.identity)}`);
    }
    const p = cp.processedTokens;
    const off = cp.draftOffset;
    if (!isInt(p) || !isInt(off) || p < 1 || off !== p - 1) {
      throw incompatibleCheckpoint(`${where} has invalid paired alignment: draftOffset = ${off} with processedTokens = `
        + `${p}, expected draftOffset = P − 1 (spec §6)`);
    }
    if (p - 1 > c.maxPositions) {
      throw incompatibleCheckpoint(`${where} has P − 1 = ${p - 1} positions, more than the ${c.maxPositions} a row of this model may hold (spec §11.13)`);
    }
    const kv = [1, c.kvHeads, p - 1, c.headDim];
    let keys: Float64Array | null = null;
    let values: Float64Array | null = null;
    if (p === 1) {
      if (cp.keys != null || cp.values != null) throw incompatibleCheckpoint(`${where} has P = 1 but carries keys/values (spec §6)`);
    } else {
      keys = checked(where, "keys", cp.keys, kv);
      values = checked(where, "values", cp.values, kv);
    }
    const hidden = checked(where, "hidden", cp.hidden, [1, 1, c.hidden]);
    if (cp.digest == null) {
      throw incompatibleCheckpoint(`${where} carries no content digest; a checkpoint comes from a capture, or from a `
        + "file or peer that kept its digest (spec §6)");
    }
    if (cp.digest !== checkpointDigest(cp as CapturedCheckpoint)) {
      throw incompatibleCheckpoint(`${where} does not match its content digest: its label (schema, P, draftOffset, `
        + "model identity) or its tensors were changed after capture (spec §6)");
    }
    return { keys, values, hidden };
  }
}

// ---- the checks (RowContract) ---------------------------------------------------------------------------------

const isInt = (x: unknown): x is number => typeof x === "number" && Number.isInteger(x);

function abbrev(identity: unknown): string {
  const s = String(identity);
  return s.length > 12 ? s.slice(0, 12) + "…" : s;
}

function noRound(call: string, roundOpen: boolean): void {
  if (roundOpen) throw illegalState(`${call}: a draft round is open; commit it first (spec §9.2)`);
}

function positions(call: string, held: number[], added: number[], c: RowShape, what: string): void {
  held.forEach((h, b) => {
    if (h + added[b] > c.maxPositions) {
      throw invalidArgument(`${call}: row ${b} holds ${h} drafter positions; ${what} would bring it to ${h + added[b]}, `
        + `more than the ${c.maxPositions} a row may hold (spec §11.13)`);
    }
  });
}

function forwardSize(call: string, rows: number, positions: number, c: RowShape, withLogits: boolean, advice: string): void {
  const w = withLogits ? Math.max(c.widest, c.vocab) : c.widest;
  const n = rows * positions * w;
  if (n > MAX_ELEMENTS) {
    throw invalidArgument(`${call}: one forward of ${rows} rows × ${positions} positions × ${w} values per token needs `
      + `${n} elements in one array, more than ${MAX_ELEMENTS} (spec §11.13); ${advice}`);
  }
}

function describe(t: unknown): string {
  return t instanceof Tensor ? t.describe() : String(t);
}

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

function f32(x: ArrayLike<number> | Tensor | null, shape: number[]): Tensor {
  if (x instanceof Tensor) return x;
  if (x === null) throw new Error("export returned no tensor where one was expected");
  return Tensor.f32(x, shape);
}

function jfloat(v: number): string {
  return Number.isNaN(v) ? "NaN" : String(v);
}

function contextOf(call: string, t: unknown, rows: number, width: number, hidden: number, rule: string): Float64Array {
  if (t === null || t === undefined) throw invalidArgument(`${call}: context is null`);
  if (!(t instanceof Tensor) || !t.valid) {
    throw invalidArgument(`${call}: context ${describe(t)} is not a valid tensor (its byte count does not match its dtype and shape)`);
  }
  if (!FLOATS.includes(t.dtype)) throw invalidArgument(`${call}: context dtype ${t.dtype}, expected F32, F16 or BF16`);
  if (t.rank !== 3 || t.shape[0] !== rows || t.shape[1] !== width || t.shape[2] !== hidden) {
    throw invalidArgument(`${call}: context shape ${t.describe()}, expected [${rows}, ${width}, ${hidden}] (${rule})`);
  }
  if (t.size > MAX_ELEMENTS) {
    throw invalidArgument(`${call}: context has ${t.size} elements, more than the ${MAX_ELEMENTS} one call may pass (spec §11.13); split it into shorter calls`);
  }
  const a = t.floats();
  const i = a.findIndex((x) => !Number.isFinite(x) || Math.abs(x) > MAX_HIDDEN);
  if (i >= 0) {
    const per = width * hidden;
    const [r, p, k] = [Math.floor(i / per), Math.floor((i % per) / hidden), i % hidden];
    throw invalidArgument(`${call}: context[${r}, ${p}, ${k}] (row ${r}, position ${p}) = ${jfloat(a[i])}`
      + (Number.isFinite(a[i]) ? ", magnitude above 2^51, where the block's f32 RMSNorm sum of squares could overflow (spec §11.14)"
        : " is not finite"));
  }
  return a;
}

function draftArguments(pending: unknown, depth: unknown, steps: unknown, sampling: unknown, rows: number, vocab: number): void {
  if (!Array.isArray(pending) || !Array.isArray(steps) || !Array.isArray(sampling)) {
    throw invalidArgument("draft: pending, steps and sampling must not be null");
  }
  if (pending.length !== rows) throw invalidArgument(`draft: pending has ${pending.length} entries, expected ${rows} (one per row)`);
  pending.forEach((t, b) => {
    if (!isInt(t) || t < 0 || t >= vocab) throw invalidArgument(`draft: pending[${b}] = ${t} outside the vocabulary [0, ${vocab})`);
  });
  if (!isInt(depth) || depth < 0 || depth > MAX_DEPTH) throw invalidArgument(`draft: depth = ${depth} outside [0, ${MAX_DEPTH}]`);
  if (steps.length !== rows) throw invalidArgument(`draft: steps has ${steps.length} entries, expected ${rows}`);
  steps.forEach((s, b) => {
    const ok = (isInt(s) && s >= 0) || (typeof s === "bigint" && s >= 0n);
    if (!ok) throw invalidArgument(`draft: steps[${b}] = ${s} is negative`);
  });
  if (sampling.length !== rows) throw invalidArgument(`draft: sampling has ${sampling.length} row samplers, expected ${rows}`);
  sampling.forEach((s, b) => checkSampler(b, s));
}

/** One row's sampler (api RowSampler's checks): temperature 0 or ≥ 1e-30, top_k ≥ 0, top_p in (0, 1]. */
function checkSampler(r: number, s: unknown): void {
  if (s === null || typeof s !== "object") throw invalidArgument(`draft: sampling[${r}] is not a sampler`);
  const { temperature: t, topK: k, topP: p, seed } = s as RowSampler;
  if (typeof t !== "number" || !Number.isFinite(t) || t < 0) {
    throw invalidArgument(`draft: sampling[${r}] temperature = ${t} must be finite and ≥ 0`);
  }
  if (t > 0 && t < MIN_TEMPERATURE) {
    throw invalidArgument(`draft: sampling[${r}] temperature = ${t} is in (0, ${MIN_TEMPERATURE}): f32(1/T) times a `
      + "log-prob overflows and the draw would not be the argmax; use 0 for greedy (spec §7)");
  }
  if (!isInt(k) || k < 0) throw invalidArgument(`draft: sampling[${r}] top_k = ${k} must be ≥ 0 (0 disables it)`);
  if (typeof p !== "number" || !(p > 0 && p <= 1)) throw invalidArgument(`draft: sampling[${r}] top_p = ${p} must be in (0, 1] (1 disables it)`);
  const okSeed = (typeof seed === "bigint" && seed >= 0n && seed < 1n << 64n) || (isInt(seed) && seed >= 0);
  if (!okSeed) throw invalidArgument(`draft: sampling[${r}] seed = ${String(seed)} must be an unsigned 64-bit integer`);
}

function checked(where: string, name: string, t: unknown, shape: number[]): Float64Array {
  if (t === null || t === undefined) throw incompatibleCheckpoint(`${where} has no ${name} tensor`);
  if (!(t instanceof Tensor) || !t.valid) {
    throw incompatibleCheckpoint(`${where} ${name} ${describe(t)} is not a valid tensor (its byte count does not match its dtype and shape)`);
  }
  if (!FLOATS.includes(t.dtype)) throw incompatibleCheckpoint(`${where} ${name} dtype ${t.dtype}, expected F32, F16 or BF16`);
  if (t.shape.length !== shape.length || t.shape.some((s, i) => s !== shape[i])) {
    throw incompatibleCheckpoint(`${where} ${name} shape ${t.describe()}, expected [${shape.join(", ")}]`);
  }
  const a = t.floats();
  const bad = a.findIndex((x) => !Number.isFinite(x));
  if (bad >= 0) throw incompatibleCheckpoint(`${where} ${name} element ${bad} is not finite`);
  if (name === "hidden") {
    const huge = a.findIndex((x) => Math.abs(x) > MAX_HIDDEN);
    if (huge >= 0) {
      throw incompatibleCheckpoint(`${where} hidden element ${huge} = ${a[huge]}, magnitude above 2^51, where the block's `
        + "f32 RMSNorm sum of squares could overflow (spec §11.14)");
    }
  }
  return a;
}

// ---- serving a skeleton engine --------------------------------------------------------------------------------

export const F32_TOLERANCE: Tolerance = { name: "f32", tokenGap: 1e-4, kvNmse: 1e-9, hiddenNmse: 0 };

export interface RowsEngineOptions<M> {
  name: string;
  version: string;
  /** The engine's model from load's arguments (options already refused when not empty). */
  load(args: LoadArgs): M;
  /** A group of no rows over `model`; openRows appends its checkpoints to it (all or nothing). */
  rows(model: M, args: LoadArgs): RowsSkeleton<unknown>;
  description?: string;
  numerics?: string;
  tolerance?: Tolerance;
  /** Added to or replacing the defaults: greedy only, F32/F16/BF16 taps, 64 rows, depth 64. */
  capabilities?: Record<string, unknown>;
}

/** An Engine over a RowsSkeleton subclass. */
export function rowsEngine<M>(o: RowsEngineOptions<M>): Engine {
  return {
    name: o.name,
    version: o.version,
    hello(): HelloResult {
      const r: HelloResult = {
        profiles: [{ label: o.name, options: {}, tolerance: o.tolerance ?? F32_TOLERANCE }],
        capabilities: { seededSampling: false, tapDtypes: FLOATS.slice(), maxRows: 64, maxDepth: MAX_DEPTH, ...o.capabilities },
      };
      if (o.description) r.description = o.description;
      if (o.numerics) r.numerics = o.numerics;
      return r;
    },
    load(a: LoadArgs): DraftModel {
      const keys = Object.keys(a.options ?? {});
      if (keys.length) throw invalidArgument(`load: unknown option(s) ${keys.sort().join(", ")}; this engine takes none`);
      const model = o.load(a);
      return {
        numerics: o.numerics,
        openRows(checkpoints: unknown): DraftRows {
          const g = o.rows(model, a);
          g.append(checkpoints);
          return g;
        },
      };
    },
  };
}

/** serve(rowsEngine(options)): the whole main of a skeleton engine. */
export function serveRows<M>(o: RowsEngineOptions<M>): void {
  serve(rowsEngine(o));
}
