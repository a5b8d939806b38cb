// The draft sampler (spec §7; conformance/SPEC.md "Random stream for seeded draft sampling"): greedy with the lowest
// index on ties, or top-p, top-k, 1/T and an inverse-CDF categorical draw whose uniform comes from Threefry-2x32-20
// under MLX's key of stepKey(seed, step), with MLX's CPU float32 exp — bit for bit the reference's draw. Float32
// arithmetic is double arithmetic rounded by Math.fround (exact for one f32 operation).
const f = Math.fround;
const M64 = (1n << 64n) - 1n;
/** Threefry-2x32 with 20 rounds on key (k0, k1) and counter (c0, c1). */
export function threefry2x32(k0, k1, c0, c1) {
    const ks = [k0 >>> 0, k1 >>> 0, (k0 ^ k1 ^ 0x1bd11bda) >>> 0];
    const rot = [[13, 15, 26, 6], [17, 29, 16, 24]];
    let x0 = (c0 + ks[0]) >>> 0, x1 = (c1 + ks[1]) >>> 0;
    for (let i = 0; i < 5; i++) {
        for (const r of rot[i % 2]) {
            x0 = (x0 + x1) >>> 0;
            x1 = ((x1 << r) | (x1 >>> (32 - r))) >>> 0;
            x1 = (x1 ^ x0) >>> 0;
        }
        x0 = (x0 + ks[(i + 1) % 3]) >>> 0;
        x1 = (x1 + ks[(i + 2) % 3] + i + 1) >>> 0;
    }
    return [x0, x1];
}
/** (seed XOR ((step + 1) · 0x9E3779B97F4A7C15)) mod 2^64, split into MLX's key (high word, low word). */
export function stepKey(seed, step) {
    const k = ((seed & M64) ^ (((step + 1n) * 0x9e3779b97f4a7c15n) & M64)) & M64;
    return [Number(k >> 32n), Number(k & 0xffffffffn)];
}
/** MLX's uniform in [0, 1) from one draw of random bits: f32(bits) / 2^32, at most the float below 1. */
export function uniform(key) {
    return Math.min(f(f(threefry2x32(key[0], key[1], 0, 0)[0]) / 4294967296), f(1 - 2 ** -24));
}
const EXP_C = [1.339887440266574e-3, 9.618437357674640e-3, 5.550332471162809e-2, 2.402264791363012e-1,
    6.931472028550421e-1, 1.0].map(f);
const pow2 = new Float32Array(1);
const pow2Bits = new Uint32Array(pow2.buffer);
/** MLX's CPU float32 exp (SPEC.md §5): 2^k · p(f) with k = round(x·log2 e); the polynomial's fma is one double
 * multiply-add rounded to f32, exact as numpy's reference does it (p·f is exact in double). */
export function mlxExp(x) {
    x = f(x); // a float32 input
    if (Number.isNaN(x))
        return NaN;
    if (x > 88)
        return Infinity;
    if (x < -88)
        return 0;
    const y = f(x * f(1.442695));
    const k = Math.floor(y + 0.5);
    const fr = f(y - f(k));
    let p = f(1.5353361883195e-4);
    for (const c of EXP_C)
        p = f(p * fr + c);
    pow2Bits[0] = Math.min(255, Math.max(0, k + 127)) << 23;
    return f(pow2[0] * p);
}
/** The lowest index of the largest value. */
export function argmax(x) {
    let best = 0;
    for (let i = 1; i < x.length; i++)
        if (x[i] > x[best])
            best = i;
    return best;
}
/** One draft token from a row's float32 log-probs [V] (spec §7). */
export function sampleRow(lp, s, step) {
    const t = s.temperature, topK = s.topK, topP = s.topP;
    if (t === 0)
        return argmax(lp);
    const v = lp.length;
    const x = Float32Array.from(lp);
    if (topP > 0 && topP < 1) { // keep tokens whose inclusive ascending cumulative probability exceeds 1 − top_p
        const order = Array.from(lp.keys()).sort((a, b) => lp[a] - lp[b] || a - b);
        const floor = f(1 - topP);
        let csum = 0;
        for (const i of order) {
            csum = f(csum + mlxExp(lp[i]));
            if (!(csum > floor))
                x[i] = -Infinity;
        }
    }
    if (topK > 0 && topK < v) { // all but the k largest (the lowest indices among equals) to −∞
        const order = Array.from(x.keys()).sort((a, b) => (x[b] - x[a]) || a - b);
        for (const i of order.slice(topK))
            x[i] = -Infinity;
    }
    const inv = f(1 / t);
    for (let i = 0; i < v; i++)
        x[i] = f(x[i] * inv);
    return inverseCdf(x, stepKey(BigInt(s.seed), step));
}
/** MLX's categorical draw by inverse CDF: exclusive float32 prefix sums of exp(x − max), one uniform times the
 * total, the last index whose prefix sum is at most it. */
function inverseCdf(x, key) {
    const m = x.reduce((a, b) => Math.max(a, b), -Infinity);
    const w = x.map((xi) => (Number.isFinite(m) ? mlxExp(f(xi - m)) : xi === m ? 1 : 0));
    const c = new Float32Array(w.length);
    for (let i = 1; i < w.length; i++)
        c[i] = f(c[i - 1] + w[i - 1]);
    const u = f(uniform(key) * f(c[c.length - 1] + w[w.length - 1]));
    let n = 0;
    while (n < c.length && c[n] <= u)
        n++;
    return n - 1;
}
