// The MTP block (mtp_block.ts, mtp_sampling.ts: the engine's maths) on the SDK's row skeleton: the whole adapter.
//   ./mtp tck --backend exec:'node adapters/typescript/dist/examples/skeleton_backend.js'
import { RowShape, RowsSkeleton, serveRows } from "../src/index.js";
import { MtpBlock } from "./mtp_block.js";
import { sampleRow } from "./mtp_sampling.js";
class MtpRows extends RowsSkeleton {
    m;
    constructor(s, m) {
        super(s, []);
        this.m = m;
    }
    appendRows(state, restored) {
        return state.concat(restored.map((r) => ({ kv: this.m.newKv(r?.keys, r?.values), hidden: r?.hidden ?? null })));
    }
    forward(state, at, rows, ids, hin) {
        return [state, state.map(({ kv, hidden }, b) => {
                if (rows && !rows[b])
                    return null;
                kv.length = at[b];
                return this.m.forward(kv, ids[b], hin ? hin[b] : hidden, (p, e) => this.router.push({ row: b, position: p, experts: e }));
            })];
    }
    retain(state, hidden) { return state.map((r, b) => ({ ...r, hidden: hidden[b] })); }
    sample(_row, y, s, step) { return sampleRow(this.m.logProbs(y), s, step); }
    export(state, row, length) {
        const { kv, hidden } = state[row];
        kv.length = length;
        return { keys: kv.export("keys"), values: kv.export("values"), hidden: hidden };
    }
}
serveRows({ name: "ts-mtp-block-skeleton", version: "1.0", numerics: "float64 block, float32 router and sampler",
    load: (a) => ({ block: MtpBlock.load(a.directory), shape: RowShape.of(a.config, a.identity) }),
    rows: (m) => new MtpRows(m.shape, m.block), capabilities: { seededSampling: true, routerChoices: true,
        weightDtypes: ["F32", "F16", "BF16"], quantization: [2, 3, 4, 5, 6, 8].map((bits) => ({ bits, groupSizes: [32, 64, 128] })) } });
