// The fake block (fake_block.ts: the engine's maths) on the SDK's row skeleton: this file is the whole adapter.
//   ./mtp tck --backend exec:'node adapters/typescript/dist/examples/skeleton_backend.js'
import { RowShape, RowsSkeleton, serveRows } from "../src/index.js";
import { FakeBlock, RowKv } from "./fake_block.js";
class FakeRows extends RowsSkeleton {
    s;
    block;
    constructor(s, block = new FakeBlock(s)) {
        super(s, []);
        this.s = s;
        this.block = block;
    }
    appendRows(state, restored) {
        return state.concat(restored.map((r) => ({ kv: RowKv.restore(r?.keys ?? null, r?.values ?? null, this.s),
            hidden: r?.hidden ?? null })));
    }
    forward(state, at, rows, ids, hin) {
        const h = this.s.hidden, x = (b, i) => (hin ? hin[b].subarray(i * h, i * h + h) : state[b].hidden);
        return [state, state.map((row, b) => {
                if (rows && !rows[b])
                    return null;
                row.kv.length = at[b]; // K/V at at[b] on: past the published length, which nothing reads
                const out = new Float64Array(ids[b].length * h);
                ids[b].forEach((t, i) => out.set(this.block.forward(row.kv, t, x(b, i)), i * h));
                return out;
            })];
    }
    retain(state, hidden) { return state.map((r, b) => ({ ...r, hidden: hidden[b] })); }
    sample(_row, y, _s) { return this.block.argmax(y); }
    export(state, row, length) {
        const { kv, hidden } = state[row];
        kv.length = length;
        return { keys: kv.export("keys", this.s), values: kv.export("values", this.s), hidden: hidden };
    }
}
serveRows({ name: "ts-fake-block-skeleton", version: "1.0", numerics: "fake block (spec §1.9 seam), float64",
    load: (a) => RowShape.of(a.config, a.identity), rows: (shape) => new FakeRows(shape) });
