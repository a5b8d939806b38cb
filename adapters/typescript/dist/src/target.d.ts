import { Tensor } from "./mtp_wire.js";
export declare const TARGET_SCHEMA = "qwen-target-v1";
export declare const TARGET_OPS: readonly string[];
/** A target checkpoint in a request: exactly what the runner sent (the handler validates, digest last). */
export interface TargetCheckpoint {
    schema: unknown;
    processedTokens: unknown;
    modelIdentity: unknown;
    convWindows: Tensor | null | unknown;
    recurrentStates: Tensor | null | unknown;
    keys: Tensor | null | unknown;
    values: Tensor | null | unknown;
    digest?: unknown;
}
/** A target checkpoint as a handler captures it (WIRE.md §5.3: F32, the reference's orientation; null for a kind of
 * layer the target lacks); the server computes `digest` when the handler leaves it out. */
export interface CapturedTargetCheckpoint {
    schema: string;
    processedTokens: number;
    modelIdentity: string;
    convWindows: Tensor | null;
    recurrentStates: Tensor | null;
    keys: Tensor | null;
    values: Tensor | null;
    digest?: string;
}
/** What targetPrefill and targetVerify return: F32 logits [B, n, V] and both taps [B, L, H]. */
export interface TargetOutput {
    logits: Tensor;
    preNorm: Tensor;
    postNorm: Tensor;
}
/** One router decision of a MoE target (spec §12.5, WIRE.md §5.2 `experts`): the contract row, the token's position
 * in its row (its RoPE position: P, P+1, … for a row that had processed P tokens), the decoder layer index (0-based)
 * and the chosen experts in slot order (descending probability, ties to the lower index, spec §12.3). */
export interface TargetRouterChoice {
    row: number;
    position: number;
    layer: number;
    experts: ArrayLike<number>;
}
/** One group of target rows (spec §13.3): validate first in WIRE.md §5.2's order, throw MtpError, leave the rows
 * unchanged on failure (throw with poisoned = true when that is impossible). */
export interface TargetRows {
    processedTokens(): number[];
    append(checkpoints: unknown): void;
    filterRows(keep: unknown): void;
    prefill(tokens: Tensor | null | unknown): TargetOutput;
    verify(tokens: Tensor | null | unknown): TargetOutput;
    commit(accepted: unknown): void;
    capture(row: unknown): CapturedTargetCheckpoint;
    close(): void;
    /** Optional, for a MoE target whose hello() claims `capabilities.targetRouterChoices` (WIRE.md §4, §5.2; spec
     * §12.5): one choice per (row, token, MoE layer) of the last successful prefill or verify, in the order computed
     * (a commit computes nothing and reports nothing). The server sends them as the reply's `experts`; null,
     * undefined or [] sends nothing. */
    routerChoices?(): readonly TargetRouterChoice[] | null | undefined;
}
export interface TargetModel {
    numerics?: string;
    openRows(checkpoints: unknown): TargetRows;
    close?(): void;
}
export interface LoadTargetArgs {
    directory: unknown;
    layout: unknown;
    identity: unknown;
    options: Record<string, unknown>;
    config: Record<string, unknown> | null;
}
/** WIRE.md §5.3: lowercase hex SHA-256 over the magic, the schema, P (8 bytes), the identity, then the four tensors
 * (0 when absent, else 1, dtype name, rank (4 bytes), dims (8 bytes each), byte count (8 bytes), bytes); strings are
 * a 4-byte UTF-8 length and the bytes; integers little-endian. */
export declare function targetCheckpointDigest(cp: CapturedTargetCheckpoint): string;
type Guard = <T>(op: string, group: number | null, fn: () => T) => T;
/** The target ops of one server: its own tables, the server's handle counter, guard and poisoned groups. */
export declare class TargetDispatch {
    private engine;
    private handleFor;
    private guard;
    private poisoned;
    private routed;
    private log;
    private models;
    private groups;
    private modelOf;
    private closed;
    private unclaimedWarned;
    /** `routed()`: whether the handshake claimed targetRouterChoices; `log` tells the engine's author once when a
     * handler reports choices that the handshake did not claim (they are not sent). */
    constructor(engine: {
        loadTarget?(args: LoadTargetArgs): TargetModel;
    }, handleFor: () => number, guard: Guard, poisoned: Map<number, string>, routed?: () => boolean, log?: (line: string) => void);
    /** The handler's router choices of the call just made as `experts` (WIRE.md §5.2) when the handshake claimed
     * targetRouterChoices. A throwing or malformed list fails the call BACKEND_FAILURE and poisons the group: the call
     * itself ran, so the rows are no longer where the runner believes them. */
    private experts;
    dispatch(op: string, a: Record<string, unknown>): [Record<string, unknown>, Tensor[]];
}
export {};
