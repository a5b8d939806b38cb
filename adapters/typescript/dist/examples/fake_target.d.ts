import { type ExportedTargetRow, type Forwarded, TargetRowsSkeleton, type TargetRowState, type TargetShape } from "../src/target_rows.js";
/** One row after `p` tokens: flat conv [nGDN, conv_dim, K−1] and states [nGDN, Hv, Dk, Dv], K/V per position. */
export interface FakeRow {
    p: number;
    conv: Float64Array;
    rec: Float64Array;
    kv: Float64Array[];
}
/** A row in an open round: the row before it and the row after each verified token. */
interface Round {
    steps: FakeRow[];
}
type Slot = FakeRow | Round;
export declare class FakeTargetRows extends TargetRowsSkeleton<Slot[]> {
    constructor(shape: TargetShape);
    private get kvWidth();
    /** The row after one more token, and its taps and logits. */
    step(row: FakeRow, token: number): [FakeRow, Float64Array, Float64Array, Float64Array];
    protected appendRows(state: Slot[], restored: (TargetRowState | null)[]): Slot[];
    protected forward(state: Slot[], _at: number[], ids: number[][], s: number, verify: boolean): Forwarded<Slot[]>;
    protected rollback(verified: Slot[], _before: number[], keep: number[]): Slot[];
    protected export(state: Slot[], row: number, processed: number): ExportedTargetRow;
}
export {};
