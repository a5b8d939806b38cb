// The fake block's maths (spec §1.9's seam: "K" from the embedded token and its position, "V" the hidden; a
// deterministic greedy pick) and one row's unpadded KV, taken unchanged from fake_block_backend.ts: what an engine
// brings to the row skeleton. The numbers are not the Qwen block's.
import { Tensor } from "../src/mtp_wire.js";
/** The fake block: position-aware, deterministic, a function of (token, hidden, position) only. */
export class FakeBlock {
    s;
    constructor(s) {
        this.s = s;
    }
    /** Appends one position to `kv` and returns the output hidden. */
    forward(kv, token, hin) {
        const { hidden, kvHeads, headDim } = this.s;
        const pos = kv.length;
        const width = kvHeads * headDim;
        const k = new Float64Array(width);
        const v = new Float64Array(width);
        let mean = 0;
        for (let i = 0; i < hidden; i++)
            mean += hin[i];
        mean /= hidden;
        for (let i = 0; i < width; i++) {
            k[i] = Math.sin(0.37 * token + 0.11 * i + 0.05 * pos); // "K" is the embedded token (at its position)
            v[i] = hin[i % hidden]; // "V" is the hidden
        }
        kv.push(k, v);
        const y = new Float64Array(hidden);
        for (let i = 0; i < hidden; i++)
            y[i] = Math.tanh(0.8 * hin[i] + 0.3 * Math.cos(token + i) + 0.1 * mean);
        return y;
    }
    /** Greedy draft from a fake logit of every token: the lowest index wins ties. */
    argmax(y) {
        let best = 0;
        let bestValue = -Infinity;
        for (let t = 0; t < this.s.vocab; t++) {
            const value = y[t % this.s.hidden] + 0.001 * ((t * 7919) % 101);
            if (value > bestValue) {
                bestValue = value;
                best = t;
            }
        }
        return best;
    }
}
/** One row's unpadded KV: positions of [nKV*D] keys and values; `length` is what is valid. */
export class RowKv {
    keys = [];
    values = [];
    get length() {
        return this.keys.length;
    }
    set length(n) {
        this.keys.length = n;
        this.values.length = n;
    }
    push(k, v) {
        this.keys.push(k);
        this.values.push(v);
    }
    /** [1, nKV, T, D] as the checkpoint lays it out. */
    export(which, s) {
        const rows = which === "keys" ? this.keys : this.values;
        const t = rows.length;
        const out = new Float32Array(s.kvHeads * t * s.headDim);
        for (let p = 0; p < t; p++) {
            for (let h = 0; h < s.kvHeads; h++) {
                for (let d = 0; d < s.headDim; d++)
                    out[(h * t + p) * s.headDim + d] = rows[p][h * s.headDim + d];
            }
        }
        return Tensor.f32(out, [1, s.kvHeads, t, s.headDim]);
    }
    /** From keys and values [nKV, T, D] (a restored checkpoint's); an empty cache when they are null. */
    static restore(k, v, s) {
        const kv = new RowKv();
        if (k === null || v === null)
            return kv;
        const t = k.length / (s.kvHeads * s.headDim);
        for (let p = 0; p < t; p++) {
            const kr = new Float64Array(s.kvHeads * s.headDim);
            const vr = new Float64Array(s.kvHeads * s.headDim);
            for (let h = 0; h < s.kvHeads; h++) {
                for (let d = 0; d < s.headDim; d++) {
                    kr[h * s.headDim + d] = k[(h * t + p) * s.headDim + d];
                    vr[h * s.headDim + d] = v[(h * t + p) * s.headDim + d];
                }
            }
            kv.push(kr, vr);
        }
        return kv;
    }
}
