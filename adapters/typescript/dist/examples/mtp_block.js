// The MTP block (spec §1.4–§1.7, and §12.3 for a MoE layer) in float64, one position at a time over one row's own
// unpadded KV; the router's softmax and top-k in float32 as §12.3 says. Positions of one forward are computed in
// order, each attending to the row's earlier positions and itself: the causal mask of a batched forward, exactly.
import { loadModel } from "./mtp_model.js";
/** out = W · x for a linear [out, in] (x · Wᵀ of the spec). */
function matVec(l, x) {
    const y = new Float64Array(l.out);
    for (let o = 0, row = 0; o < l.out; o++, row += l.in) {
        let s = 0;
        for (let i = 0; i < l.in; i++)
            s += l.w[row + i] * x[i];
        y[o] = s;
    }
    return y;
}
/** §1.6: x · (mean(x²) + ε)^-½ · w, over x[at, at + w.length). */
function rmsNorm(x, w, eps, at = 0) {
    const n = w.length;
    let ss = 0;
    for (let i = 0; i < n; i++)
        ss += x[at + i] * x[at + i];
    const r = 1 / Math.sqrt(ss / n + eps);
    return Float64Array.from(w, (g, i) => x[at + i] * r * g);
}
const sigmoid = (z) => 1 / (1 + Math.exp(-z));
/** One row's KV, position-major: keys and values [capacity, nKV·D]; `length` positions are valid. The skeleton
 * sets `length` before each forward and export (published positions are never rewritten; growing copies them). */
