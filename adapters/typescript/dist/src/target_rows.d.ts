import { type Engine, Tensor } from "./mtp_wire.js";
import { type CapturedTargetCheckpoint, type LoadTargetArgs, type TargetOutput, type TargetRouterChoice, type TargetRows } from "./target.js";
export declare const TARGET_MAX_DEPTH = 64;
export declare const MAX_WIDTH: number;
export declare const TARGET_PREFILL_CHUNK = 2048;
/** What the checks need of a target (spec §13.1): identity, V, H, nKV, D, the layer kinds, the GDN dimensions and
 * the widest per-token array of one forward (api TargetContract.forwardSize: 2·nH·D, conv_dim + Hv·Dv, I, H). */
export declare class TargetShape {
    readonly identity: string;
    readonly vocab: number;
    readonly hidden: number;
    readonly heads: number;
    readonly kvHeads: number;
    readonly headDim: number;
    readonly layerTypes: string[];
    readonly keyHeads: number;
    readonly valueHeads: number;
    readonly keyHeadDim: number;
    readonly valueHeadDim: number;
    readonly convKernel: number;
    readonly nGdn: number;
    readonly nFull: number;
    readonly convDim: number;
    readonly widest: number;
    readonly maxPositions: number;
    constructor(identity: string, vocab: number, hidden: number, heads: number, kvHeads: number, headDim: number, intermediate: number, layerTypes: string[], keyHeads: number, valueHeads: number, keyHeadDim: number, valueHeadDim: number, convKernel: number);
    /** The four checkpoint tensors' shapes of a row after p tokens (WIRE.md §5.3). */
    shapes(p: number): number[][];
    /** From loadTarget's `config` (WIRE.md §5.2): load's keys, `layerTypes` and `gdn`. */
    static of(config: Record<string, unknown> | null, identity: unknown): TargetShape;
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
export declare abstract class TargetRowsSkeleton<S> implements TargetRows {
    readonly shape: TargetShape;
    private storage;
    private processed;
    private open;
    private width;
    private before;
    private closed;
    private poisonedBy;
    private inProgress;
    /** The (row, position, layer, experts) of the last prefill's or verify's MoE router decisions; `forward` pushes
     * them (WIRE.md §5.2 `experts`). Cleared when prefill, verify or commit starts, and when one fails. */
    router: TargetRouterChoice[];
    constructor(shape: TargetShape, empty: S);
    /** Storage of `state`'s rows followed by one per entry: a checked TargetRowState, or null (an empty row, P = 0). */
    protected abstract appendRows(state: S, restored: (TargetRowState | null)[]): S;
    /** Storage holding row keep[i] of `state` as row i. The default serves an array of one entry per row. */
    protected keepRows(state: S, keep: number[]): S;
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
    protected release(_state: S): void;
    /** True once the target this group was opened from is closed (the wire server checks this itself). */
    protected modelClosed(): boolean;
    /** Frees what `superseded` holds and `current` no longer uses, after a call published. */
    protected discard(_superseded: S, _current: S): void;
    /** A hook reached before each step of a call (tests inject faults through it). */
    protected reached(_call: string, _step: string): void;
    /** Marks the group unusable after a failure the engine cannot undo (spec §9.2); the first reason is kept. */
    protected poison(reason: string): void;
    rowCount(): number;
    /** P per row at the last committed boundary or, during a round, through the open verify. */
    processedTokens(): number[];
    roundOpen(): boolean;
    /** The router choices of the last prefill or verify; empty after a commit, a failed call, or for a dense target. */
    routerChoices(): readonly TargetRouterChoice[];
    append(checkpoints: unknown): void;
    filterRows(keep: unknown): void;
    prefill(tokens: unknown): TargetOutput;
    /** Prefill's forwards of at most TARGET_PREFILL_CHUNK positions; the logits are the last chunk's. */
    private prefillChunks;
    verify(tokens: unknown): TargetOutput;
    commit(accepted: unknown): void;
    capture(row: unknown): CapturedTargetCheckpoint;
    isClosed(): boolean;
    close(): void;
    private call;
    private hasRows;
    /** Runs one call's computation; anything but an MtpError becomes BACKEND_FAILURE with the rows unchanged. */
    private compute;
    /** The engine's forward, its outputs checked as [B, n, V] logits and [B, s, H] taps. */
    private checkedForward;
    private publish;
    /** The caller's copy of a forward's results: logits [B, n, V], taps [B, s, H], F32. */
    private outputs;
    /** §13.3: checks one checkpoint (TargetContract.checkpoint's order) and returns its TargetRowState. */
    private restore;
}
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
export declare function withTarget<T>(engine: Engine, o: TargetOptions<T>): Engine;
