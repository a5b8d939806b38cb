// A fake hybrid target on the SDK's target row skeleton (src/target_rows.ts): the maths is a stand-in (a recurrent
// "GDN" state and conv window, per-position "K/V", every value a function of the tokens fed so far and held at f32
// precision, so a checkpoint is the row's whole state), the storage one immutable row per entry. It is what the
// target skeleton's tests and examples/target_skeleton_backend.ts run; the numbers are not the Qwen target's.

import { type ExportedTargetRow, type Forwarded, TargetRowsSkeleton, type TargetRowState, type TargetShape } from "../src/target_rows.js";

const f = Math.fround;

/** One row after `p` tokens: flat conv [nGDN, conv_dim, K−1] and states [nGDN, Hv, Dk, Dv], K/V per position. */
export interface FakeRow {
  p: number;
  conv: Float64Array;
  rec: Float64Array;
  kv: Float64Array[];   // per position: keys then values, [2, nFull, nKV, D]
}

/** A row in an open round: the row before it and the row after each verified token. */
interface Round {
  steps: FakeRow[];
}

type Slot = FakeRow | Round;

export class FakeTargetRows extends TargetRowsSkeleton<Slot[]> {
  constructor(shape: TargetShape) {
    super(shape, []);
  }

  private get kvWidth(): number {
    return this.shape.nFull * this.shape.kvHeads * this.shape.headDim;
  }

  /** The row after one more token, and its taps and logits. */
  step(row: FakeRow, token: number): [FakeRow, Float64Array, Float64Array, Float64Array] {
    const c = this.shape;
    const km1 = c.convKernel - 1;
    let sum = 0;
    for (const x of row.rec) sum += x;
    for (const x of row.conv) sum += x;
    for (const x of row.kv) for (let i = 0; i < x.length; i += 7) sum += x[i];
    const mix = Math.tanh(sum * 1e-3);
    const conv = new Float64Array(row.conv.length);
    for (let ch = 0; ch < conv.length / km1; ch++) {
      for (let j = 0; j + 1 < km1; j++) conv[ch * km1 + j] = row.conv[ch * km1 + j + 1];
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
    for (let v = 0; v < c.vocab; v++) logits[v] = Math.cos(0.37 * v + total);
    return [{ p: row.p + 1, conv, rec, kv: row.kv.concat([kv]) }, logits, pre, post];
  }

  protected appendRows(state: Slot[], restored: (TargetRowState | null)[]): Slot[] {
    const c = this.shape;
    const w = this.kvWidth;
    return state.concat(restored.map((r): FakeRow => {
      if (r === null) {
        return { p: 0, conv: new Float64Array(c.nGdn * c.convDim * (c.convKernel - 1)),
          rec: new Float64Array(c.nGdn * c.valueHeads * c.keyHeadDim * c.valueHeadDim), kv: [] };
      }
      const kv: Float64Array[] = [];   // [nFull, nKV, P, D] → per position [2, nFull, nKV, D]
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

  protected forward(state: Slot[], _at: number[], ids: number[][], s: number, verify: boolean): Forwarded<Slot[]> {
    const c = this.shape;
    const logits: number[] = [];
    const pre: number[] = [];
    const post: number[] = [];
    const next = state.map((slot, b): Slot => {
      let row = slot as FakeRow;
      const steps: FakeRow[] = [];
      for (let i = 0; i < s; i++) {
        const [r, l, x, y] = this.step(row, ids[b][i]);
        row = r;
        steps.push(r);
        if (verify || i === s - 1) logits.push(...l);
        pre.push(...x);
        post.push(...y);
      }
      return verify ? { steps } : row;
    });
    if (logits.length !== state.length * (verify ? s : 1) * c.vocab) throw new Error("fake target: logits miscounted");
    return { logits, preNorm: pre, postNorm: post, state: next };
  }

  protected rollback(verified: Slot[], _before: number[], keep: number[]): Slot[] {
    return verified.map((slot, b) => (slot as Round).steps[keep[b] - 1]);
  }

  protected export(state: Slot[], row: number, processed: number): ExportedTargetRow {
    const c = this.shape;
    const r = state[row] as FakeRow;
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
