import { type LoadTargetArgs, type TargetModel } from "./target.js";
export * from "./target.js";
export declare const PROTOCOL = "mtp-oracle-wire/1";
export type Kind = "INVALID_ARGUMENT" | "ILLEGAL_STATE" | "INCOMPATIBLE_CHECKPOINT" | "INCOMPATIBLE_MODEL" | "MALFORMED_FILE" | "UNAVAILABLE" | "BACKEND_FAILURE";
export declare const KINDS: readonly Kind[];
/** A contract failure: a kind, a one-line message `call: what is wrong, actual vs expected`, and poisoning. */
export declare class MtpError extends Error {
    readonly kind: Kind;
    readonly poisoned: boolean;
    constructor(kind: Kind, message: string, poisoned?: boolean);
}
export declare const invalidArgument: (m: string) => MtpError;
export declare const illegalState: (m: string) => MtpError;
export declare const incompatibleCheckpoint: (m: string) => MtpError;
export type DType = "F64" | "F32" | "F16" | "BF16" | "I64" | "I32" | "I16" | "I8" | "U32" | "U16" | "U8" | "BOOL";
export declare const SIZES: Record<string, number>;
/** A tensor as it crossed the wire: dtype, shape, little-endian row-major bytes. `valid` is false when the
 * descriptor's nbytes did not match its dtype and shape (the handler should refuse it). */
export declare class Tensor {
    readonly dtype: string;
    readonly shape: number[];
    readonly data: Uint8Array;
    readonly valid: boolean;
    constructor(dtype: string, shape: number[], data: Uint8Array);
    get rank(): number;
    get size(): number;
    describe(): string;
    private view;
    /** Floats widened exactly to float64 (F32, F16, BF16, F64). */
    floats(): Float64Array;
    /** Integers as bigint (I64 exactly, I32 and narrower widened). */
    ints(): bigint[];
    static f32(values: ArrayLike<number>, shape: number[]): Tensor;
    static i32(values: ArrayLike<number>, shape: number[]): Tensor;
}
/** One row's committed drafter state, schema qwen-mtp-v1 (spec §6). In requests: exactly what the runner sent. */
export interface Checkpoint {
    schema: unknown;
    processedTokens: unknown;
    draftOffset: unknown;
    modelIdentity: unknown;
    keys: Tensor | null | unknown;
    values: Tensor | null | unknown;
    hidden: Tensor | null | unknown;
    /** The content digest the runner sent (absent from runners older than it); compare it with checkpointDigest. */
    digest?: unknown;
}
/** A checkpoint as a handler captures it; the server computes `digest` when the handler leaves it out. */
export interface CapturedCheckpoint {
    schema: string;
    processedTokens: number;
    draftOffset: number;
    modelIdentity: string;
    keys: Tensor | null;
    values: Tensor | null;
    hidden: Tensor;
    digest?: string;
}
/** The content digest of a checkpoint (spec §6, "Content digest"): lowercase hex SHA-256 over the magic bytes; the
 * schema; P and draftOffset as 8-byte little-endian two's complement; the model identity; then for keys, values and
 * hidden a byte 0 when absent, else 1, the dtype name, the rank (4 bytes), each dimension (8 bytes), the byte count
 * (8 bytes) and the bytes. Strings are a 4-byte UTF-8 length and the bytes; all integers little-endian. Call it on a
 * checkpoint whose fields have the right types (after checking schema, identity, alignment and tensors). */
export declare function checkpointDigest(cp: CapturedCheckpoint): string;
/** One request's draft sampler (spec §7); seed is the unsigned 64-bit seed (bigint) or what the runner sent. */
export interface RowSampler {
    temperature: unknown;
    topK: unknown;
    topP: unknown;
    seed: bigint | unknown;
}
export interface Tolerance {
    name: string;
    tokenGap: number;
    kvNmse: number;
    hiddenNmse: number;
}
export interface HelloResult {
    description?: string;
    numerics?: string;
    unavailable?: string;
    profiles: {
        label: string;
        options: Record<string, string>;
        tolerance: Tolerance;
    }[];
    capabilities: Record<string, unknown>;
}
/** One MoE forward row's router choice (spec §12.5): the contract row, the KV position the forward row wrote (its
 * RoPE position, spec §1.8), and the chosen experts in slot order (descending probability, spec §12.3). */
export interface RouterChoice {
    row: number;
    position: number;
    experts: ArrayLike<number>;
}
export interface DraftRows {
    rowCount(): number;
    append(checkpoints: unknown): void;
    filterRows(keep: unknown): void;
    prefill(tokens: Tensor | null | unknown, context: Tensor | null | unknown): void;
    draft(pending: unknown, depth: unknown, steps: unknown, sampling: unknown): number[][];
    commit(accepted: unknown, context: Tensor | null | unknown): void;
    capture(row: unknown): CapturedCheckpoint;
    close(): void;
    /** Optional, for a MoE engine whose hello() claims `capabilities.routerChoices` (WIRE.md §4, §5; spec §12.5): the
     * choices of every MoE forward row of the last successful prefill, draft or commit, in the order computed. The
     * server sends them as the reply's `experts`; null, undefined or [] sends nothing. */
    routerChoices?(): readonly RouterChoice[] | null | undefined;
}
export interface DraftModel {
    numerics?: string;
    openRows(checkpoints: unknown): DraftRows;
    close?(): void;
}
export interface LoadArgs {
    directory: unknown;
    layout: unknown;
    identity: unknown;
    options: Record<string, unknown>;
    config: Record<string, unknown> | null;
}
export interface Engine {
    name: string;
    version: string;
    hello(): HelloResult;
    load(args: LoadArgs): DraftModel;
    /** Optional: the hybrid target (WIRE.md §5.2), for an engine whose hello() claims `capabilities.target`. */
    loadTarget?(args: LoadTargetArgs): TargetModel;
}
interface Frame {
    header: Record<string, unknown>;
    tensors: Tensor[];
}
/** A handler's router choices as WIRE.md §5's `experts`, `[[row, position, e_0, …], …]`, or null when there are
 * none; the target's (§5.2) name a third key, `keys` = ["row", "position", "layer"]: `[[row, position, layer, e_0,
 * …], …]`. Throws (an engine failure) on anything else: the runner must never read a malformed list. */
export declare function expertsOut(choices: unknown, keys?: readonly string[]): number[][] | null;
export declare class Server {
    private engine;
    private log;
    private models;
    private groups;
    private poisoned;
    private modelOf;
    private closed;
    private nextHandle;
    private routed;
    private targetRouted;
    private unclaimedWarned;
    private target;
    constructor(engine: Engine, log: (line: string) => void);
    /** Answers one request frame with one reply frame (bytes). */
    handle(frame: Frame): {
        reply: Uint8Array;
        exit: boolean;
    };
    private handleFor;
    private guard;
    /** Adds the handler's router choices of the call just made as `experts` (WIRE.md §5) when the handshake claimed
     * routerChoices. A throwing or malformed routerChoices() fails the call BACKEND_FAILURE and poisons the group: the
     * call itself ran, so the rows are no longer where the runner believes them. */
    private experts;
    private dispatch;
}
/** Serves `engine` on stdin/stdout until end of input or `shutdown`. console.log/info/debug go to stderr, so a
 * stray log line cannot break the framing. */
export declare function serve(engine: Engine): void;