export class RowKv {
    nkv;
    d;
    length;
    k;
    v;
    /** Empty, or holding checkpoint keys/values [nKV, T, D]. */
    constructor(nkv, d, keys = null, values = null) {
        this.nkv = nkv;
        this.d = d;
        const t = keys ? keys.length / (nkv * d) : 0;
        this.length = t;
        this.k = new Float64Array(Math.max(16, t) * nkv * d);
        this.v = new Float64Array(this.k.length);
        for (const [from, to] of [[keys, this.k], [values, this.v]]) {
            for (let h = 0; from && h < nkv; h++) {
                for (let p = 0; p < t; p++)
                    to.set(from.subarray((h * t + p) * d, (h * t + p + 1) * d), (p * nkv + h) * d);
            }
        }
    }
    /** Appends one position's k and v [nKV·D] at `length`. */
    push(k, v) {
        const w = this.nkv * this.d;
        if ((this.length + 1) * w > this.k.length) {
            const grow = (a) => { const b = new Float64Array(2 * a.length); b.set(a); return b; };
            this.k = grow(this.k);
            this.v = grow(this.v);
        }
        this.k.set(k, this.length * w);
        this.v.set(v, this.length * w);
        this.length++;
    }
    /** Head h's key (or value) at position p [D]. */
    key(p, h) {
        return this.k.subarray((p * this.nkv + h) * this.d, (p * this.nkv + h + 1) * this.d);
    }
    value(p, h) {
        return this.v.subarray((p * this.nkv + h) * this.d, (p * this.nkv + h + 1) * this.d);
    }
    /** Keys or values of the first `length` positions as [nKV, length, D] (spec §6). */
    export(which) {
        const { nkv, d, length: t } = this;
        const out = new Float64Array(nkv * t * d);
        for (let h = 0; h < nkv; h++) {
            for (let p = 0; p < t; p++)
                out.set(which === "keys" ? this.key(p, h) : this.value(p, h), (h * t + p) * d);
        }
        return out;
    }
}
export class MtpBlock {
    c;
    w;
    vocab;
    invFreq; // [R/2] θ^(-2f/R)
    constructor(c, w) {
        this.c = c;
        this.w = w;
        this.vocab = w.embed.out;
        this.invFreq = Float64Array.from({ length: c.rotary / 2 }, (_, f) => c.theta ** (-2 * f / c.rotary));
    }
    /** Loads a model directory (mtp_model.ts). */
    static load(directory) {
        const { cfg, weights } = loadModel(directory);
        return new MtpBlock(cfg, weights);
    }
    newKv(keys = null, values = null) {
        return new RowKv(this.c.kvHeads, this.c.headDim, keys, values);
    }
    /** §1.5 step 5: rotate_half pairs (f, f + R/2) of the first R dims of x[at, at + D), in place. */
    rope(x, at, pos) {
        const half = this.c.rotary / 2;
        for (let f = 0; f < half; f++) {
            const phi = pos * this.invFreq[f], cos = Math.cos(phi), sin = Math.sin(phi);
            const a = x[at + f], b = x[at + f + half];
            x[at + f] = a * cos - b * sin;
            x[at + f + half] = a * sin + b * cos;
        }
    }
    /** §1.4 for one row: ids [S], hin [S·H] the input hiddens; appends S positions to `kv` and returns Y [S·H]. */
    forward(kv, ids, hin, route) {
        const h = this.c.hidden;
        const y = new Float64Array(ids.length * h);
        ids.forEach((id, i) => y.set(this.position(kv, id, hin.subarray(i * h, (i + 1) * h), route), i * h));
        return y;
    }
    position(kv, id, hin, route) {
        const { hidden: h, heads: nh, kvHeads: nkv, headDim: d, eps } = this.c;
        const { norms, linears: l } = this.w;
        // 1-3. normalise both inputs, embedding half first, and mix them down to H
        const u = new Float64Array(2 * h);
        u.set(rmsNorm(this.w.embed.w, norms.pre_fc_norm_embedding, eps, id * h));
        u.set(rmsNorm(hin, norms.pre_fc_norm_hidden, eps), h);
        const x = matVec(l.fc, u); // [H], the residual
        const a = rmsNorm(x, norms["layers.0.input_layernorm"], eps);
        // §1.5.1-3: query and gate interleaved per head; per-head q/k norms before RoPE; v is not normalised
        const qg = matVec(l["layers.0.self_attn.q_proj"], a); // [nH·2D]
        const k = matVec(l["layers.0.self_attn.k_proj"], a); // [nKV·D]
        const v = matVec(l["layers.0.self_attn.v_proj"], a);
        const q = new Float64Array(nh * d);
        const pos = kv.length; // §1.5.5: the row's own logical length before the append
        for (let j = 0; j < nh; j++) {
            q.set(rmsNorm(qg, norms["layers.0.self_attn.q_norm"], eps, j * 2 * d), j * d);
            this.rope(q, j * d, pos);
        }
        for (let j = 0; j < nkv; j++) {
            k.set(rmsNorm(k, norms["layers.0.self_attn.k_norm"], eps, j * d), j * d);
            this.rope(k, j * d, pos);
        }
        kv.push(k, v);
        // §1.5.7: GQA (query head j reads KV head ⌊j / (nH/nKV)⌋), positions 0 … pos, softmax after the max
        const o = new Float64Array(nh * d);
        const scores = new Float64Array(pos + 1);
        for (let j = 0; j < nh; j++) {
            const g = Math.floor(j / (nh / nkv)), qj = q.subarray(j * d, (j + 1) * d);
            let max = -Infinity;
            for (let t = 0; t <= pos; t++) {
                const kt = kv.key(t, g);
                let s = 0;
                for (let i = 0; i < d; i++)
                    s += qj[i] * kt[i];
                scores[t] = s * d ** -0.5;
                max = Math.max(max, scores[t]);
            }
            let sum = 0;
            for (let t = 0; t <= pos; t++)
                sum += (scores[t] = Math.exp(scores[t] - max));
            for (let t = 0; t <= pos; t++) {
                const vt = kv.value(t, g), p = scores[t] / sum;
                for (let i = 0; i < d; i++)
                    o[j * d + i] += p * vt[i];
            }
            // §1.5.8: the sigmoid gate, head-major like the query
            for (let i = 0; i < d; i++)
                o[j * d + i] *= sigmoid(qg[j * 2 * d + d + i]);
        }
        const r = matVec(l["layers.0.self_attn.o_proj"], o);
        // 7-10. residual, gated SiLU MLP (or §12.3's MoE), residual, the final norm
        const h1 = x.map((xi, i) => xi + r[i]);
        const n = rmsNorm(h1, norms["layers.0.post_attention_layernorm"], eps);
        const m = this.w.moe === null
            ? swiglu(n, l["layers.0.mlp.gate_proj"], l["layers.0.mlp.up_proj"], l["layers.0.mlp.down_proj"])
            : this.moe(this.w.moe, n, (experts) => route?.(pos, experts));
        return rmsNorm(h1.map((hi, i) => hi + m[i]), norms.norm, eps);
    }
    /** §12.3 for one row n [H]: the float32 router, top-k with the lower index first on ties, the chosen experts in
     * slot order, the shared expert and its sigmoid gate. */
    moe(mw, n, chose) {
        const f = Math.fround;
        const logits = Float32Array.from(matVec(mw.router, n)); // 1. rounded to f32
        const max = logits.reduce((a, b) => Math.max(a, b), -Infinity);
        const z = logits.map((l) => Math.exp(f(l - max))); // 2. difference in f32, exp in f64, to f32
        const s = z.reduce((acc, e) => f(acc + e), 0); //    summed in f32, in expert order
        const p = z.map((e) => f(e / s));
        const chosen = Array.from(p.keys()).sort((a, b) => p[b] - p[a] || a - b).slice(0, this.c.topK); // 3.
        const top = chosen.map((e) => p[e]);
        const norm = top.reduce((acc, e) => f(acc + e), 0);
        const weights = this.c.normTopkProb ? top.map((e) => f(e / norm)) : top; // 4.
        chose(chosen);
        const out = new Float64Array(n.length);
        chosen.forEach((e, j) => {
            const ye = swiglu(n, mw.gate[e], mw.up[e], mw.down[e]);
            for (let i = 0; i < out.length; i++)
                out[i] += weights[j] * ye[i];
        });
        const shared = swiglu(n, mw.sharedGate, mw.sharedUp, mw.sharedDown); // 7.
        const g = sigmoid(matVec(mw.sharedGateW, n)[0]);
        return out.map((r, i) => r + g * shared[i]); // 8.
    }
    /** §1.7: logits = head · y (no further norm), log-softmax over V, rounded to float32 for the sampler (§7). */
    logProbs(y) {
        const logits = matVec(this.w.head, y);
        const max = logits.reduce((a, b) => Math.max(a, b), -Infinity);
        const lse = max + Math.log(logits.reduce((s, l) => s + Math.exp(l - max), 0));
        return Float32Array.from(logits, (l) => l - lse);
    }
}
/** (silu(n·gateᵀ) ⊙ (n·upᵀ)) · downᵀ, silu(z) = z·σ(z). */
function swiglu(n, gate, up, down) {
    const g = matVec(gate, n), u = matVec(up, n);
    return matVec(down, g.map((gi, i) => gi * sigmoid(gi) * u[i]));
}
