import { Config, type Weights } from "./mtp_model.js";
/** One row's KV, position-major: keys and values [capacity, nKV·D]; `length` positions are valid. The skeleton
 * sets `length` before each forward and export (published positions are never rewritten; growing copies them). */
export declare class RowKv {
    private nkv;
    private d;
    length: number;
    private k;
    private v;
    /** Empty, or holding checkpoint keys/values [nKV, T, D]. */
    constructor(nkv: number, d: number, keys?: Float64Array | null, values?: Float64Array | null);
    /** Appends one position's k and v [nKV·D] at `length`. */
    push(k: Float64Array, v: Float64Array): void;
    /** Head h's key (or value) at position p [D]. */
    key(p: number, h: number): Float64Array;
    value(p: number, h: number): Float64Array;
    /** Keys or values of the first `length` positions as [nKV, length, D] (spec §6). */
    export(which: "keys" | "values"): Float64Array;
}
/** Called once per MoE forward position with its KV position and chosen experts in slot order (spec §12.5). */
export type RouteSink = (position: number, experts: number[]) => void;
export declare class MtpBlock {
    readonly c: Config;
    private w;
    readonly vocab: number;
    private invFreq;
    constructor(c: Config, w: Weights);
    /** Loads a model directory (mtp_model.ts). */
    static load(directory: unknown): MtpBlock;
    newKv(keys?: Float64Array | null, values?: Float64Array | null): RowKv;
    /** §1.5 step 5: rotate_half pairs (f, f + R/2) of the first R dims of x[at, at + D), in place. */
    private rope;
    /** §1.4 for one row: ids [S], hin [S·H] the input hiddens; appends S positions to `kv` and returns Y [S·H]. */
    forward(kv: RowKv, ids: number[], hin: Float64Array, route?: RouteSink): Float64Array;
    private position;
    /** §12.3 for one row n [H]: the float32 router, top-k with the lower index first on ties, the chosen experts in
     * slot order, the shared expert and its sigmoid gate. */
    private moe;
    /** §1.7: logits = head · y (no further norm), log-softmax over V, rounded to float32 for the sampler (§7). */
    logProbs(y: Float64Array): Float32Array;
}
