// A fake hybrid target on the SDK's target row skeleton (src/target_rows.ts): the maths is a stand-in (a recurrent
// "GDN" state and conv window, per-position "K/V", every value a function of the tokens fed so far and held at f32
// precision, so a checkpoint is the row's whole state), the storage one immutable row per entry. It is what the
// target skeleton's tests and examples/target_skeleton_backend.ts run; the numbers are not the Qwen target's.
import { TargetRowsSkeleton } from "../src/target_rows.js";
const f = Math.fround;
export class FakeTargetRows extends TargetRowsSkeleton {
    constructor(shape) {
        super(shape, []);
    }
    get kvWidth() {
        return this.shape.nFull * this.shape.kvHeads * this.shape.headDim;
    }
    /** The row after one more token, and its taps and logits. */
    step(row, token) {
        const c = this.shape;
        const km1 = c.convKernel - 1;
        let sum = 0;
        for (const x of row.rec)
            sum += x;
        for (const x of row.conv)
            sum += x;
        for (const x of row.kv)
            for (let i = 0; i < x.length; i += 7)
                sum += x[i];
        const mix = Math.tanh(sum * 1e-3);
        const conv = new Float64Array(row.conv.length);
        for (let ch = 0; ch < conv.length / km1; ch++) {
            for (let j = 0; j + 1 < km1; j++)
                conv[ch * km1 + j] = row.conv[ch * km1 + j + 1];
            conv[ch * km1 + km1 - 1] = f(Math.sin(0.7 * token + 0.13 * ch + 0.01 * row.p));
        }
        const rec = row.rec.map((x, i) => f(0.9 * x + 0.1 * Math.cos(0.3 * token + 0.011 * i + mix)));
        const w = this.kvWidth;
        const kv = new Float64Array(2 * w);
        for (let i = 0; i < w; i++) {
            kv[i] = f(Math.sin(token + 0.17 * i + 0.05 * row.p));
            kv[w + i] = f(Math.cos(1.3 * token + 0.07 * i) * (1 + mix));
        }
        const pre = new Float64Array(c.hidden);
        const post = new Float64Array(c.hidden);
        let total = 0;
        for (let h = 0; h < c.hidden; h++) {
            pre[h] = Math.sin(mix + 0.01 * token + 0.3 * h) * 2;
            post[h] = Math.tanh(pre[h]);
            total += post[h];
        }
        const logits = new Float64Array(c.vocab);
        for (let v = 0; v < c.vocab; v++)
            logits[v] = Math.cos(0.37 * v + total);
        return [{ p: row.p + 1, conv, rec, kv: row.kv.concat([kv]) }, logits, pre, post];
    }
    appendRows(state, restored) {
        const c = this.shape;
        const w = this.kvWidth;
        return state.concat(restored.map((r) => {
            if (r === null) {
                return { p: 0, conv: new Float64Array(c.nGdn * c.convDim * (c.convKernel - 1)),
                    rec: new Float64Array(c.nGdn * c.valueHeads * c.keyHeadDim * c.valueHeadDim), kv: [] };
            }
            const kv = []; // [nFull, nKV, P, D] → per position [2, nFull, nKV, D]
            const d = c.headDim;
            for (let pos = 0; pos < r.processed; pos++) {
                const x = new Float64Array(2 * w);
                for (let lh = 0; lh < c.nFull * c.kvHeads; lh++) {
                    for (let i = 0; i < d; i++) {
                        x[lh * d + i] = r.keys[(lh * r.processed + pos) * d + i];
                        x[w + lh * d + i] = r.values[(lh * r.processed + pos) * d + i];
                    }
                }
                kv.push(x);
            }
            return { p: r.processed, conv: r.convWindows.slice(), rec: r.recurrentStates.slice(), kv };
        }));
    }
    forward(state, _at, ids, s, verify) {
        const c = this.shape;
        const logits = [];
        const pre = [];
        const post = [];
        const next = state.map((slot, b) => {
            let row = slot;
            const steps = [];
            for (let i = 0; i < s; i++) {
                const [r, l, x, y] = this.step(row, ids[b][i]);
                row = r;
                steps.push(r);
                if (verify || i === s - 1)
                    logits.push(...l);
                pre.push(...x);
                post.push(...y);
            }
            return verify ? { steps } : row;
        });
        if (logits.length !== state.length * (verify ? s : 1) * c.vocab)
            throw new Error("fake target: logits miscounted");
        return { logits, preNorm: pre, postNorm: post, state: next };
    }
    rollback(verified, _before, keep) {
        return verified.map((slot, b) => slot.steps[keep[b] - 1]);
    }
    export(state, row, processed) {
        const c = this.shape;
        const r = state[row];
        const w = this.kvWidth;
        const d = c.headDim;
        const keys = new Float64Array(w * processed);
        const values = new Float64Array(w * processed);
        r.kv.forEach((x, pos) => {
            for (let lh = 0; lh < c.nFull * c.kvHeads; lh++) {
                for (let i = 0; i < d; i++) {
                    keys[(lh * processed + pos) * d + i] = x[lh * d + i];
                    values[(lh * processed + pos) * d + i] = x[w + lh * d + i];
                }
            }
        });
        return { convWindows: r.conv, recurrentStates: r.rec, keys, values };
    }
}
