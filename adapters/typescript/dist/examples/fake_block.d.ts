import { Tensor } from "../src/mtp_wire.js";
export interface Shape {
    hidden: number;
    kvHeads: number;
    headDim: number;
    vocab: number;
}
/** The fake block: position-aware, deterministic, a function of (token, hidden, position) only. */
export declare class FakeBlock {
    private s;
    constructor(s: Shape);
    /** Appends one position to `kv` and returns the output hidden. */
    forward(kv: RowKv, token: number, hin: Float64Array): Float64Array;
    /** Greedy draft from a fake logit of every token: the lowest index wins ties. */
    argmax(y: Float64Array): number;
}
/** One row's unpadded KV: positions of [nKV*D] keys and values; `length` is what is valid. */
export declare class RowKv {
    keys: Float64Array[];
    values: Float64Array[];
    get length(): number;
    set length(n: number);
    push(k: Float64Array, v: Float64Array): void;
    /** [1, nKV, T, D] as the checkpoint lays it out. */
    export(which: "keys" | "values", s: Shape): Tensor;
    /** From keys and values [nKV, T, D] (a restored checkpoint's); an empty cache when they are null. */
    static restore(k: Float64Array | null, v: Float64Array | null, s: Shape): RowKv;
}
