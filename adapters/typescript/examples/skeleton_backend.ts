// The fake block (fake_block.ts: the engine's maths) on the SDK's row skeleton: this file is the whole adapter.
//   ./mtp tck --backend exec:'node adapters/typescript/dist/examples/skeleton_backend.js'
import { RowShape, RowsSkeleton, type RowSampler, type RowState, serveRows } from "../src/index.js";
import { FakeBlock, RowKv } from "./fake_block.js";

type Row = { kv: RowKv; hidden: Float64Array | null };   // storage: an array of one KV and retained hidden per row
type Out = Float64Array | null;
class FakeRows extends RowsSkeleton<Row[]> {
  constructor(private s: RowShape, private block = new FakeBlock(s)) { super(s, []); }
  protected appendRows(state: Row[], restored: (RowState | null)[]) {   // a RowState per restored row, null if cold
    return state.concat(restored.map((r) => ({ kv: RowKv.restore(r?.keys ?? null, r?.values ?? null, this.s),
      hidden: r?.hidden ?? null })));
  }
  protected forward(state: Row[], at: number[], rows: boolean[] | null, ids: number[][], hin: Float64Array[] | null) {
    const h = this.s.hidden, x = (b: number, i: number) => (hin ? hin[b].subarray(i * h, i * h + h) : state[b].hidden!);
    return [state, state.map((row, b): Out => {
      if (rows && !rows[b]) return null;
      row.kv.length = at[b];   // K/V at at[b] on: past the published length, which nothing reads
      const out = new Float64Array(ids[b].length * h);
      ids[b].forEach((t, i) => out.set(this.block.forward(row.kv, t, x(b, i)), i * h));
      return out;
    })] as [Row[], Out[]];
  }
  protected retain(state: Row[], hidden: Float64Array[]) { return state.map((r, b) => ({ ...r, hidden: hidden[b] })); }
  protected sample(_row: number, y: Float64Array, _s: RowSampler) { return this.block.argmax(y); }
  protected export(state: Row[], row: number, length: number) {
    const { kv, hidden } = state[row];
    kv.length = length;
    return { keys: kv.export("keys", this.s), values: kv.export("values", this.s), hidden: hidden! };
  }
}

serveRows({ name: "ts-fake-block-skeleton", version: "1.0", numerics: "fake block (spec §1.9 seam), float64",
  load: (a) => RowShape.of(a.config, a.identity), rows: (shape: RowShape) => new FakeRows(shape) });
