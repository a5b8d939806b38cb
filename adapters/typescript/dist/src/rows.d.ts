import { type CapturedCheckpoint, type DraftRows, type Engine, type LoadArgs, type RouterChoice, type RowSampler, type Tolerance, Tensor } from "./mtp_wire.js";
export declare const SCHEMA = "qwen-mtp-v1";
export declare const MAX_DEPTH = 64;
export declare const MAX_POSITIONS: number;
export declare const MAX_ELEMENTS: number;
export declare const MAX_HIDDEN: number;
export declare const MIN_TEMPERATURE = 1e-30;
export declare const PREFILL_CHUNK = 2048;
/** What the checks need of a model (spec §11.13): identity, V, H, nKV, D, and the widest per-token vector of one
 * forward without the logits (2·H, 2·nH·D, nKV·D, the MLP's width; an MoE engine adds its expert widths). */
export declare class RowShape {
    readonly identity: string;
    readonly vocab: number;
    readonly hidden: number;
    readonly kvHeads: number;
    readonly headDim: number;
    readonly widest: number;
    readonly maxPositions: number;
    constructor(identity: string, vocab: number, hidden: number, kvHeads: number, headDim: number, widest?: number);
    /** From load's `config` (WIRE.md §5): hiddenSize, numKvHeads, headDim, vocabSize; numHeads and intermediateSize
     * widen the forward-size limit when present. */
    static of(config: Record<string, unknown> | null, identity: unknown, widest?: number): RowShape;
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
export declare abstract class RowsSkeleton<S> implements DraftRows {
    readonly shape: RowShape;
    private storage;
    private lengths;
    private warm;
    private roundOpen;
    private depth;
    private before;
    private drafts;
    private closed;
    private poisonedBy;
    private inProgress;
    /** The (row, position, experts) of the last prefill/draft/commit's MoE forward rows; `forward` pushes them. */
    router: RouterChoice[];
    constructor(shape: RowShape, empty: S);
    /** Storage of `state`'s rows followed by one row per entry: a checked RowState, or null for a cold row. */
    protected abstract appendRows(state: S, restored: (RowState | null)[]): S;
    /** Storage holding row keep[i] of `state` as row i (spec §5.3); `lengths` are theirs. The default serves storage
     * that is an array of one entry per row. */
    protected keepRows(state: S, keep: number[], _lengths: number[]): S;
    /** One forward of s positions per row (spec §3): row b appends K/V at at[b] … at[b]+s−1 for ids[b] ([s] token
     * ids) and hin[b] ([s·H] input hiddens), or, when hin is null (s = 1), its retained hidden. Only rows with rows[b]
     * (all when null) count. Returns the storage and each counted row's output hiddens [s·H]. */
    protected abstract forward(state: S, at: number[], rows: boolean[] | null, ids: number[][], hin: Float64Array[] | null): [S, (Float64Array | null)[]];
    /** `state` with the retained hiddens replaced by hidden[b] ([H]). */
    protected abstract retain(state: S, hidden: Float64Array[]): S;
    /** One draft token of row `row` from its output hidden y [H] at `step` (spec §1.7, §7); used by draftChain. */
    protected abstract sample(row: number, y: Float64Array, sampler: RowSampler, step: bigint): number;
    /** Row `row`'s KV of its first `length` positions (null when 0) and retained hidden (spec §6). */
    protected abstract export(state: S, row: number, length: number): ExportedRow;
    /** A draft round of depth ≥ 1 (spec §5.7): the default forwards the pending tokens from the retained hiddens,
     * samples, and feeds each output back `depth` times. */
    protected draftChain(state: S, at: number[], pending: number[], depth: number, steps: bigint[], sampling: RowSampler[]): [number[][], S];
    /** Frees `state` (the group is closing). */
    protected release(_state: S): void;
    /** True once the model this group was opened from is closed (the wire server checks this itself). */
    protected modelClosed(): boolean;
    /** Frees what `superseded` holds and `current` no longer uses, after a call published. */
    protected discard(_superseded: S, _current: S): void;
    /** A hook reached before each step of a call (tests inject faults through it). */
    protected reached(_call: string, _step: string): void;
    /** Marks the group unusable after a failure the engine cannot undo (spec §9.2); the first reason is kept. */
    protected poison(reason: string): void;
    rowCount(): number;
    /** The drafter positions P − 1 of each row at its last committed boundary, or after the open draft. */
    drafterLengths(): number[];
    routerChoices(): readonly RouterChoice[];
    append(checkpoints: unknown): void;
    filterRows(keep: unknown): void;
    prefill(tokens: unknown, context: unknown): void;
    private prefillSteps;
    draft(pending: unknown, depth: unknown, steps: unknown, sampling: unknown): number[][];
    commit(accepted: unknown, context: unknown): void;
    capture(row: unknown): CapturedCheckpoint;
    isClosed(): boolean;
    close(): void;
    private call;
    /** Runs one call's computation; anything but an MtpError becomes BACKEND_FAILURE with the rows unchanged. */
    private compute;
    private publish;
    private proposals;
    /** §6, §11.1: checks one checkpoint (RowContract.checkpoint's order) and returns its RowState. */
    private restore;
}
export declare const F32_TOLERANCE: Tolerance;
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
export declare function rowsEngine<M>(o: RowsEngineOptions<M>): Engine;
/** serve(rowsEngine(options)): the whole main of a skeleton engine. */
export declare function serveRows<M>(o: RowsEngineOptions<M>): void;
