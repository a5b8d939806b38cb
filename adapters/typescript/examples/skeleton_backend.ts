// The MTP block (mtp_block.ts, mtp_sampling.ts: the engine's maths) on the SDK's row skeleton: the whole adapter.
//   ./mtp tck --backend exec:'node adapters/typescript/dist/examples/skeleton_backend.js'
import { RowShape, RowsSkeleton, type RowSampler, type RowState, serveRows } from "../src/index.js";
import { MtpBlock, RowKv } from "./mtp_block.js";
import { sampleRow } from "./mtp_sampling.js";

type Row = { kv: RowKv; hidden: Float64Array | null };   // storage: an array of one KV and retained hidden per row
class MtpRows extends RowsSkeleton<Row[]> {
  constructor(s: RowShape, private m: MtpBlock) { super(s, []); }
  protected appendRows(state: Row[], restored: (RowState | null)[]) {   // a RowState per restored row, null if cold
    return state.concat(restored.map((r) => ({ kv: this.m.newKv(r?.keys, r?.values), hidden: r?.hidden ?? null })));
  }
  protected forward(state: Row[], at: number[], rows: boolean[] | null, ids: number[][], hin: Float64Array[] | null) {
    return [state, state.map(({ kv, hidden }, b) => {   // K/V at at[b] on: past the published length, never read
      if (rows && !rows[b]) return null;
      kv.length = at[b];
      return this.m.forward(kv, ids[b], hin ? hin[b] : hidden!, (p, e) => this.router.push({ row: b, position: p, experts: e }));
    })] as [Row[], (Float64Array | null)[]];
  }
  protected retain(state: Row[], hidden: Float64Array[]) { return state.map((r, b) => ({ ...r, hidden: hidden[b] })); }
  protected sample(_row: number, y: Float64Array, s: RowSampler, step: bigint) { return sampleRow(this.m.logProbs(y), s, step); }
  protected export(state: Row[], row: number, length: number) {
    const { kv, hidden } = state[row];
    kv.length = length;
    return { keys: kv.export("keys"), values: kv.export("values"), hidden: hidden! };
  }
}

serveRows({ name: "ts-mtp-block-skeleton", version: "1.0", numerics: "float64 block, float32 router and sampler",
  load: (a) => ({ block: MtpBlock.load(a.directory), shape: RowShape.of(a.config, a.identity) }),
  rows: (m) => new MtpRows(m.shape, m.block), capabilities: { seededSampling: true, routerChoices: true,
    weightDtypes: ["F32", "F16", "BF16"], quantization: [2, 3, 4, 5, 6, 8].map((bits) => ({ bits, groupSizes: [32, 64, 128] })) } });
